#!/usr/bin/env python3
"""TLS termination with Barbican end to end: kubesim, the cloud-controller-manager binary
loading openstack.so, and the OpenStack simulator with its key manager.

  - a Service annotated with a Barbican container gets TERMINATED_HTTPS listeners carrying
    it, in front of HTTP pools, and its ingress;
  - a new container reference is set on the same listeners (no listener re-made);
  - a Service naming a container that does not exist is refused with a
    SyncLoadBalancerFailed event naming the annotation, and nothing is made in the cloud;
  - --check-config refuses a configured default container that is not in Barbican.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_test import OsSim, server, all_initialized, FIP_NETWORK, LB_SUBNET  # noqa: E402
from harness import Cluster, wait_for  # noqa: E402

TLS_REF = "loadbalancer.openstack.org/default-tls-container-ref"


def lb_conf(sim, path, extra=""):
    return sim.cloud_conf(path, "[LoadBalancer]\nsubnet-id = %s\nfloating-network-id = %s\n%s"
                          % (LB_SUBNET, FIP_NETWORK, extra))


class TlsTest(unittest.TestCase):

    def test_tls_service_ref_change_and_missing_container(self):
        servers = [server("node-%05d" % i, "10.0.0.%d" % (70 + i)) for i in (1, 2)]
        with Cluster(nodes=2) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            first = sim.control("barbican/containers", {"name": "web-cert"})["container_ref"]
            second = sim.control("barbican/containers", {"name": "web-cert-2"})["container_ref"]
            ccm = c.start_ccm(lb_conf(sim, os.path.join(c.tmp, "cloud.conf")),
                              provider="openstack")
            wait_for(lambda: all_initialized(c, 2), "the nodes initialised")

            path = "/api/v1/namespaces/default/services/web"
            c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "web", "annotations": {TLS_REF: first}},
                "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                         "ports": [{"name": "https", "port": 443, "protocol": "TCP"},
                                   {"name": "alt", "port": 8443, "protocol": "TCP"}]}})
            wait_for(lambda: c.api.get(path)["status"].get("loadBalancer", {}).get("ingress"),
                     "the ingress of the TLS Service")
            st = sim.state()
            self.assertEqual(len(st["listeners"]), 2)
            pools = {p["id"]: p for p in st["pools"]}
            for lst in st["listeners"]:
                self.assertEqual(lst["protocol"], "TERMINATED_HTTPS")
                self.assertEqual(lst["default_tls_container_ref"], first)
                self.assertEqual(pools[lst["default_pool_id"]]["protocol"], "HTTP")
                self.assertEqual(len(st["members"][lst["default_pool_id"]]), 2)
            listener_ids = sorted(x["id"] for x in st["listeners"])

            # A new certificate: the same listeners carry it.
            svc = c.api.get(path)
            svc["metadata"]["annotations"][TLS_REF] = second
            c.api.request("PUT", path, svc)
            wait_for(lambda: all(x["default_tls_container_ref"] == second
                                 for x in sim.state()["listeners"]),
                     "the new container ref on the listeners")
            self.assertEqual(sorted(x["id"] for x in sim.state()["listeners"]), listener_ids)

            # A container Barbican does not have: refused with an event, nothing made.
            missing = first.rsplit("/", 1)[0] + "/00000000-0000-4000-8000-000000000000"
            c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "broken", "annotations": {TLS_REF: missing}},
                "spec": {"type": "LoadBalancer", "selector": {"app": "broken"},
                         "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}})

            def refused():
                return [e for e in c.events("SyncLoadBalancerFailed")
                        if e["involvedObject"]["name"] == "broken"]
            wait_for(refused, "the SyncLoadBalancerFailed event of the broken Service")
            message = refused()[0]["message"]
            self.assertIn(TLS_REF, message)
            self.assertIn("404", message)
            names = [lb["name"] for lb in sim.state()["loadbalancers"]]
            self.assertEqual(names, ["kube_service_kubernetes_default_web"])
            self.assertEqual(ccm.stop(), 0)

    def test_check_config_refuses_a_missing_default_container(self):
        with Cluster() as c, OsSim(c.tmp, {}) as sim:
            good = sim.control("barbican/containers", {"name": "default"})["container_ref"]
            missing = good.rsplit("/", 1)[0] + "/00000000-0000-4000-8000-000000000000"
            for ref, code in ((good, 0), (missing, 1)):
                conf = lb_conf(sim, os.path.join(c.tmp, "cloud.conf"),
                               "default-tls-container-ref = %s\n" % ref)
                args = c.ccm_args(conf, [], "openstack", None) + ["--check-config"]
                out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     timeout=60, text=True)
                self.assertEqual(out.returncode, code, out.stdout)
                if code:
                    self.assertIn("[LoadBalancer] default-tls-container-ref", out.stdout)
                    self.assertIn("Barbican has no container", out.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
