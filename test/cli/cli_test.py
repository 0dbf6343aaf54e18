#!/usr/bin/env python3
"""cloud-controller-manager from the operator's side: --help, --version, bad flags (exit 2),
provider loading failures (exit 1, one line naming the file and the cause) and
--check-config with the real fake-cloud plugin."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from abi_version import abi_text  # noqa: E402

BINARY = os.environ["CCM_BINARY"]
PLUGINS = os.environ["CCM_PLUGIN_DIR"]
KIT = os.environ["CCM_CONFORMANCE_DIR"]


def ccm(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=60)


def error_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("E")]


class CliTest(unittest.TestCase):
    def test_help_and_version(self):
        r = ccm("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--cloud-provider string", r.stdout)
        self.assertIn("--cloud-provider-plugin-dir string", r.stdout)
        self.assertIn("Leader election flags:", r.stdout)
        r = ccm("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^cloud-controller-manager v\d+\.\d+\.\d+ \(ccm; plugin ABI " +
                         re.escape(abi_text()) + r"\)")

    def test_bad_command_lines_exit_2_naming_the_flag(self):
        for args, message in [
            (["--no-such-flag"], "Error: unknown flag: --no-such-flag"),
            (["--secure-port=abc"], "invalid argument \"abc\" for \"--secure-port\" flag"),
            (["--node-monitor-period=5"], "time: invalid duration \"5\""),
            (["--cloud-provider=fake-cloud", "--controllers=bogus"],
             "\"bogus\" is not in the list of known controllers"),
            ([], "--cloud-provider cannot be empty"),
            (["positional"], "unknown command \"positional\""),
        ]:
            r = ccm(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(message, r.stderr)
            self.assertIn("Run 'cloud-controller-manager --help' for usage.", r.stderr)

    def load_failure(self, name, plugin_dir, fragment, config=None):
        args = ["--cloud-provider=" + name, "--cloud-provider-plugin-dir=" + plugin_dir]
        if config:
            args.append("--cloud-config=" + config)
        r = ccm(*args)
        self.assertEqual(r.returncode, 1, r.stderr)
        errors = error_lines(r.stderr)
        self.assertEqual(len(errors), 1, r.stderr)
        self.assertIn(fragment, errors[0])
        return errors[0]

    def test_provider_failures_are_one_line(self):
        line = self.load_failure("nope", PLUGINS, "unknown cloud provider \\\"nope\\\"")
        self.assertIn("fake-cloud", line)  # lists what the directory has
        self.load_failure("not-a-library", KIT, "not a loadable shared library")
        self.load_failure("no-entry", KIT, "does not export ccm_provider_entry_v1")
        self.load_failure("wrong-major", KIT, "it speaks plugin ABI 2.0, this host speaks ABI " + abi_text())
        self.load_failure("short-struct", KIT, "struct_size is 8 bytes")
        self.load_failure("null-slot", KIT, "ccm_plugin.create slot is NULL")
        self.load_failure("refuses-config", KIT, "auth-url is required but missing")
        line = self.load_failure("baseline", "/nonexistent/dir", "does not exist")
        self.assertIn("/nonexistent/dir", line)

    def test_missing_or_bad_cloud_config(self):
        self.load_failure("fake-cloud", PLUGINS, "cannot read --cloud-config=/no/such/file",
                          config="/no/such/file")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("instances:\n  - name: a\n    state: sleepy\n")
        try:
            line = self.load_failure("fake-cloud", PLUGINS, "instances[0].state", config=f.name)
            self.assertIn(f.name, line)
            self.assertIn("line 3", line)
        finally:
            os.unlink(f.name)

    def test_writable_plugin_is_refused(self):
        tmp = tempfile.mkdtemp()
        try:
            os.chmod(tmp, 0o755)
            so = os.path.join(tmp, "fake-cloud.so")
            shutil.copy(os.path.join(PLUGINS, "fake-cloud.so"), so)
            os.chmod(so, 0o666)
            self.load_failure("fake-cloud", tmp, "writable by everyone (mode 0666)")
        finally:
            shutil.rmtree(tmp)

    def test_check_config_reports_the_provider(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("region: demo-1\nautoInstances: {zones: [a, b]}\n")
        try:
            r = ccm("--cloud-provider=fake-cloud", "--cloud-provider-plugin-dir=" + PLUGINS,
                    "--cloud-config=" + f.name, "--check-config", "--profiling=false")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("provider fake-cloud", r.stdout)
            self.assertIn("ccm.instances/1, ccm.instances.batch/1 (max batch 500), "
                          "ccm.loadbalancer/1, ccm.routes/1", r.stdout)
            self.assertIn("configuration valid", r.stdout)
            # The start-up log names the provider, its version and capabilities...
            self.assertRegex(r.stderr, r'"Loaded cloud provider" provider="fake-cloud" '
                                       r'version="[^"]+" abi="' + re.escape(abi_text()) +
                                       r'" path="[^"]+fake-cloud.so" '
                                       r'capabilities="ccm.instances/1')
            # ...and says which set flags have no effect.
            self.assertIn("not implemented by ccm; it has no effect\" flag=\"--profiling\"",
                          r.stderr)
        finally:
            os.unlink(f.name)

    def test_json_logging(self):
        r = ccm("--cloud-provider=nope", "--cloud-provider-plugin-dir=" + PLUGINS,
                "--logging-format=json")
        self.assertEqual(r.returncode, 1)
        import json
        lines = [json.loads(l) for l in r.stderr.splitlines()]
        self.assertTrue(any(l.get("level") == "error" and "unknown cloud provider" in l["err"]
                            for l in lines))


if __name__ == "__main__":
    unittest.main(verbosity=2)
