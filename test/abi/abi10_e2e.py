#!/usr/bin/env python3
"""Every later host loads a plugin built against the frozen ABI 1.0 header.

Runs kubesim and the real cloud-controller-manager with test/abi/frozen/1.0/plugin/abi10.so
(plain C, 1.0 header, 72-byte ccm_plugin table, 24-byte ccm_lb_status): every node is
initialised with its metadata, a LoadBalancer Service gets the plugin's address, and the host
reports the plugin as speaking minor 0.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from harness import Cluster, is_initialized, labels, wait_for  # noqa: E402

PLUGIN_DIR = os.environ["CCM_ABI10_DIR"]
FROZEN_MINOR = (1, 0)


class Abi10Test(unittest.TestCase):

    def test_a_1_0_plugin_initialises_every_node_and_serves_a_load_balancer(self):
        with Cluster(nodes=3) as c:
            config = os.path.join(c.tmp, "abi10.conf")
            with open(config, "w") as f:
                f.write("zone=zone-old\nregion=region-old\n")
            ccm = c.start_ccm(config, provider="abi10", plugin_dir=PLUGIN_DIR)
            wait_for(lambda: len(c.nodes()) == 3 and all(is_initialized(n) for n in c.nodes()),
                     "every node initialised by the 1.0 plugin", timeout=120)
            for node in c.nodes():
                name = node["metadata"]["name"]
                self.assertEqual(node["spec"].get("providerID"), "abi10://" + name)
                node_labels = labels(node)
                self.assertEqual(node_labels.get("topology.kubernetes.io/zone"), "zone-old")
                self.assertEqual(node_labels.get("topology.kubernetes.io/region"), "region-old")
                self.assertEqual(node_labels.get("node.kubernetes.io/instance-type"),
                                 "frozen.small")
                addresses = {a["type"]: a["address"]
                             for a in node.get("status", {}).get("addresses", [])}
                self.assertEqual(addresses.get("Hostname"), name)
            # A node that joins later is initialised too.
            late = c.add_nodes(count=1)[0]
            wait_for(lambda: is_initialized(c.node(late)), "a late node initialised",
                     timeout=120)

            c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "web"},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "protocol": "TCP"}]}})

            def ingress():
                svc = c.api.get("/api/v1/namespaces/default/services/web")
                return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress")
            found = wait_for(ingress, "the 1.0 plugin's load balancer address", timeout=120)
            self.assertEqual(len(found), 1)
            self.assertTrue(found[0]["ip"].startswith("192.0.2."), found)
            svc = c.api.get("/api/v1/namespaces/default/services/web")
            # A 1.0 status has no annotations: the host writes none.
            annotations = svc["metadata"].get("annotations") or {}
            self.assertEqual([k for k in annotations if "abi10" in k], [])

            out = ccm.output()
            self.assertIn('provider="abi10" version="1.0.0" abi="%d.%d"' % FROZEN_MINOR, out)
            self.assertIn("abi10 provider ready (zone zone-old, region region-old)", out)
            self.assertTrue(ccm.alive(), out[-3000:])
            self.assertEqual(ccm.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
