"""Fidelity: the side effects a real kube-apiserver applies on create and delete.

Each case quotes the row of the observations it covers ("Side effects the real server
applies": Node create, Deletion) and checks the codes, reasons and details of a real v1.26+
server."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from kubesim_harness import KubesimTestCase, wait_for  # noqa: E402

NODES = "/api/v1/nodes"
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
NODE_INFO_FIELDS = ["machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                    "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                    "operatingSystem", "architecture"]


def taint_keys(node):
    return [(t["key"], t["effect"]) for t in node["spec"].get("taints", [])]


class NodeCreateTest(KubesimTestCase):
    KUBESIM_ARGS = ("--watch-cache-lag=0",)

    def create(self, name, spec=None, status=None):
        body = {"metadata": {"name": name}, "spec": spec or {}}
        if status is not None:
            body["status"] = status
        r = self.sim.request("POST", NODES, body)
        self.assertEqual(r.status, 201, r)
        return r.json()

    def test_new_node_gets_the_not_ready_taint(self):
        """Node create: the `TaintNodesByCondition` admission adds
        `node.kubernetes.io/not-ready:NoSchedule` to a new Node"""
        node = self.create("life-bare")
        self.assertEqual(node["spec"]["taints"], [NOT_READY])
        self.assertEqual(self.sim.get(NODES + "/life-bare").json()["spec"]["taints"],
                         [NOT_READY])

    def test_taints_of_the_client_are_kept(self):
        """A client that rewrites the whole taint list must keep taints it does not own
        (the admission appends; it keeps what the client sent)"""
        own = {"key": "example.com/own", "value": "x", "effect": "NoExecute"}
        node = self.create("life-own", spec={"taints": [own]})
        self.assertEqual(node["spec"]["taints"], [own, NOT_READY])
        # Already present (same key and effect): not added twice.
        node = self.create("life-has", spec={"taints": [dict(NOT_READY, value="v")]})
        self.assertEqual(taint_keys(node), [("node.kubernetes.io/not-ready", "NoSchedule")])
        # Same key, other effect: added.
        node = self.create("life-other",
                           spec={"taints": [{"key": NOT_READY["key"], "effect": "NoExecute"}]})
        self.assertEqual(taint_keys(node), [(NOT_READY["key"], "NoExecute"),
                                            (NOT_READY["key"], "NoSchedule")])

    def test_only_on_create(self):
        """(the admission runs on create only: a PATCH removing the taint keeps it removed)"""
        self.create("life-patch")
        r = self.sim.request("PATCH", NODES + "/life-patch", {"spec": {"taints": None}},
                             content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertNotIn("taints", r.json()["spec"])

    def test_status_defaults(self):
        """the server fills `status.allocatable` from capacity and empty
        `nodeInfo`/`daemonEndpoints`"""
        cap = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        node = self.create("life-cap", status={"capacity": cap})
        self.assertEqual(node["status"]["allocatable"], cap)
        self.assertEqual(node["status"]["nodeInfo"], {f: "" for f in NODE_INFO_FIELDS})
        self.assertEqual(node["status"]["daemonEndpoints"], {"kubeletEndpoint": {"Port": 0}})
        # An allocatable of its own is kept.
        node = self.create("life-alloc",
                           status={"capacity": cap, "allocatable": {"cpu": "3"}})
        self.assertEqual(node["status"]["allocatable"], {"cpu": "3"})
        # No capacity: no allocatable; the always-written members are there.
        node = self.create("life-empty")
        self.assertNotIn("allocatable", node["status"])
        self.assertEqual(node["status"]["daemonEndpoints"], {"kubeletEndpoint": {"Port": 0}})
        # A status write without allocatable gets it from capacity again.
        r = self.sim.request("PATCH", NODES + "/life-empty/status",
                             {"status": {"capacity": {"cpu": "2"}}},
                             content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["status"]["allocatable"], {"cpu": "2"})


class DeletionTest(KubesimTestCase):
    KUBESIM_ARGS = ("--watch-cache-lag=0",)

    def ns_path(self, ns, resource="configmaps", name=None):
        p = "/api/v1/namespaces/%s/%s" % (ns, resource)
        return p + "/" + name if name else p

    def create_ns(self, name):
        r = self.sim.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        self.assertEqual(r.status, 201, r)

    def create_cm(self, ns, name, **meta):
        body = {"metadata": dict(name=name, **meta)}
        r = self.sim.request("POST", self.ns_path(ns), body)
        self.assertEqual(r.status, 201, r)
        return r.json()

    def drop_finalizers(self, path):
        r = self.sim.request("PATCH", path, {"metadata": {"finalizers": None}},
                             content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)

    def test_foreground_deletion_waits_for_dependents(self):
        """Deletion: `propagationPolicy=Foreground` leaves the object with a
        `foregroundDeletion` finalizer until dependents are gone"""
        self.create_ns("fg")
        owner = self.create_cm("fg", "owner")
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
               "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
        self.create_cm("fg", "child", ownerReferences=[ref], finalizers=["example.com/hold"])
        self.create_cm("fg", "loose", ownerReferences=[dict(ref, blockOwnerDeletion=False)])
        r = self.sim.request("DELETE", self.ns_path("fg", name="owner") +
                             "?propagationPolicy=Foreground")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["metadata"]["finalizers"], ["foregroundDeletion"])
        self.assertIn("deletionTimestamp", r.json()["metadata"])
        # The garbage collector deletes the dependents; the one with a finalizer stays
        # (terminating), and with it the owner.
        wait_for(lambda: "deletionTimestamp" in
                 self.sim.get(self.ns_path("fg", name="child")).json()["metadata"],
                 message="child terminating")
        wait_for(lambda: self.sim.get(self.ns_path("fg", name="loose")).status == 404,
                 message="non-blocking dependent deleted")
        still = self.sim.get(self.ns_path("fg", name="owner"))
        self.assertEqual(still.status, 200)
        self.assertEqual(still.json()["metadata"]["finalizers"], ["foregroundDeletion"])
        self.drop_finalizers(self.ns_path("fg", name="child"))
        wait_for(lambda: self.sim.get(self.ns_path("fg", name="owner")).status == 404,
                 message="owner deleted after its dependents")

    def test_foreground_deletion_without_dependents(self):
        """(Foreground with no dependents: the finalizer goes at once and so does the object)"""
        self.create_ns("fg-alone")
        self.create_cm("fg-alone", "solo")
        path = self.ns_path("fg-alone", name="solo")
        r = self.sim.request("DELETE", path, {"propagationPolicy": "Foreground"})
        self.assertEqual(r.status, 200, r)
        wait_for(lambda: self.sim.get(path).status == 404, message="solo deleted")

    def test_deleted_namespace_stays_terminating(self):
        """a deleted namespace stays `Terminating` and creates in it get 403"""
        self.create_ns("term")
        self.create_cm("term", "held", finalizers=["example.com/hold"])
        r = self.sim.request("DELETE", "/api/v1/namespaces/term")
        self.assertEqual(r.status, 200, r)
        ns = self.sim.get("/api/v1/namespaces/term").json()
        self.assertEqual(ns["status"]["phase"], "Terminating")
        self.assertIn("deletionTimestamp", ns["metadata"])
        self.assertEqual(ns["spec"]["finalizers"], ["kubernetes"])
        r = self.sim.request("POST", self.ns_path("term"), {"metadata": {"name": "late"}})
        self.assertStatus(r, 403, "Forbidden")
        body = r.json()
        self.assertEqual(body["message"], 'configmaps "late" is forbidden: unable to create new '
                         'content in namespace term because it is being terminated')
        self.assertEqual(body["details"]["name"], "late")
        self.assertEqual(body["details"]["kind"], "configmaps")
        self.assertEqual(body["details"]["causes"],
                         [{"reason": "NamespaceTerminating",
                           "message": "namespace term is being terminated",
                           "field": "metadata.namespace"}])
        r = self.sim.request("POST", self.ns_path("term"), {"metadata": {"generateName": "g-"}})
        self.assertEqual(r.json()["details"]["name"], "g-")
        # Still terminating while its content has a finalizer; gone once it is empty.
        wait_for(lambda: "deletionTimestamp" in
                 self.sim.get(self.ns_path("term", name="held")).json()["metadata"],
                 message="content terminating")
        self.assertEqual(self.sim.get("/api/v1/namespaces/term").status, 200)
        self.drop_finalizers(self.ns_path("term", name="held"))
        wait_for(lambda: self.sim.get("/api/v1/namespaces/term").status == 404,
                 message="namespace removed")

    def test_deleted_event_carries_the_finalizers(self):
        """a DELETED watch event carries the object's finalizers as they were"""
        self.create_ns("ev")
        rv = self.sim.get(self.ns_path("ev")).json()["metadata"]["resourceVersion"]
        w = self.sim.watch(self.ns_path("ev") + "?watch=1&resourceVersion=" + rv)
        self.create_cm("ev", "fin", finalizers=["example.com/a", "example.com/b"])
        path = self.ns_path("ev", name="fin")
        self.assertEqual(self.sim.request("DELETE", path).status, 200)
        self.drop_finalizers(path)
        events = w.events_until(lambda e: e["type"] == "DELETED" and
                                e["object"]["metadata"]["name"] == "fin")
        gone = events[-1]["object"]["metadata"]
        self.assertEqual(gone["finalizers"], ["example.com/a", "example.com/b"])
        self.assertIn("deletionTimestamp", gone)
        last_stored = [e for e in events if e["type"] == "MODIFIED"][-1]["object"]["metadata"]
        self.assertGreater(int(gone["resourceVersion"]), int(last_stored["resourceVersion"]))
        w.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
