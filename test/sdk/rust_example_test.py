#!/usr/bin/env python3
"""The Rust example provider (plugin-sdk/rust/example-provider), built by cargo and loaded by
the real host: --check-config accepts it and reports its refusals, it initialises nodes
against kubesim, and a panic inside one of its calls is an INTERNAL error with the panic's
message in the host's log while the host and the other nodes carry on.

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


if __name__ == "__main__":
    unittest.main()
