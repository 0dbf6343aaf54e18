#!/usr/bin/env python3
"""Rotating the openstack provider's application credential without a restart, end to end:
kubesim, the cloud-controller-manager binary loading openstack.so, and the OpenStack simulator.
cloud.conf is a mounted Secret (symlink swap). While a load balancer serves a Service, the
operator creates a new application credential, publishes it in the Secret, then deletes the old
one (its tokens die with it): nothing in the cloud is recreated or deleted, every later login
uses the new credential, and the load balancer still follows the nodes. A changed setting that
cannot change at run time is refused and the running credentials stay in use.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from e2e_test import FIP_NETWORK, LB_SUBNET, OsSim, all_initialized, server  # noqa: E402
from harness import Cluster, wait_for  # noqa: E402
from secret_volume import SecretVolume  # noqa: E402


def cloud_conf(sim, cred_id, secret, region="RegionOne"):
    return ("[Global]\n"
            "auth-url = %s/identity/v3\n"
            "application-credential-id = %s\n"
            "application-credential-secret = %s\n"
            "region = %s\n"
            "[LoadBalancer]\n"
            "subnet-id = %s\n"
            "floating-network-id = %s\n"
            "ccm-active-wait-timeout = 3s\n" % (sim.url, cred_id, secret, region, LB_SUBNET,
                                                 FIP_NETWORK))


def logins(sim):
    """The application credential ID of every Keystone login in the request log."""
    out = []
    for r in sim.call("GET", "/_sim/requests")["requests"]:
        if r["service"] == "identity" and r["rel"] == "/v3/auth/tokens" and r["method"] == "POST":
            ident = (r.get("body") or {}).get("auth", {}).get("identity", {})
            out.append(ident.get("application_credential", {}).get("id", "?"))
    return out


class RotationTest(unittest.TestCase):

    def test_rotating_the_application_credential_recreates_nothing(self):
        servers = [server("node-00001", "10.0.0.61"), server("node-00002", "10.0.0.62")]
        with Cluster(nodes=2) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            vol = SecretVolume(c.tmp)
            vol.publish(cloud_conf(sim, "ac-id", "ac-secret-value"))
            ccm = c.start_ccm(vol.path, provider="openstack",
                              extra=["--cloud-config-reload-period=100ms"])
            wait_for(lambda: all_initialized(c, 2), "the nodes initialised")
            c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "web"},
                "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                         "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})

            def ingress():
                svc = c.api.get("/api/v1/namespaces/default/services/web")
                return [i.get("ip") for i in svc["status"].get("loadBalancer", {})
                        .get("ingress", []) or []]
            wait_for(ingress, "the Service's ingress")
            before = sim.state()
            lb_ids = sorted(x["id"] for x in before["loadbalancers"])
            fip_ids = sorted(x["id"] for x in before["floatingips"])
            self.assertEqual(len(lb_ids), 1)
            ip = ingress()

            # The rotation: a new credential, published in the Secret, then the old one gone.
            sim.control("app_credentials", {"id": "ac-new", "name": "ac-new-name",
                                            "secret": "ac-new-secret-value"})
            sim.control("requests/clear", {})
            vol.publish(cloud_conf(sim, "ac-new", "ac-new-secret-value"))
            wait_for(lambda: '"Provider reconfigured from the changed cloud config"' in
                     ccm.output(), "the reconfigure")
            sim.control("app_credentials/delete", {"id": "ac-id"})

            # A region change cannot be applied while running: refused, credentials kept.
            vol.publish(cloud_conf(sim, "ac-new", "ac-new-secret-value", region="RegionTwo"))
            wait_for(lambda: "Provider refused the changed cloud config" in ccm.output(),
                     "the refusal")
            refusal = [line for line in ccm.output().splitlines()
                       if "Provider refused the changed cloud config" in line]
            self.assertIn("[Global] region", refusal[0])

            # The cloud is used after the old credential died: a new node joins the pool.
            sim.control("add_server", server("node-00003", "10.0.0.63"))
            c.add_nodes(names=["node-00003"])
            wait_for(lambda: all_initialized(c, 3), "the third node initialised")

            def members():
                st = sim.state()
                return sorted(m["address"] for ms in st["members"].values() for m in ms)
            wait_for(lambda: members() == ["10.0.0.61", "10.0.0.62", "10.0.0.63"],
                     "the new node in the pool", timeout=90)

            after = sim.state()
            self.assertEqual(sorted(x["id"] for x in after["loadbalancers"]), lb_ids)
            self.assertEqual(sorted(x["id"] for x in after["floatingips"]), fip_ids)
            self.assertEqual(ingress(), ip)
            reqs = sim.call("GET", "/_sim/requests")["requests"]
            self.assertEqual([r["path"] for r in reqs if r["method"] == "DELETE"], [])
            seen = logins(sim)
            self.assertTrue(seen, "the rotation logged in with the new credential")
            self.assertEqual(set(seen), {"ac-new"})
            out = ccm.output()
            self.assertNotIn("ac-new-secret-value", out)
            self.assertNotIn("ac-secret-value", out)
            self.assertEqual(ccm.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
