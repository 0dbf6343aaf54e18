#!/usr/bin/python3
"""Load-balancer clean-up through the real binary does not trust status.loadBalancer.

The real API server clears status.loadBalancer when a Service's type changes away from
LoadBalancer. A Service gets its load balancer; ccm is stopped; the type becomes ClusterIP
and status.loadBalancer is cleared (explicitly here, so the test holds whether or not the API
server does it itself); ccm is started again: the load balancer is deleted in fake-cloud and
ccm's finalizer service.kubernetes.io/load-balancer-cleanup removed.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ.get("CCM_SOURCE_DIR", ""), "test", "support"))
from harness import Cluster, wait_for  # noqa: E402

FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
PATH = "/api/v1/namespaces/default/services/web"


def lb_uids(c):
    return {lb["uid"] for lb in c.cloud_state().get("loadBalancers", [])}


class LoadBalancerCleanupTest(unittest.TestCase):

    def test_type_change_while_stopped_with_cleared_status(self):
        with Cluster(nodes=2) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            ccm = c.start_ccm(cloud)
            c.api.post("/api/v1/namespaces/default/services", {
                "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                         "ports": [{"name": "http", "protocol": "TCP", "port": 80,
                                    "targetPort": 8080}]}})

            def provisioned():
                svc = c.api.get(PATH)
                ingress = (svc.get("status", {}).get("loadBalancer") or {}).get("ingress")
                return svc if ingress and svc["metadata"]["uid"] in lb_uids(c) else None
            svc = wait_for(provisioned, "the load balancer and its ingress")
            uid = svc["metadata"]["uid"]
            self.assertIn(FINALIZER, svc["metadata"].get("finalizers", []))
            self.assertEqual(ccm.stop(), 0)

            # While ccm is down: the type changes to ClusterIP (node ports and the
            # LoadBalancer-only fields go with it) and status.loadBalancer is cleared.
            ports = [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]
            c.api.patch(PATH, {"spec": {"type": "ClusterIP", "ports": ports,
                                        "externalTrafficPolicy": None,
                                        "allocateLoadBalancerNodePorts": None}},
                        kind="merge-patch")
            c.api.patch(PATH + "/status", {"status": {"loadBalancer": {"ingress": None}}},
                        kind="merge-patch")
            svc = c.api.get(PATH)
            self.assertEqual(svc["spec"]["type"], "ClusterIP")
            self.assertFalse((svc.get("status", {}).get("loadBalancer") or {}).get("ingress"))
            self.assertIn(FINALIZER, svc["metadata"].get("finalizers", []))
            self.assertIn(uid, lb_uids(c), "the cloud still has the load balancer")

            ccm = c.start_ccm(cloud, name="ccm-restarted")
            wait_for(lambda: uid not in lb_uids(c), "the load balancer deleted in the cloud")
            wait_for(lambda: FINALIZER not in
                     (c.api.get(PATH)["metadata"].get("finalizers") or []),
                     "the finalizer removed")
            self.assertEqual(c.api.get(PATH)["metadata"]["uid"], uid)
            self.assertEqual(ccm.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
