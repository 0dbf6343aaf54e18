#!/usr/bin/env python3
"""The node controllers end to end: kubesim with kubelet-like nodes, the real
cloud-controller-manager binary, and fake-cloud loaded through the plugin ABI.

Covers the rows of upstream's node and lifecycle test tables (reference section 7.1/7.2) that
are observable from outside, plus ccm's safety rules: only NOT_FOUND counts, confirmed a
monitor period apart, per-zone deletion budgets, no deletions during a full partition; and
restarts in the middle of initialisation."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from harness import (Cluster, ApiError, wait_for, is_initialized, labels, taint_keys,  # noqa: E402
                     UNINITIALIZED, SHUTDOWN_TAINT, free_port, https_get)

ZONES = ["zone-a", "zone-b", "zone-c"]


def addresses(node):
    return [(a["type"], a["address"]) for a in node.get("status", {}).get("addresses", [])]


def all_initialized(cluster, count):
    nodes = cluster.nodes()
    return len(nodes) == count and all(is_initialized(n) for n in nodes)


class CloudNodeControllerTest(unittest.TestCase):

    def test_kubelet_registered_nodes_are_initialized(self):
        with Cluster(nodes=4) as c:
            cloud = c.fake_cloud(region="region-1", autoInstances={
                "zones": ZONES[:2], "type": "m1.small", "externalCidr": "198.51.100.0/24",
                "labels": {"example.com/pool": "blue", "kubernetes.io/evil": "x",
                           "k8s.io/evil": "y"}})
            ccm = c.start_ccm(cloud)
            wait_for(lambda: all_initialized(c, 4), "4 nodes initialised")
            for n in c.nodes():
                name = n["metadata"]["name"]
                idx = int(name[-5:])
                lb = labels(n)
                self.assertEqual(n["spec"]["providerID"], "fake://" + name)
                zone = ZONES[idx % 2]
                self.assertEqual(lb["topology.kubernetes.io/zone"], zone)
                self.assertEqual(lb["failure-domain.beta.kubernetes.io/zone"], zone)
                self.assertEqual(lb["topology.kubernetes.io/region"], "region-1")
                self.assertEqual(lb["failure-domain.beta.kubernetes.io/region"], "region-1")
                self.assertEqual(lb["node.kubernetes.io/instance-type"], "m1.small")
                self.assertEqual(lb["beta.kubernetes.io/instance-type"], "m1.small")
                self.assertEqual(lb["example.com/pool"], "blue")
                self.assertNotIn("kubernetes.io/evil", lb)
                self.assertNotIn("k8s.io/evil", lb)
                types = [t for t, _ in addresses(n)]
                self.assertEqual(types, ["InternalIP", "ExternalIP", "Hostname"])
                # Only the uninitialized taint was removed.
                self.assertNotIn(UNINITIALIZED, taint_keys(n))
            wait_for(lambda: len(c.events("Synced")) == 4, "a Synced event per node")
            ev = c.events("Synced")[0]
            self.assertEqual(ev["message"], "Node synced successfully")
            self.assertEqual(ev["involvedObject"]["kind"], "Node")
            self.assertEqual(ev["involvedObject"]["apiVersion"], "v1")
            self.assertEqual(ev["source"]["component"], "cloud-node-controller")
            # What a user sees with kubectl.
            out = subprocess.run(["kubectl", "--kubeconfig", c.kubeconfig, "--cache-dir",
                                  os.path.join(c.tmp, "kubectl-cache"), "get", "nodes", "-L",
                                  "topology.kubernetes.io/zone"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            header = out.stdout.splitlines()[0]
            self.assertIn("ZONE", header)
            self.assertIn("zone-a", out.stdout)
            self.assertIn("zone-b", out.stdout)
            self.assertEqual(ccm.stop(), 0)

    def test_existing_provider_id_other_taints_and_labels_are_kept(self):
        with Cluster() as c:
            cloud = c.fake_cloud(instances=[{
                "name": "vm-7", "providerID": "fake://vm-7", "type": "big", "zone": "z1",
                "addresses": [{"type": "InternalIP", "address": "10.1.2.3"}],
                "labels": {"example.com/team": "new"}}])
            c.api.post("/api/v1/nodes", {
                "metadata": {"name": "custom-node", "labels": {"example.com/team": "mine"}},
                "spec": {"providerID": "fake://vm-7", "taints": [
                    {"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"},
                    {"key": "example.com/dedicated", "value": "db", "effect": "NoExecute"}]},
                "status": {"addresses": [{"type": "Hostname", "address": "custom-host"}]}})
            c.start_ccm(cloud)
            wait_for(lambda: is_initialized(c.node("custom-node")), "initialisation")
            n = c.node("custom-node")
            self.assertEqual(n["spec"]["providerID"], "fake://vm-7")
            # Only ccm's own taint goes; the admission's not-ready taint (the API server adds
            # it to every new Node) and the user's stay.
            self.assertEqual(sorted(taint_keys(n)),
                             ["example.com/dedicated", "node.kubernetes.io/not-ready"])
            self.assertEqual(labels(n)["example.com/team"], "mine")  # never overwritten
            self.assertEqual(labels(n)["node.kubernetes.io/instance-type"], "big")
            # The cloud reports no Hostname: the kubelet's survives.
            self.assertEqual(addresses(n), [("InternalIP", "10.1.2.3"),
                                            ("Hostname", "custom-host")])

    def test_provided_node_ip_leads_and_a_mismatch_keeps_the_node_tainted(self):
        with Cluster(nodes=2, kubesim_args=["--provided-node-ip"]) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]}, instances=[{
                "name": "odd-node", "addresses": [{"type": "InternalIP", "address": "10.9.9.9"}]}])
            c.api.post("/api/v1/nodes", {
                "metadata": {"name": "odd-node", "annotations": {
                    "alpha.kubernetes.io/provided-node-ip": "10.7.7.7"}},
                "spec": {"taints": [{"key": UNINITIALIZED, "value": "true",
                                     "effect": "NoSchedule"}]}})
            ccm = c.start_ccm(cloud)
            wait_for(lambda: sum(is_initialized(n) for n in c.nodes()) == 2,
                     "the two kubelet nodes initialised")
            for n in c.nodes():
                if n["metadata"]["name"] == "odd-node":
                    continue
                provided = n["metadata"]["annotations"]["alpha.kubernetes.io/provided-node-ip"]
                self.assertEqual(addresses(n)[0], ("InternalIP", provided))
            wait_for(lambda: "failed to get node address from cloud provider that matches ip: "
                     "10.7.7.7" in ccm.output(), "the mismatch reported")
            odd = c.node("odd-node")
            self.assertIn(UNINITIALIZED, taint_keys(odd))
            self.assertNotIn("providerID", odd["spec"])  # nothing half-applied

    def test_provider_errors_and_not_found_keep_the_taint_until_they_clear(self):
        with Cluster(nodes=2) as c:
            cloud = c.fake_cloud(instances=[{"name": "node-00001", "state": "absent"}],
                                 autoInstances={"zones": ["z"]},
                                 faults=[{"op": "batch", "code": "UNAVAILABLE",
                                          "message": "cloud API is down"}])
            ccm = c.start_ccm(cloud)
            wait_for(lambda: "cloud API is down" in ccm.output(), "the provider error logged")
            for n in c.nodes():
                self.assertIn(UNINITIALIZED, taint_keys(n))
                self.assertNotIn("providerID", n["spec"])
            c.update_cloud(faults=[])
            wait_for(lambda: is_initialized(c.node("node-00002")), "recovery after the fault")
            n1 = c.node("node-00001")  # its instance does not exist: still tainted
            self.assertIn(UNINITIALIZED, taint_keys(n1))
            c.update_cloud(instances=[])
            wait_for(lambda: is_initialized(c.node("node-00001")),
                     "initialised once the instance appears")

    def test_addresses_are_refreshed_and_stable_labels_follow_beta(self):
        with Cluster() as c:
            spec = {"name": "vm", "zone": "z1",
                    "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}
            cloud = c.fake_cloud(instances=[spec])
            c.api.post("/api/v1/nodes", {"metadata": {"name": "vm"}, "spec": {"taints": [
                {"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"}]}})
            c.start_ccm(cloud, extra=["--node-status-update-frequency=1s"])
            wait_for(lambda: is_initialized(c.node("vm")), "initialisation")
            spec["addresses"] = [{"type": "InternalIP", "address": "10.0.0.2"},
                                 {"type": "ExternalIP", "address": "203.0.113.9"}]
            c.update_cloud(instances=[spec])
            wait_for(lambda: addresses(c.node("vm")) == [("InternalIP", "10.0.0.2"),
                                                         ("ExternalIP", "203.0.113.9")],
                     "the refreshed addresses")
            # A hand edit of the stable zone label is reverted to the beta one.
            c.api.patch("/api/v1/nodes/vm", {"metadata": {"labels": {
                "topology.kubernetes.io/zone": "hand-edited"}}})
            wait_for(lambda: labels(c.node("vm"))["topology.kubernetes.io/zone"] == "z1",
                     "the stable label restored from the beta label")

    def test_restart_in_the_middle_of_initialisation(self):
        with Cluster(nodes=300) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ZONES}, maxBatchSize=20,
                                 latency={"batch": "150ms"})
            first = c.start_ccm(cloud, extra=["--concurrent-node-syncs=2"])

            def some_done():
                done = sum(is_initialized(n) for n in c.nodes())
                return 20 <= done < 300
            wait_for(some_done, "initialisation under way", timeout=60, interval=0.05)
            first.kill()
            # Nothing half-applied: a node is tainted with no cloud data, or fully initialised.
            for n in c.nodes():
                if is_initialized(n):
                    self.assertEqual(n["spec"]["providerID"], "fake://" + n["metadata"]["name"])
                    self.assertIn("topology.kubernetes.io/zone", labels(n))
                else:
                    self.assertNotIn("providerID", n["spec"])
                    self.assertNotIn("topology.kubernetes.io/zone", labels(n))
            before = {n["metadata"]["name"] for n in c.nodes() if is_initialized(n)}
            second = c.start_ccm(cloud, extra=["--concurrent-node-syncs=10"])
            wait_for(lambda: all_initialized(c, 300), "every node initialised", timeout=120)
            # Each node was initialised exactly once: the second process never redid one the
            # first had finished.
            redone = [name for name in before
                      if '"Successfully initialized node with cloud provider" node="%s"' % name
                      in second.output()]
            self.assertEqual(redone, [])
            self.assertEqual(second.stop(), 0)


    def test_providers_without_metadata_or_provider_id_keep_the_taint(self):
        kit = os.path.join(os.environ["CCM_BUILD_DIR"], "test", "abi", "plugins")
        with Cluster(nodes=1) as c:
            cloud = c.fake_cloud()
            # Upstream's nil metadata: no error, no retry storm, the node stays tainted.
            quiet = c.start_ccm(cloud, provider="no-metadata", plugin_dir=kit)
            wait_for(lambda: "Provider has no metadata for the node yet" in quiet.output(),
                     "the skip logged")
            self.assertNotIn("Error syncing node", quiet.output())
            self.assertFalse(is_initialized(c.nodes()[0]))
            self.assertEqual(quiet.stop(), 0)
            # Metadata without a providerID on a node without one: an error, taint kept.
            noid = c.start_ccm(cloud, provider="no-provider-id", plugin_dir=kit)
            wait_for(lambda: "cloud provider does not set node provider ID" in noid.output(),
                     "the missing providerID reported")
            n = c.nodes()[0]
            self.assertFalse(is_initialized(n))
            self.assertNotIn("providerID", n["spec"])

    def test_a_burst_of_joining_nodes_costs_few_provider_calls_and_round_trips(self):
        port = free_port()
        with Cluster() as c:
            # The burst is registered before ccm starts (a scale-up during a ccm restart or
            # leader change): its first list then queues all 200 nodes at once, however fast
            # this build and the server are. (Nodes joining one by one while ccm runs may each
            # be done before the next arrives, as under ASan, and one at a time is right then.)
            c.add_nodes(count=200)
            cloud = c.fake_cloud(autoInstances={"zones": ZONES})
            ccm = c.start_ccm(cloud, extra=["--secure-port=%d" % port,
                                            "--bind-address=127.0.0.1",
                                            "--authorization-always-allow-paths=/metrics",
                                            "--kube-api-qps=1000", "-v=4"])
            wait_for(lambda: all_initialized(c, 200), "200 nodes initialised", timeout=120)
            # Workers take several queued nodes at once (at 1000 QPS among 10 workers, up to
            # 10) and send each step's writes as one pipelined batch; every node is still
            # initialised in full, and once.
            together = [int(n) for n in
                        re.findall(r'"Initializing nodes together" nodes=(\d+)', ccm.output())]
            self.assertTrue(together, "no node was initialised in a batch")
            self.assertLessEqual(max(together), 10)
            for n in c.nodes():
                name = n["metadata"]["name"]
                self.assertEqual(n["spec"]["providerID"], "fake://" + name)
                self.assertIn(labels(n)["topology.kubernetes.io/zone"], ZONES)
                self.assertIn("InternalIP", [t for t, _ in addresses(n)])
            wait_for(lambda: len(c.events("Synced")) == 200, "a Synced event per node")
            synced = [e["involvedObject"]["name"] for e in c.events("Synced")]
            self.assertEqual(len(set(synced)), 200)
            self.assertTrue(all(e.get("count", 1) == 1 for e in c.events("Synced")))
            print("200 joining nodes: %d batches of several nodes (the largest %d)" %
                  (len(together), max(together)))
            body = https_get("https://127.0.0.1:%d/metrics" % port)[1]
            calls = re.findall(r'^ccm_provider_calls_total\{provider="fake-cloud",capability="([^"]+)",'
                               r'call="([^"]+)",code="OK"\} (\d+)', body, re.M)
            by_call = {(cap, call): int(n) for cap, call, n in calls}
            batch = by_call.get(("ccm.instances.batch/1", "instance_metadata_batch"), 0)
            single = by_call.get(("ccm.instances/1", "instance_metadata"), 0)
            self.assertEqual(single, 0)
            # One call per node would be 200; batching answers many nodes per call.
            self.assertGreaterEqual(batch, 1)
            self.assertLessEqual(batch, 100, "batch calls for 200 joining nodes")
            print("200 joining nodes: %d batch metadata calls" % batch)


class NodeLifecycleControllerTest(unittest.TestCase):
    MONITOR = ["--node-monitor-period=1s"]

    def cluster_with_cloud(self, nodes, **world):
        c = Cluster(nodes=nodes)
        c.__enter__()
        self.addCleanup(c.__exit__, None, None, None)
        world.setdefault("autoInstances", {"zones": ZONES})
        cloud = c.fake_cloud(**world)
        return c, cloud

    def test_not_ready_node_without_instance_is_deleted_after_confirmation(self):
        c, cloud = self.cluster_with_cloud(3)
        ccm = c.start_ccm(cloud, extra=self.MONITOR)
        wait_for(lambda: all_initialized(c, 3), "initialisation")
        # Ready but gone from the cloud: kept (ready nodes are never checked).
        c.update_cloud(instances=[{"name": "node-00001", "state": "absent"},
                                  {"name": "node-00002", "state": "absent"}])
        c.set_ready(["node-00002"], "False")
        wait_for(lambda: not c.node_exists("node-00002"), "the vanished node deleted")
        out = ccm.output()
        first = out.index("will delete the node if this is confirmed")
        self.assertLess(first, out.index('"Deleting node because its instance does not exist'))
        ev = c.events("DeletingNode")
        self.assertEqual(len(ev), 1)
        self.assertEqual(ev[0]["message"],
                         "Deleting node node-00002 because it does not exist in the cloud provider")
        self.assertEqual(ev[0]["involvedObject"]["apiVersion"], "v1")
        time.sleep(3)
        self.assertTrue(c.node_exists("node-00001"))  # Ready: never deleted
        self.assertTrue(c.node_exists("node-00003"))

    def test_errors_unknown_and_existing_instances_never_delete(self):
        c, cloud = self.cluster_with_cloud(4)
        ccm = c.start_ccm(cloud, extra=self.MONITOR)
        wait_for(lambda: all_initialized(c, 4), "initialisation")
        c.update_cloud(instances=[{"name": "node-00001", "state": "unknown"}],
                       faults=[{"op": "exists", "nodes": ["node-00002"], "code": "UNAVAILABLE",
                                "message": "cloud timeout"}])
        c.set_ready(["node-00001", "node-00002", "node-00003"], "False")
        wait_for(lambda: "cloud timeout" in ccm.output(), "the provider error seen")
        time.sleep(4)  # several monitor periods
        for name in ["node-00001", "node-00002", "node-00003"]:
            self.assertTrue(c.node_exists(name), name)
            self.assertNotIn(SHUTDOWN_TAINT, taint_keys(c.node(name)))
        self.assertEqual(c.events("DeletingNode"), [])

    def test_flapping_not_found_is_not_enough(self):
        c, cloud = self.cluster_with_cloud(3)
        ccm = c.start_ccm(cloud, extra=["--node-monitor-period=3s"])
        wait_for(lambda: all_initialized(c, 3), "initialisation")
        c.set_ready(["node-00002"], "False")
        c.update_cloud(instances=[{"name": "node-00002", "state": "absent"}])
        wait_for(lambda: "will delete the node if this is confirmed" in ccm.output(),
                 "the first NOT_FOUND observed")
        c.update_cloud(instances=[])  # the instance answers again before the confirmation
        time.sleep(7)
        self.assertTrue(c.node_exists("node-00002"))
        c.update_cloud(instances=[{"name": "node-00002", "state": "absent"}])
        wait_for(lambda: not c.node_exists("node-00002"), "deletion once it is confirmed",
                 timeout=30)

    def test_shutdown_taint_added_and_removed(self):
        c, cloud = self.cluster_with_cloud(2)
        c.start_ccm(cloud, extra=self.MONITOR)
        wait_for(lambda: all_initialized(c, 2), "initialisation")
        c.update_cloud(instances=[{"name": "node-00001", "state": "shutdown"},
                                  {"name": "node-00002", "state": "shutdown"}])
        c.set_ready(["node-00001"], "False")
        wait_for(lambda: SHUTDOWN_TAINT in taint_keys(c.node("node-00001")), "the shutdown taint")
        t = [t for t in c.node("node-00001")["spec"]["taints"] if t["key"] == SHUTDOWN_TAINT][0]
        self.assertEqual(t["effect"], "NoSchedule")
        self.assertNotIn(SHUTDOWN_TAINT, taint_keys(c.node("node-00002")))  # Ready: untouched
        self.assertTrue(c.node_exists("node-00001"))  # shut down is not gone
        c.set_ready(["node-00001"], "True")
        wait_for(lambda: SHUTDOWN_TAINT not in taint_keys(c.node("node-00001")),
                 "the taint removed when Ready again")

    def test_partially_disrupted_small_zone_is_protected(self):
        # 15 nodes in three zones (node i in ZONES[i % 3]). Zone of i%3 == 1 loses 4 of its 5
        # nodes (partial disruption, small zone: rate 0); one node of another zone vanishes.
        c, cloud = self.cluster_with_cloud(15)
        ccm = c.start_ccm(cloud, extra=self.MONITOR)
        wait_for(lambda: all_initialized(c, 15), "initialisation")
        victims = ["node-%05d" % i for i in (1, 4, 7, 10)]     # zone-b
        lone = "node-00002"                                       # zone-c
        c.update_cloud(instances=[{"name": n, "state": "absent"} for n in victims + [lone]])
        c.set_ready(victims + [lone], "False")
        wait_for(lambda: not c.node_exists(lone), "the healthy zone's vanished node deleted")
        # The cause is named: the zone's partial disruption, not a rate limit.
        wait_for(lambda: "Node deletion postponed: the zone is partially disrupted" in
                 ccm.output(), "the disrupted zone's deletions postponed")
        self.assertIn('zone="zone-b" zoneState="PartialDisruption"', ccm.output())
        self.assertIn('reason="partial_disruption"', ccm.output())
        time.sleep(3)
        for n in victims:
            self.assertTrue(c.node_exists(n), n)

    def test_full_partition_deletes_nothing(self):
        c, cloud = self.cluster_with_cloud(6)
        ccm = c.start_ccm(cloud, extra=self.MONITOR)
        wait_for(lambda: all_initialized(c, 6), "initialisation")
        names = [n["metadata"]["name"] for n in c.nodes()]
        c.update_cloud(instances=[{"name": n, "state": "absent"} for n in names])
        c.set_ready(names, "Unknown")
        wait_for(lambda: "Every zone is fully disrupted" in ccm.output(),
                 "the partition recognised")
        time.sleep(3)
        self.assertEqual(len(c.nodes()), 6)
        self.assertEqual(c.events("DeletingNode"), [])


class NodeIpamControllerTest(unittest.TestCase):

    def test_allocates_exhausts_reclaims_and_survives_restart(self):
        with Cluster(nodes=5) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            args = ["--allocate-node-cidrs", "--cluster-cidr=10.244.0.0/22",
                    "--node-cidr-mask-size=24"]
            ccm = c.start_ccm(cloud, extra=args)

            def cidrs():
                return {n["metadata"]["name"]: n["spec"].get("podCIDRs", []) for n in c.nodes()}
            wait_for(lambda: sum(1 for v in cidrs().values() if v) == 4, "4 ranges given out")
            got = cidrs()
            given = sorted(v[0] for v in got.values() if v)
            self.assertEqual(given, ["10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24",
                                     "10.244.3.0/24"])
            starved = [k for k, v in got.items() if not v][0]
            wait_for(lambda: any(e["involvedObject"]["name"] == starved
                                 for e in c.events("CIDRNotAvailable")), "exhaustion reported")
            # A restart rebuilds the map from the nodes: nothing is given out twice.
            self.assertEqual(ccm.stop(), 0)
            ccm = c.start_ccm(cloud, extra=args)
            victim = [k for k, v in got.items() if v][0]
            freed = got[victim][0]
            c.admin("DELETE", "/nodes/" + victim)
            wait_for(lambda: cidrs().get(starved) == [freed], "the freed range reused")
            self.assertEqual(len({v[0] for v in cidrs().values()}), 4)

    def test_dual_stack(self):
        with Cluster(nodes=2) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            c.start_ccm(cloud, extra=["--allocate-node-cidrs",
                                      "--cluster-cidr=10.244.0.0/16,fd00:10::/56"])
            wait_for(lambda: all(len(n["spec"].get("podCIDRs", [])) == 2 for n in c.nodes()),
                     "a range per family")
            for n in c.nodes():
                v4, v6 = n["spec"]["podCIDRs"]
                self.assertTrue(v4.startswith("10.244.") and v4.endswith("/24"))
                self.assertTrue(v6.startswith("fd00:10:") and v6.endswith("/64"))
                self.assertEqual(n["spec"]["podCIDR"], v4)

    def test_bad_cluster_cidr_is_a_clear_start_up_error(self):
        with Cluster() as c:
            cloud = c.fake_cloud()
            ccm = c.start_ccm(cloud, extra=["--allocate-node-cidrs", "--cluster-cidr="])
            self.assertEqual(ccm.proc.wait(timeout=30), 1)
            self.assertIn('invalid --cluster-cidr=\\"\\": empty value', ccm.output())


if __name__ == "__main__":
    unittest.main(verbosity=2)
