#!/usr/bin/python3
"""The real binary against an API server whose storage behaves like etcd behind a watch cache:
compaction every second, resourceVersion=0 lists that trail the latest write by 2 s (and come
back unordered), paged lists that can end with an empty page, and the not-ready taint the API
server's admission adds to every new Node. The host must initialise every node, keep the
taints it does not own, survive a 410 on every watch resume by relisting, and pick up nodes
created afterwards.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relsupport import Cluster, wait_for  # noqa: E402
from harness import UNINITIALIZED, is_initialized, taint_keys  # noqa: E402

NOT_READY = "node.kubernetes.io/not-ready"
FOREIGN = {"key": "example.com/team", "value": "a", "effect": "NoSchedule"}
FAST = ["--kube-api-qps=1000", "--kube-api-burst=1000", "--node-monitor-period=2s", "-v=2"]


class HistoryTest(unittest.TestCase):
    def test_converges_through_compaction_and_a_lagging_cache(self):
        c = Cluster(nodes=4, kubesim_args=["--compaction-interval=1s",
                                           "--watch-cache-lag=2s"]).__enter__()
        self.addCleanup(c.__exit__, None, None, None)
        # A node registered like an external-cloud kubelet, with a taint of someone else.
        c.api.post("/api/v1/nodes", {
            "metadata": {"name": "foreign-taint"},
            "spec": {"taints": [{"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"},
                                FOREIGN]}})
        cloud = c.fake_cloud(autoInstances={"zones": ["z1", "z2"]})
        ccm = c.start_ccm(cloud, FAST)
        wait_for(lambda: len(c.nodes()) == 5 and all(is_initialized(n) for n in c.nodes()),
                 "every node initialised")
        # The host removed its own taint only: admission's not-ready taint and the foreign
        # one stay.
        for n in c.nodes():
            self.assertIn(NOT_READY, taint_keys(n), n["metadata"]["name"])
        taints = c.node("foreign-taint")["spec"]["taints"]
        self.assertIn(FOREIGN, taints)
        self.assertEqual(sorted(t["key"] for t in taints), sorted([FOREIGN["key"], NOT_READY]))

        # Let compaction pass every version the host's watches started from, then end every
        # watch: each resume gets 410 at once and the informers relist.
        rv = c.api.get("/api/v1/nodes")["metadata"]["resourceVersion"]
        c.add_nodes(names=["after-1"])
        exact = "/api/v1/nodes?resourceVersion=%s&resourceVersionMatch=Exact" % rv

        def compacted():
            try:
                c.api.get(exact)
                return False
            except Exception as e:  # noqa: BLE001 -- harness.ApiError with code 410
                return getattr(e, "code", None) == 410

        wait_for(compacted, "compaction past %s" % rv, timeout=60)
        c.admin("POST", "/watches/close")
        wait_for(lambda: "Watch expired; relisting" in ccm.output(), "a relist after 410")
        c.add_nodes(names=["after-2", "after-3"])
        wait_for(lambda: len(c.nodes()) == 8 and all(is_initialized(n) for n in c.nodes()),
                 "nodes created after the relist initialised")
        self.assertTrue(ccm.alive())
        self.assertNotIn("Failed to list", ccm.output())


if __name__ == "__main__":
    unittest.main(verbosity=2)
