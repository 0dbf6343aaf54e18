#!/usr/bin/env python3
"""Credential rotation without a restart, as an operator sees it: cloud-controller-manager
against kubesim, its --cloud-config laid out as a mounted Secret (the kubelet swaps a ..data
symlink), the real fake-cloud.so behind it. A changed file reaches the provider and new nodes
get the new settings; a broken file is refused with the key named and the old settings keep
working; a 1.0 plugin without the reconfigure slot logs, once, that the change waits for a
restart."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from harness import BUILD, Cluster, free_port, https_get, is_initialized, labels, wait_for  # noqa: E402
from secret_volume import SecretVolume  # noqa: E402

REGION = "topology.kubernetes.io/region"


def metric(c, port, name, **lbls):
    """The value of one sample on /metrics (None when absent)."""
    token = c.admin("POST", "/credentials", {"user": "metrics-reader",
                                             "groups": ["system:masters"], "type": "token"})["token"]
    status, body = https_get("https://127.0.0.1:%d/metrics" % port, token=token)
    if status != 200:
        raise AssertionError("GET /metrics: %d %s" % (status, body[:300]))
    want = ",".join('%s="%s"' % kv for kv in sorted(lbls.items()))
    for line in body.splitlines():
        m = re.match(r'^%s\{([^}]*)\} (\S+)$' % re.escape(name), line)
        if m and ",".join(sorted(m.group(1).split(","))) == want:
            return float(m.group(2))
    return None


def serving(port):
    return ["--secure-port=%d" % port, "--bind-address=127.0.0.1",
            "--cloud-config-reload-period=100ms"]


class ReconfigureTest(unittest.TestCase):

    def test_changed_config_applies_and_broken_config_is_refused(self):
        with Cluster(nodes=1) as c:
            vol = SecretVolume(c.tmp)
            vol.publish({"region": "r1", "autoInstances": {"zones": ["z"]}})
            port = free_port()
            p = c.start_ccm(vol.path, extra=serving(port))
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            self.assertEqual(labels(c.nodes()[0])[REGION], "r1")

            vol.publish({"region": "r2", "autoInstances": {"zones": ["z"]}})
            wait_for(lambda: '"Provider reconfigured from the changed cloud config"' in
                     p.output(), "the reconfigure")
            second = c.add_nodes(count=1)[0]
            wait_for(lambda: is_initialized(c.node(second)), "the second node")
            self.assertEqual(labels(c.node(second))[REGION], "r2")

            # A typo in the new file: refused, the key named, the old settings kept.
            vol.publish({"regoin": "r3", "autoInstances": {"zones": ["z"]}})
            wait_for(lambda: "Provider refused the changed cloud config" in p.output(),
                     "the refusal")
            refusal = next(line for line in p.output().splitlines()
                           if "Provider refused the changed cloud config" in line)
            self.assertIn("regoin", refusal)
            third = c.add_nodes(count=1)[0]
            wait_for(lambda: is_initialized(c.node(third)), "the third node")
            self.assertEqual(labels(c.node(third))[REGION], "r2")

            self.assertEqual(metric(c, port, "ccm_provider_reconfigure_total",
                                    provider="fake-cloud", result="ok"), 1)
            self.assertEqual(metric(c, port, "ccm_provider_reconfigure_total",
                                    provider="fake-cloud", result="refused"), 1)
            self.assertTrue(p.alive())
            self.assertEqual(p.stop(), 0)

    def test_plugin_without_reconfigure_says_the_change_waits_for_a_restart(self):
        with Cluster() as c:
            vol = SecretVolume(c.tmp)
            vol.publish("first")
            port = free_port()
            p = c.start_ccm(vol.path, extra=serving(port), provider="echo",
                            plugin_dir=os.path.join(BUILD, "test", "host", "plugin"))
            wait_for(lambda: "Loaded cloud provider" in p.output(), "the plugin loaded")
            notice = "the change takes effect at the next restart"
            vol.publish("second")
            wait_for(lambda: notice in p.output(), "the notice")
            vol.publish("third")
            wait_for(lambda: metric(c, port, "ccm_provider_reconfigure_total", provider="echo",
                                    result="unsupported") == 2, "the second change seen")
            self.assertEqual(p.output().count(notice), 1)
            self.assertEqual(p.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
