"""kubesim driven by Python's official kubernetes client (Debian python3-kubernetes): list with
paging, watch (incl. resume and the 410 path), node status patches, leases, events."""

import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from kubesim_harness import KubesimTestCase, wait_for  # noqa: E402

try:
    from kubernetes import client, config, watch
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover
    client = None


@unittest.skipIf(client is None, "python3-kubernetes not installed")
class PythonClientTest(KubesimTestCase):
    KUBESIM_ARGS = ("--nodes=20", "--watch-history=200")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api_client = config.new_client_from_config(config_file=cls.sim.kubeconfig)
        cls.v1 = client.CoreV1Api(cls.api_client)

    @classmethod
    def tearDownClass(cls):
        cls.api_client.close()
        super().tearDownClass()

    def test_list_and_paging(self):
        nodes = self.v1.list_node()
        self.assertEqual(len(nodes.items), 20)
        self.assertEqual(nodes.items[0].metadata.name, "node-00001")
        self.assertEqual(nodes.items[0].status.node_info.kubelet_version, "v1.32.0")
        taint = nodes.items[0].spec.taints[0]
        self.assertEqual((taint.key, taint.effect),
                         ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"))
        names = []
        cont = None
        while True:
            page = self.v1.list_node(limit=7, _continue=cont)
            names += [n.metadata.name for n in page.items]
            cont = page.metadata._continue
            if not cont:
                break
        self.assertEqual(len(names), 20)
        sel = self.v1.list_node(label_selector="kubernetes.io/hostname=node-00005")
        self.assertEqual([n.metadata.name for n in sel.items], ["node-00005"])
        self.assertEqual(self.v1.list_namespaced_pod("default").items, [])

    def test_patch_node_status_and_watch(self):
        rv = self.v1.list_node().metadata.resource_version
        done = threading.Event()

        def patch():
            self.v1.patch_node_status("node-00002", {"status": {"conditions": [
                {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated",
                 "message": "RouteController created a route",
                 "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "lastHeartbeatTime": "2026-01-01T00:00:00Z"}]}})
            done.set()

        w = watch.Watch()
        seen = None
        t = threading.Timer(0.3, patch)
        t.start()
        for ev in w.stream(self.v1.list_node, resource_version=rv, timeout_seconds=20):
            obj = ev["object"]
            conds = {c.type: c.status for c in obj.status.conditions}
            if obj.metadata.name == "node-00002" and "NetworkUnavailable" in conds:
                seen = ev
                w.stop()
        t.join()
        self.assertTrue(done.is_set())
        self.assertEqual(seen["type"], "MODIFIED")
        node = self.v1.read_node("node-00002")
        conds = {c.type: c.status for c in node.status.conditions}
        self.assertEqual(conds["NetworkUnavailable"], "False")
        self.assertEqual(conds["Ready"], "True")  # merged by type, not replaced
        # JSON patch (a list body) and the address replace directive real callers send.
        self.v1.patch_node("node-00002", [{"op": "add", "path": "/metadata/labels/p",
                                           "value": "json"}])
        self.v1.patch_node_status("node-00002", {"status": {"addresses": [
            {"type": "InternalIP", "address": "10.0.0.2"},
            {"type": "Hostname", "address": "node-00002"}, {"$patch": "replace"}]}})
        node = self.v1.read_node("node-00002")
        self.assertEqual(node.metadata.labels["p"], "json")
        self.assertEqual([(a.type, a.address) for a in node.status.addresses],
                         [("InternalIP", "10.0.0.2"), ("Hostname", "node-00002")])

    def test_watch_bookmarks_and_expired(self):
        rv = self.v1.list_node().metadata.resource_version
        # Resume from a known RV with bookmarks.
        w = watch.Watch()
        self.v1.patch_node("node-00003", {"metadata": {"labels": {"resume": "1"}}})
        events = []
        for ev in w.stream(self.v1.list_node, resource_version=rv, timeout_seconds=10,
                           allow_watch_bookmarks=True):
            events.append(ev)
            if ev["type"] == "MODIFIED" and ev["object"].metadata.name == "node-00003":
                w.stop()
        self.assertEqual(events[-1]["object"].metadata.labels["resume"], "1")
        # After compaction the old RV is gone: the client raises ApiException(410).
        self.sim.admin("POST", "compact")
        with self.assertRaises(ApiException) as ctx:
            for _ in watch.Watch().stream(self.v1.list_node, resource_version=rv,
                                          timeout_seconds=5):
                pass
        self.assertEqual(ctx.exception.status, 410)

    def test_errors_are_api_exceptions(self):
        with self.assertRaises(ApiException) as ctx:
            self.v1.read_node("does-not-exist")
        self.assertEqual(ctx.exception.status, 404)
        with self.assertRaises(ApiException) as ctx:
            self.v1.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="node-00001")))
        self.assertEqual(ctx.exception.status, 409)

    def test_leases_and_events(self):
        coord = client.CoordinationV1Api(self.api_client)
        lease = coord.create_namespaced_lease("kube-system", client.V1Lease(
            metadata=client.V1ObjectMeta(name="cloud-controller-manager"),
            spec=client.V1LeaseSpec(holder_identity="me_1", lease_duration_seconds=15)))
        self.assertEqual(lease.spec.holder_identity, "me_1")
        lease.spec.holder_identity = "me_2"
        updated = coord.replace_namespaced_lease("cloud-controller-manager", "kube-system", lease)
        self.assertEqual(updated.spec.holder_identity, "me_2")
        with self.assertRaises(ApiException) as ctx:
            coord.replace_namespaced_lease("cloud-controller-manager", "kube-system", lease)
        self.assertEqual(ctx.exception.status, 409)
        node_leases = coord.list_namespaced_lease("kube-node-lease")
        self.assertEqual(len(node_leases.items), 20)
        ev = self.v1.create_namespaced_event("default", client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="node-00001.abc"),
            involved_object=client.V1ObjectReference(kind="Node", name="node-00001"),
            reason="Synced", message="Node synced successfully", type="Normal", count=1))
        self.assertEqual(ev.reason, "Synced")
        got = self.v1.list_event_for_all_namespaces(
            field_selector="involvedObject.name=node-00001,reason=Synced")
        self.assertEqual(len(got.items), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
