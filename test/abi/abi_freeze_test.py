#!/usr/bin/env python3
"""The ABI freeze catches every change the rules forbid and takes every append they allow.

Each case edits a scratch copy of ccm/provider_abi.h and runs test/abi/abi_freeze.py on it
with a scratch copy of the freeze: a swap of two slots of one signature, a resize, a retype of
the same size, a removal, a changed constant, a field slipped into padding, an append without
--update (refused, with the hint) and with it (accepted, and the generated test compiles).
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "abi_freeze.py")
HEADER = os.path.join(HERE, "..", "..", "plugin-sdk", "include", "ccm", "provider_abi.h")
FREEZE = os.path.join(HERE, "abi_freeze.txt")
FROZEN_1_0 = os.path.join(HERE, "frozen", "1.0", "ccm", "provider_abi.h")
# sha256 of the header as ABI 1.0 was released (commit 436b310): the copy is never edited.
FROZEN_1_0_SHA256 = "747dd53a8ddb095617d33c4bb95082a89bb1803a9234bd3988c9c363183ef658"


class FreezeTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ccm-freeze-")
        os.makedirs(os.path.join(self.tmp, "include", "ccm"))
        self.header = os.path.join(self.tmp, "include", "ccm", "provider_abi.h")
        self.freeze = os.path.join(self.tmp, "abi_freeze.txt")
        shutil.copy(HEADER, self.header)
        shutil.copy(FREEZE, self.freeze)
        with open(HEADER, encoding="utf-8") as f:
            self.text = f.read()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def tool(self, *args):
        return subprocess.run([sys.executable, SCRIPT, "--header", self.header,
                               "--freeze", self.freeze] + list(args),
                              capture_output=True, text=True)

    def edit(self, old, new, count=1):
        self.assertEqual(self.text.count(old), count, "the header no longer has %r" % old)
        self.text = self.text.replace(old, new)
        with open(self.header, "w", encoding="utf-8") as f:
            f.write(self.text)

    def assertRefused(self, *needles):
        result = self.tool("--check")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        return result.stderr

    def test_the_committed_header_matches(self):
        result = self.tool("--check")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("matches the freeze", result.stdout)

    def test_the_frozen_1_0_header_is_the_released_one(self):
        with open(FROZEN_1_0, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), FROZEN_1_0_SHA256,
                             "test/abi/frozen/1.0 must stay byte for byte the 1.0 header")

    def test_the_frozen_1_0_header_matches_its_part_of_the_freeze(self):
        # Older minors are compiled against the same generated test: entries newer than the
        # header's minor are left out, sizes are checked at that minor.
        out = os.path.join(self.tmp, "gen.c")
        self.assertEqual(self.tool("--generate", out).returncode, 0)
        include = os.path.dirname(os.path.dirname(FROZEN_1_0))
        for compiler, std in (("cc", "-std=c11"), ("c++", "-std=c++20")):
            exe = os.path.join(self.tmp, "gen-" + compiler)
            build = subprocess.run([compiler, "-x", "c" if compiler == "cc" else "c++", std,
                                    "-pedantic", "-Wall", "-Wextra", "-Werror", "-I", include,
                                    out, "-o", exe], capture_output=True, text=True)
            self.assertEqual(build.returncode, 0, build.stderr)
            self.assertEqual(subprocess.run([exe]).returncode, 0)

    def test_swapping_two_slots_of_one_signature_is_caught(self):
        self.edit("  ccm_status (*ensure_load_balancer)(", "  ccm_status (*swap_tmp)(")
        self.edit("  ccm_status (*update_load_balancer)(", "  ccm_status (*ensure_load_balancer)(")
        self.edit("  ccm_status (*swap_tmp)(", "  ccm_status (*update_load_balancer)(")
        self.assertRefused("ccm_loadbalancer_v1.ensure_load_balancer (since 1.0) moved",
                           "ccm_loadbalancer_v1.update_load_balancer (since 1.0) moved")

    def test_a_resized_field_is_caught(self):
        self.edit("  int32_t port;       /* since 1.0 */", "  int64_t port;       /* since 1.0 */")
        self.assertRefused("ccm_port_status.port (since 1.0) moved or changed size")

    def test_a_retyped_field_of_the_same_size_is_caught_by_the_compiler(self):
        self.edit("  uint32_t max_batch_size;", "  int32_t max_batch_size;")
        self.assertRefused("ccm_instances_batch_v1.max_batch_size (since 1.0) changed type")

    def test_a_retyped_slot_is_caught_by_the_compiler(self):
        self.edit("bool (*emit_string)(ccm_host_handle host, uint64_t call_id, ccm_str value);",
                  "bool (*emit_string)(ccm_host_handle host, uint64_t call_id, ccm_kv value);")
        self.assertRefused("ccm_host_services.emit_string (since 1.0) changed type")

    def test_a_removed_field_is_caught(self):
        self.edit("  ccm_str metric_namespace;\n", "")
        self.assertRefused("ccm_plugin.metric_namespace (since 1.1) was removed")

    def test_a_changed_constant_is_caught(self):
        self.edit("#define CCM_STATUS_NOT_FOUND 5\n", "#define CCM_STATUS_NOT_FOUND 55\n")
        self.assertRefused("constant CCM_STATUS_NOT_FOUND changed from 5 to 55")

    def test_a_changed_capability_id_is_caught(self):
        self.edit('#define CCM_CAP_ROUTES "ccm.routes/1"', '#define CCM_CAP_ROUTES "ccm.routes/2"')
        self.assertRefused('constant CCM_CAP_ROUTES changed from "ccm.routes/1" to '
                           '"ccm.routes/2"')

    def test_an_append_needs_the_freeze_updated_and_update_takes_it(self):
        self.edit("#define CCM_ABI_MINOR 1\n", "#define CCM_ABI_MINOR 2\n")
        self.edit("  ccm_str metric_namespace;\n",
                  "  ccm_str metric_namespace;\n  /* since 1.2 */\n  uint64_t new_flags;\n")
        stderr = self.assertRefused("ccm_plugin.new_flags is not in the freeze",
                                    "CCM_ABI_MINOR is 2 but the freeze ends at minor 1",
                                    "abi_freeze.py --update")
        self.assertNotIn("moved", stderr)
        update = self.tool("--update")
        self.assertEqual(update.returncode, 0, update.stderr)
        with open(self.freeze, encoding="utf-8") as f:
            frozen = f.read()
        self.assertIn("field 1.2 ccm_plugin.new_flags 128 8 uint64_t\n", frozen)
        self.assertIn("struct 1.0 ccm_plugin 1.0=72,1.1=128,1.2=136\n", frozen)
        self.assertIn("abi 1 0,1,2\n", frozen)
        check = self.tool("--check")
        self.assertEqual(check.returncode, 0, check.stderr)

    def test_update_refuses_a_field_slipped_into_padding(self):
        self.edit("  bool enable_node_addresses;  ",
                  "  bool enable_node_addresses;  bool sneaky;  ")
        update = self.tool("--update")
        self.assertEqual(update.returncode, 1)
        self.assertIn("ccm_route.sneaky lies at offset 58, inside the struct's frozen size 80",
                      update.stderr)

    def test_update_refuses_to_freeze_a_change(self):
        self.edit("#define CCM_LOG_DEBUG 3\n", "#define CCM_LOG_DEBUG 4\n")
        update = self.tool("--update")
        self.assertEqual(update.returncode, 1)
        self.assertIn("changes what is frozen", update.stderr)
        self.assertIn("constant CCM_LOG_DEBUG changed from 3 to 4", update.stderr)

    def test_a_minor_going_back_is_caught(self):
        self.edit("#define CCM_ABI_MINOR 1\n", "#define CCM_ABI_MINOR 0\n")
        self.assertRefused("CCM_ABI_MINOR went back from 1 to 0")


if __name__ == "__main__":
    unittest.main(verbosity=2)
