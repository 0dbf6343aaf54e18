#!/usr/bin/env python3
"""The SDK and the documented examples compile warning-free whatever CCM_ABI_MINOR is.

With CCM_ABI_MINOR 0, `host->abi_minor < CCM_ABI_MINOR` compares an unsigned value with 0,
which -Wextra's -Wtype-limits reports and -Werror makes fatal. The header's
ccm_abi_negotiated_minor() is how negotiation is written instead. This test copies the SDK's
headers with the minor set to 0, to the current minor and to a later one, and builds the C
example (strict C11) and a C++ provider using provider.hpp and fake_host.hpp (C++20) with
-Wall -Wextra -Wtype-limits -Werror against each; it also shows the in-place comparison does
fail at minor 0, so the check cannot pass for want of the warning.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from abi_version import abi_version  # noqa: E402

SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
INCLUDE = os.path.join(SOURCE, "plugin-sdk", "include")
C_EXAMPLE = os.path.join(SOURCE, "plugin-sdk", "examples", "minimal-c", "minimal.c")
CPP_EXAMPLE = os.path.join(SOURCE, "test", "sdk", "cpp-consumer", "tiny.cpp")
WARNINGS = ["-Wall", "-Wextra", "-Wtype-limits", "-Werror"]


class AnyMinorTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ccm-any-minor-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sdk_with_minor(self, minor):
        root = os.path.join(self.tmp, "minor-%d" % minor)
        shutil.copytree(INCLUDE, root)
        header = os.path.join(root, "ccm", "provider_abi.h")
        with open(header, encoding="utf-8") as f:
            text = f.read()
        text, n = re.subn(r"^#define CCM_ABI_MINOR \d+$", "#define CCM_ABI_MINOR %d" % minor,
                          text, flags=re.M)
        self.assertEqual(n, 1)
        with open(header, "w", encoding="utf-8") as f:
            f.write(text)
        return root

    def build(self, compiler, std, include, source):
        return subprocess.run([compiler, std, "-pedantic"] + WARNINGS +
                              ["-I", include, "-c", source, "-o", os.devnull],
                              capture_output=True, text=True)

    def test_examples_build_warning_free_at_every_minor(self):
        current = abi_version()[1]
        for minor in sorted({0, current, current + 1}):
            include = self.sdk_with_minor(minor)
            with self.subTest(minor=minor):
                c = self.build("cc", "-std=c11", include, C_EXAMPLE)
                self.assertEqual(c.returncode, 0, c.stderr)
                cpp = self.build("c++", "-std=c++20", include, CPP_EXAMPLE)
                self.assertEqual(cpp.returncode, 0, cpp.stderr)

    def test_the_in_place_comparison_trips_type_limits_at_minor_0(self):
        include = self.sdk_with_minor(0)
        probe = os.path.join(self.tmp, "probe.c")
        with open(probe, "w") as f:
            f.write("#include <ccm/provider_abi.h>\n"
                    "uint32_t in_place(const ccm_host_info* info) {\n"
                    "  return info->abi_minor < CCM_ABI_MINOR ? info->abi_minor : CCM_ABI_MINOR;\n"
                    "}\n"
                    "uint32_t helper(const ccm_host_info* info) {\n"
                    "  return ccm_abi_negotiated_minor(info->abi_minor, CCM_ABI_MINOR);\n"
                    "}\n")
        result = self.build("cc", "-std=c11", include, probe)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("type-limits", result.stderr)
        self.assertIn("probe.c:3:", result.stderr)
        self.assertNotIn("probe.c:6:", result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
