#!/usr/bin/env python3
"""ccm-provider-check over the plugins we have: fake-cloud, the SDK's C example and the Rust
example pass every contract (exit 0); every plugin of the conformance kit that breaks the ABI
gets exit 1 and a FAIL line carrying the reason in the table below; usage errors exit 2.

The plugins run through the tool in parallel (a few at a time); nothing here depends on how
fast the build is: the kit's slow plugins get a short --timeout, and every run is bounded."""

import concurrent.futures
import os
import shutil
import subprocess
import tempfile
import unittest

TOOL = os.environ["CCM_PROVIDER_CHECK"]
KIT = os.environ["CCM_CONFORMANCE_DIR"]
EXAMPLES = os.environ["CCM_EXAMPLE_DIR"]
PLUGINS = os.environ["CCM_PLUGIN_DIR"]
SOURCE = os.environ["CCM_SOURCE_DIR"]
RUST_DIR = os.environ.get("CCM_RUST_PLUGIN_DIR", "")

# The kit plugin -> a piece of the first FAIL line (exit 1). The crash rows name the call: the
# signal differs under AddressSanitizer (which reports and exits instead), the call does not.
BROKEN = {
    "aborts": "crashed (SIGABRT) in ccm.instances/1 instance_metadata",
    "bad-domain": "malformed ccm_plugin.annotation_domain",
    "bad-namespace": "malformed ccm_plugin.metric_namespace",
    "bad-prefix": "malformed ccm_plugin.provider_id_prefix",
    "bad-existence": "instance_exists wrote existence 7, which is not one of",
    "bad-metric": "the host counted a contract violation (bad_metric)",
    "bad-version": "has a control character",
    "wrong-output": "the host counted a contract violation (unexpected_output)",
    "crashes": "in ccm.instances/1 instance_metadata",
    "entry-v2": "it was built for plugin ABI 2",
    "hangs": "instance_metadata did not return within its 1s deadline; abandoned",
    "hangs-in-create": "create did not return within the start-up deadline of 1s",
    "hangs-in-entry": "ccm_provider_entry_v1 did not return within the start-up deadline of 1s",
    "long-version": "its version is 1048576 bytes long (at most 64)",
    "malformed": "addresses[0].type \"Bogus\" is not one of",
    "minor-too-new": "it chose ABI minor 5 but this host offers at most",
    "no-capability": "provides no capability",
    "no-entry": "it does not export ccm_provider_entry_v1",
    "no-status": "without a load balancer status",
    "noisy": "refused its configuration",
    "not-a-library": "not a loadable shared library",
    "null-arrays": "addresses is NULL with address_count 3",
    "null-cap-slot": "has its required slot instance_metadata set to NULL",
    "null-data": "provider_id has data NULL with size 12",
    "null-slot": "its required ccm_plugin.create slot is NULL",
    "null-table": "returned OK but no ccm_plugin table",
    "overflows": "in ccm.instances/1 instance_metadata",
    "refuses-config": "[Global] auth-url is required but missing",
    "refuses-negotiation": "the plugin refused to load",
    "short-struct": "struct_size is 8 bytes",
    "stray-thread": "emitted output for a call that had already returned",
    "throws-raw": "threw an exception across the plugin ABI",
    "unknown-status": "unknown status code 777",
    # Its metadata is outside its own declared prefix.
    "out-of-prefix": "providerID \"other://vm-1\" does not start with the provider's declared "
                     "prefix \"kit://\"",
    "wrong-major": "it speaks plugin ABI 2.0",
    "wrong-name": "it calls itself \"somebody-else\" but was loaded as \"wrong-name\"",
}
# Kit plugins that keep the contract: what they do is allowed (no metadata yet, an empty
# providerID, 1.1 declarations a 1.0 host ignores, an exception the SDK turns into INTERNAL).
# crashes-while-marked crashes only while its marker file exists (the isolation tests set it):
# without one it is sound.
SOUND = ["baseline", "crashes-while-marked", "minor0-declares", "no-metadata", "no-provider-id",
         "throws-sdk", "v11"]

CONTRACT_GROUPS = ["load", "create", "ccm.instances/1 instance_metadata (253-byte name)",
                   "ccm.instances.batch/1 instance_metadata_batch (10000 nodes)",
                   "ccm.loadbalancer/1 ensure_load_balancer (dual-stack)",
                   "ccm.routes/1 create_route (IPv6)", "concurrent", "cancel (", "deadline (",
                   "reconfigure (the same configuration)"]


