#!/usr/bin/env python3
"""The Rust example provider (plugin-sdk/rust/example-provider), built by cargo and loaded by
the real host: --check-config accepts it and reports its refusals, it initialises nodes
against kubesim, a changed --cloud-config reaches it through the host's reconfigure (a broken
one is refused with the line named, the old settings kept), and a panic inside one of its
calls is an INTERNAL error with the panic's message in the host's log while the host and the
other nodes carry on.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR, CCM_RUST_PLUGIN_DIR (the folder
holding rust-example.so)."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from harness import BUILD, Cluster, is_initialized, labels, wait_for  # noqa: E402
from abi_version import abi_text  # noqa: E402
from secret_volume import SecretVolume  # noqa: E402

PLUGIN_DIR = os.environ["CCM_RUST_PLUGIN_DIR"]
BINARY = os.path.join(BUILD, "host", "cloud-controller-manager")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


class RustExampleTest(unittest.TestCase):

    def check_config(self, path):
        return subprocess.run([BINARY, "--cloud-provider=rust-example",
                               "--cloud-provider-plugin-dir=" + PLUGIN_DIR,
                               "--cloud-config=" + path, "--check-config"],
                              capture_output=True, text=True, timeout=60)

    def test_check_config_loads_the_plugin_and_reports_a_bad_line(self):
        with tempfile.TemporaryDirectory(prefix="ccm-rust-") as tmp:
            good = write(os.path.join(tmp, "good.conf"),
                         "# two machines\nregion r-1\nnode-a zone-1 small 10.0.0.1\n"
                         "node-b zone-2 big 10.0.0.2 shutdown\n")
            out = self.check_config(good)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("provider rust-example 0.1.0 (ABI %s)" % abi_text(), out.stdout)
            self.assertIn("rust-example provider ready", out.stderr)
            # Its structured fields (log_fields), however the host prints them.
            self.assertRegex(out.stderr, r'machines=\\*"2\\*"')
            # The panic hook and the SDK never write to stderr themselves: every line there
            # is the host's logger.
            self.assertNotIn("thread '", out.stderr)
            bad = write(os.path.join(tmp, "bad.conf"),
                        "node-a zone-1 small 10.0.0.1\nnode-b zone-2 big not-an-ip\n")
            out = self.check_config(bad)
            self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
            # The provider's message, as the host quotes it.
            self.assertRegex(out.stdout + out.stderr,
                             r'refused its configuration.*line 2: \\*"not-an-ip\\*" is not an IP')

    def test_nodes_are_initialised_and_a_panic_is_an_internal_error(self):
        with Cluster() as c:
            names = c.add_nodes(names=["rust-a", "rust-b", "rust-boom"])
            self.assertEqual(sorted(names), ["rust-a", "rust-b", "rust-boom"])
            conf = write(os.path.join(c.tmp, "machines.conf"),
                         "region rust-region\n"
                         "rust-a zone-1 small 10.1.0.1\n"
                         "rust-b zone-2 large 10.1.0.2\n"
                         "rust-boom zone-1 small 10.1.0.3\n"
                         "panic rust-boom\n")
            ccm = c.start_ccm(conf, provider="rust-example", plugin_dir=PLUGIN_DIR)

            def initialised():
                nodes = {n["metadata"]["name"]: n for n in c.nodes()}
                return all(is_initialized(nodes[n]) for n in ("rust-a", "rust-b")) and nodes

            nodes = wait_for(initialised, "rust-a and rust-b initialised", timeout=120)
            a = nodes["rust-a"]
            self.assertEqual(a["spec"]["providerID"], "rust-example://rust-a")
            self.assertEqual(labels(a)["topology.kubernetes.io/zone"], "zone-1")
            self.assertEqual(labels(a)["topology.kubernetes.io/region"], "rust-region")
            self.assertEqual(labels(a)["node.kubernetes.io/instance-type"], "small")
            self.assertIn({"type": "InternalIP", "address": "10.1.0.1"},
                          a["status"]["addresses"])
            self.assertEqual(labels(nodes["rust-b"])["node.kubernetes.io/instance-type"], "large")

            # The panicking node: its call answered INTERNAL with the panic's message, the
            # panic report in the host's log, the node left tainted, the host alive.
            wait_for(lambda: "panic in instance_metadata: rust-example was told to panic for "
                             "node rust-boom" in ccm.output(),
                     "the INTERNAL error with the panic message in the host's log", timeout=120)
            out = ccm.output()
            self.assertIn("provider panicked: rust-example was told to panic for node rust-boom",
                          out)
            self.assertIn("INTERNAL", out)
            self.assertNotIn("thread '", out)  # Rust's default hook would have written this
            self.assertFalse(is_initialized(c.node("rust-boom")))
            self.assertTrue(ccm.alive())
            self.assertEqual(ccm.stop(), 0)

    def test_a_changed_config_reaches_the_provider_through_the_host(self):
        region = "topology.kubernetes.io/region"
        with Cluster() as c:
            c.add_nodes(names=["rust-a"])
            vol = SecretVolume(c.tmp)
            vol.publish("region before\nrust-a zone-1 small 10.2.0.1\n")
            ccm = c.start_ccm(vol.path, provider="rust-example", plugin_dir=PLUGIN_DIR,
                              extra=["--cloud-config-reload-period=100ms"])
            wait_for(lambda: is_initialized(c.node("rust-a")), "rust-a initialised",
                     timeout=120)
            self.assertEqual(labels(c.node("rust-a"))[region], "before")

            # A new region and machines the first file did not know: the provider's own line
            # says it took the new file, and a node joining after it gets the new settings.
            vol.publish("region after\nrust-a zone-1 small 10.2.0.1\n"
                        "rust-c zone-3 large 10.2.0.3\nrust-d zone-4 small 10.2.0.4\n")
            wait_for(lambda: "rust-example reconfigured with 3 machines" in ccm.output(),
                     "the provider's reconfigure", timeout=120)
            wait_for(lambda: "Provider reconfigured from the changed cloud config" in
                     ccm.output(), "the host's line", timeout=60)
            c.add_nodes(names=["rust-c"])
            wait_for(lambda: is_initialized(c.node("rust-c")), "rust-c initialised",
                     timeout=120)
            self.assertEqual(labels(c.node("rust-c"))[region], "after")
            self.assertEqual(labels(c.node("rust-c"))["node.kubernetes.io/instance-type"],
                             "large")

            # A broken file (line 3): the provider's refusal names the line, and nothing of
            # it is used: a node joining afterwards gets the settings of the file before.
            vol.publish("region broken\nrust-d zone-9 huge 10.2.0.9\n"
                        "rust-a zone-1 small not-an-ip\n")
            wait_for(lambda: "Provider refused the changed cloud config" in ccm.output(),
                     "the refusal", timeout=120)
            refusal = next(line for line in ccm.output().splitlines()
                           if "Provider refused the changed cloud config" in line)
            self.assertRegex(refusal, r'line 3: \\*"not-an-ip\\*" is not an IP')
            c.add_nodes(names=["rust-d"])
            wait_for(lambda: is_initialized(c.node("rust-d")), "rust-d initialised",
                     timeout=120)
            self.assertEqual(labels(c.node("rust-d"))[region], "after")
            self.assertEqual(labels(c.node("rust-d"))["topology.kubernetes.io/zone"], "zone-4")
            self.assertTrue(ccm.alive())
            self.assertEqual(ccm.stop(), 0)


if __name__ == "__main__":
    unittest.main()
