#!/usr/bin/env python3
"""The plugin ABI version is written in one place, ccm/provider_abi.h (CCM_ABI_MAJOR and
CCM_ABI_MINOR); the build, the SDK's pkg-config and CMake files, the host and the tests read it
from there. This test walks the source tree for every other way a file can state the current
ABI version -- a log or metric sample (abi="1.0"), --check-config's "(ABI 1.0)", a host
message "this host speaks ABI 1.0", a "currently 1.0" next to the ABI, a second #define, a
constant mirroring it in another language (Rust's `const CCM_ABI_MINOR: u32`), a hard-coded
version in the CMake/pkg-config templates, a find_package() asking for a newer minor -- and
fails on any that disagrees with the header, naming the file and line.

Frozen copies of older headers (test/abi/frozen/) and the freeze file state old versions on
purpose and are skipped.
"""
import os
import re
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from abi_version import abi_version  # noqa: E402

SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HEADER = os.path.join("plugin-sdk", "include", "ccm", "provider_abi.h")
SKIP_DIRS = {".git", "node_modules", "__pycache__", "subprojects"}
SKIP_PATHS = {os.path.join("test", "abi", "frozen"), os.path.join("test", "abi", "abi_freeze.txt"),
              # Its cases edit a scratch header to other minors on purpose.
              os.path.join("test", "abi", "abi_freeze_test.py"),
              # Its cases are lines with wrong versions on purpose.
              os.path.join("test", "abi", "abi_version_test.py")}
TEXT_EXTENSIONS = {".md", ".c", ".h", ".cpp", ".hpp", ".py", ".txt", ".in", ".cmake", ".build",
                   ".map", ".sh", ".yaml", ".yml", ".json", ".toml", ".rs", ""}

# Each pattern states the current ABI version as major.minor (groups 1 and 2).
CURRENT = [
    (re.compile(r'(?:\b|_)abi="(\d+)\.(\d+)"'), "a log or metric sample's abi label"),
    (re.compile(r"\(ABI (\d+)\.(\d+)\)"), "--check-config's \"(ABI M.N)\""),
    (re.compile(r"this host speaks (?:plugin )?ABI (\d+)\.(\d+)"), "the host's ABI in a message"),
    (re.compile(r"(?:ABI|CCM_ABI_MINOR)\b.*\bcurrently (\d+)\.(\d+)"), "\"currently M.N\""),
]
DEFINE = re.compile(r"^\s*#\s*define\s+CCM_ABI_(MAJOR|MINOR)\s+(\d+)")
# A mirror in another language (Rust: `pub const CCM_ABI_MINOR: u32 = 1;`) must agree.
MIRROR = re.compile(r"\bconst\s+CCM_ABI_(MAJOR|MINOR)\b\s*(?::\s*\w+)?\s*=\s*(\d+)")
TEMPLATE_VERSION = re.compile(r'PACKAGE_VERSION\s+"\d|^Version:\s*\d')
FIND_PACKAGE = re.compile(r"find_package\(\s*ccm-plugin-sdk\s+(\d+)\.(\d+)")


def problems_in(root, version):
    """Every line under root that states an ABI version other than `version`."""
    major, minor = version
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith("build") and
                             os.path.normpath(os.path.join(rel_dir, d)) not in SKIP_PATHS)
        for name in sorted(filenames):
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel in SKIP_PATHS or os.path.splitext(name)[1] not in TEXT_EXTENSIONS:
                continue
            path = os.path.join(root, rel)
            if os.path.getsize(path) > 4 << 20:
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(lines, 1):
                where = "%s:%d" % (rel, number)
                for pattern, what in CURRENT:
                    for m in pattern.finditer(line):
                        stated = (int(m.group(1)), int(m.group(2)))
                        if stated != version:
                            found.append("%s: %s says %d.%d, the header says %d.%d" %
                                         (where, what, stated[0], stated[1], major, minor))
                m = MIRROR.search(line)
                if m and int(m.group(2)) != (major if m.group(1) == "MAJOR" else minor):
                    found.append("%s: CCM_ABI_%s mirrors the header as %s, the header says %d" %
                                 (where, m.group(1), m.group(2),
                                  major if m.group(1) == "MAJOR" else minor))
                m = DEFINE.match(line)
                if m and rel != HEADER:
                    found.append("%s: CCM_ABI_%s is defined again (only %s may define it)" %
                                 (where, m.group(1), HEADER))
                if rel.endswith(".in") and TEMPLATE_VERSION.search(line):
                    found.append("%s: a hard-coded version in a template (use the value the "
                                 "build reads from the header)" % where)
                m = FIND_PACKAGE.search(line)
                if m and (int(m.group(1)) != major or int(m.group(2)) > minor):
                    found.append("%s: find_package asks for SDK %s.%s, which the header "
                                 "(%d.%d) cannot satisfy" % (where, m.group(1), m.group(2),
                                                            major, minor))
    return found


class AbiVersionTest(unittest.TestCase):

    def test_no_file_states_another_version(self):
        problems = problems_in(SOURCE, abi_version())
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_the_scan_finds_each_kind_of_stale_statement(self):
        with tempfile.TemporaryDirectory(prefix="ccm-abi-version-") as root:
            os.makedirs(os.path.join(root, "docs"))
            os.makedirs(os.path.join(root, "cmake"))
            with open(os.path.join(root, "docs", "guide.md"), "w") as f:
                f.write('"Loaded cloud provider" abi="1.0" path="x"\n'
                        "provider minimal 1.0.0 (ABI 1.0) from /x\n"
                        "refused: this host speaks ABI 1.0\n"
                        "The ABI has a minor version (`CCM_ABI_MINOR`, currently 1.0).\n"
                        "find_package(ccm-plugin-sdk 1.7 REQUIRED)\n"
                        "find_package(ccm-plugin-sdk 1.0 REQUIRED)\n"
                        'fine: provider_abi="1.1" (ABI 1.1)\n')
            with open(os.path.join(root, "cmake", "version.cmake.in"), "w") as f:
                f.write('set(PACKAGE_VERSION "1.1")\nset(PACKAGE_VERSION "@CCM_VERSION@")\n')
            with open(os.path.join(root, "copy.h"), "w") as f:
                f.write("#define CCM_ABI_MINOR 1\n")
            with open(os.path.join(root, "abi.rs"), "w") as f:
                f.write("pub const CCM_ABI_MAJOR: u32 = 1;\npub const CCM_ABI_MINOR: u32 = 0;\n")
            found = problems_in(root, (1, 1))
        self.assertEqual(len(found), 8, "\n".join(found))
        for needle in ("docs/guide.md:1: a log or metric sample's abi label says 1.0",
                       "docs/guide.md:2: --check-config", "docs/guide.md:3:",
                       "docs/guide.md:4: \"currently M.N\" says 1.0",
                       "docs/guide.md:5: find_package asks for SDK 1.7",
                       "cmake/version.cmake.in:1: a hard-coded version",
                       "copy.h:1: CCM_ABI_MINOR is defined again",
                       "abi.rs:2: CCM_ABI_MINOR mirrors the header as 0, the header says 1"):
            self.assertTrue(any(needle in p for p in found), needle + " in " + "\n".join(found))


if __name__ == "__main__":
    unittest.main(verbosity=2)