def check(plugin, config, *extra, timeout="1s"):
    result = subprocess.run([TOOL, "--plugin=" + plugin, "--cloud-config=" + config,
                             "--timeout=" + timeout, *extra],
                            capture_output=True, text=True, timeout=600)
    return result


class ProviderCheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ccm-provider-check-")
        cls.empty = os.path.join(cls.tmp, "empty.yaml")
        with open(cls.empty, "w") as f:
            f.write("{}\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assertAllPass(self, result, contracts=()):
        lines = result.stdout.splitlines()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertTrue(lines[-1].startswith("PASS "), lines[-1])
        for line in lines[:-1]:
            self.assertTrue(line.startswith("PASS contract "), line)
        for contract in contracts:
            self.assertTrue(any(contract in line for line in lines), contract)

    def test_fake_cloud_passes_every_contract(self):
        result = check(os.path.join(PLUGINS, "fake-cloud.so"), self.empty, timeout="30s")
        self.assertAllPass(result, CONTRACT_GROUPS)
        # What the in-memory cloud answers is reported, not judged.
        self.assertIn("NOT_FOUND (a valid answer", result.stdout)

    def test_c_example_passes(self):
        result = check(os.path.join(EXAMPLES, "minimal.so"),
                       os.path.join(SOURCE, "plugin-sdk", "examples", "minimal-c",
                                    "machines.txt"), timeout="30s")
        self.assertAllPass(result, ["load", "create", "ccm.instances/1 instance_exists",
                                    "cancel (", "deadline ("])

    def test_rust_example_passes(self):
        so = os.path.join(RUST_DIR, "rust-example.so") if RUST_DIR else ""
        if not so or not os.path.exists(so):
            self.skipTest("the Rust example is not built (no cargo)")
        # It reads the same machine list as the C example.
        result = check(so, os.path.join(SOURCE, "plugin-sdk", "examples", "minimal-c",
                                        "machines.txt"), timeout="30s")
        self.assertAllPass(result, ["load", "create", "cancel (", "deadline ("])

    def run_kit(self, names):
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            futures = {name: pool.submit(check, os.path.join(KIT, name + ".so"), self.empty)
                       for name in names}
            return {name: f.result() for name, f in futures.items()}

    def test_every_broken_kit_plugin_fails_with_its_reason(self):
        results = self.run_kit(sorted(BROKEN))
        for name, reason in sorted(BROKEN.items()):
            with self.subTest(plugin=name):
                result = results[name]
                self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
                fails = [line for line in result.stdout.splitlines()
                         if line.startswith("FAIL contract ")]
                self.assertTrue(fails, result.stdout)
                self.assertIn(reason, fails[0])
                if name in ("crashes", "overflows"):
                    self.assertIn("crashed", fails[0])
                self.assertEqual(result.stdout.splitlines()[-1],
                                 "FAIL " + os.path.join(KIT, name + ".so"))

    def test_sound_kit_plugins_pass(self):
        results = self.run_kit(SOUND)
        for name in SOUND:
            with self.subTest(plugin=name):
                self.assertAllPass(results[name], ["load", "create", "cancel ("])

    def test_the_kit_covers_every_plugin_it_builds(self):
        built = {f[:-3] for f in os.listdir(KIT) if f.endswith(".so")}
        self.assertEqual(built, set(BROKEN) | set(SOUND))

    def test_name_loads_the_file_as_another_provider(self):
        # wrong-name.so calls itself "somebody-else": under that name it is sound.
        result = check(os.path.join(KIT, "wrong-name.so"), self.empty, "--name=somebody-else")
        self.assertAllPass(result, ["load", "create"])

    def test_usage_errors_exit_2(self):
        fake = os.path.join(PLUGINS, "fake-cloud.so")
        cases = [
            ([], "--plugin=PATH.so is required"),
            (["--plugin=" + fake], "--cloud-config=FILE is required"),
            (["--plugin=" + fake, "--cloud-config=" + self.empty, "--timeout=soon"],
             "--timeout=soon: not a positive duration"),
            (["--plugin=" + fake, "--cloud-config=" + self.empty, "--bogus"],
             "unknown argument \"--bogus\""),
            (["--plugin=/nonexistent/x.so", "--cloud-config=" + self.empty], "no such file"),
            (["--plugin=" + fake, "--cloud-config=/nonexistent/cloud.yaml"],
             "cannot read the file"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                result = subprocess.run([TOOL, *args], capture_output=True, text=True,
                                        timeout=60)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(message, result.stderr)
                self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
