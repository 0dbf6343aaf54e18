"""Fidelity: metadata.managedFields as a real kube-apiserver records them for Update operations.

A real server keeps, for every write, one managedFields entry per (manager, operation,
subresource) with the fields that manager set, in the FieldsV1 format; the manager is the
`fieldManager` query parameter or the User-Agent's product name. Every Node, Service, Lease
and Event of a real cluster carries them, so clients decode their bytes."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from kubesim_harness import KubesimTestCase, wait_for  # noqa: E402

NODES = "/api/v1/nodes"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def entries(obj):
    return obj["metadata"].get("managedFields", [])


def entry(obj, manager, subresource=None):
    found = [e for e in entries(obj)
             if e.get("manager") == manager and e.get("subresource") == subresource]
    return found[0] if found else None


class ManagedFieldsTest(KubesimTestCase):
    KUBESIM_ARGS = ("--nodes=1", "--watch-cache-lag=0")

    def node_name(self):
        return self.sim.get(NODES).json()["items"][0]["metadata"]["name"]

    def patch(self, path, body, user_agent, content_type=MERGE, query=""):
        r = self.sim.request("PATCH", path + query, body, content_type=content_type,
                             headers={"User-Agent": user_agent})
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_kubelet_registered_node_has_kubelet_entries(self):
        """a kubelet-registered Node carries a `kubelet` Update entry (metadata, spec) and a
        `kubelet` entry with subresource `status` (conditions keyed by type)"""
        node = self.sim.get(NODES + "/" + self.node_name()).json()
        main = entry(node, "kubelet")
        status = entry(node, "kubelet", "status")
        self.assertIsNotNone(main, entries(node))
        self.assertIsNotNone(status, entries(node))
        for e in (main, status):
            self.assertEqual(e["operation"], "Update")
            self.assertEqual(e["apiVersion"], "v1")
            self.assertEqual(e["fieldsType"], "FieldsV1")
            self.assertRegex(e["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        labels = main["fieldsV1"]["f:metadata"]["f:labels"]
        self.assertEqual(labels["."], {})
        self.assertEqual(labels["f:kubernetes.io/hostname"], {})
        self.assertNotIn("f:status", main["fieldsV1"])
        self.assertNotIn("f:name", main["fieldsV1"]["f:metadata"])
        conds = status["fieldsV1"]["f:status"]["f:conditions"]
        ready = conds['k:{"type":"Ready"}']
        self.assertEqual(ready["."], {})
        for f in ("f:lastHeartbeatTime", "f:status", "f:type", "f:reason"):
            self.assertEqual(ready[f], {})
        # The order a real server serialises: manager, operation, apiVersion, time,
        # fieldsType, fieldsV1, subresource.
        self.assertEqual(list(status.keys()), ["manager", "operation", "apiVersion", "time",
                                               "fieldsType", "fieldsV1", "subresource"])

    def test_patch_by_other_user_agent_takes_fields(self):
        """a PATCH by another User-Agent adds its own entry (the product name before the first
        `/`) with the fields it changed, and takes them from the kubelet's set"""
        name = self.node_name()
        node = self.patch(NODES + "/" + name,
                          {"metadata": {"labels": {"kubernetes.io/hostname": "renamed",
                                                   "example.com/new": "x"}}},
                          "kubectl-label/v1.32.0 (linux/amd64) kubernetes/abcdef")
        mine = entry(node, "kubectl-label")
        self.assertIsNotNone(mine, entries(node))
        self.assertEqual(mine["fieldsV1"], {"f:metadata": {"f:labels": {
            "f:example.com/new": {}, "f:kubernetes.io/hostname": {}}}})
        kubelet_labels = entry(node, "kubelet")["fieldsV1"]["f:metadata"]["f:labels"]
        self.assertNotIn("f:kubernetes.io/hostname", kubelet_labels)
        self.assertIn("f:kubernetes.io/os", kubelet_labels)
        # An unchanged value written again is no change: nothing moves.
        again = self.patch(NODES + "/" + name,
                           {"metadata": {"labels": {"kubernetes.io/os": "linux"}}},
                           "other-tool/1.0")
        self.assertIsNone(entry(again, "other-tool"))
        self.assertEqual(again["metadata"]["resourceVersion"], node["metadata"]["resourceVersion"])

    def test_status_patch_is_recorded_with_subresource(self):
        """a write to the status subresource goes to the manager's `status` entry; list items
        of associative lists are keyed `k:{"type":...}`"""
        name = self.node_name()
        body = {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.7"}]}}
        node = self.patch(NODES + "/" + name + "/status", body,
                          "cloud-controller-manager/v1.26.0", content_type=STRATEGIC)
        mine = entry(node, "cloud-controller-manager", "status")
        self.assertIsNotNone(mine, entries(node))
        addresses = mine["fieldsV1"]["f:status"]["f:addresses"]
        self.assertEqual(addresses['k:{"type":"InternalIP"}'],
                         {".": {}, "f:address": {}, "f:type": {}})
        self.assertIsNone(entry(node, "cloud-controller-manager"))

    def test_field_manager_parameter(self):
        """`?fieldManager=` names the manager (over the User-Agent); more than 128 bytes is
        422 `fieldManager: Too long: must have at most 128 bytes`"""
        name = self.node_name()
        node = self.patch(NODES + "/" + name, {"metadata": {"annotations": {"a.example/x": "1"}}},
                          "ignored/1.0", query="?fieldManager=my-manager")
        self.assertIsNotNone(entry(node, "my-manager"), entries(node))
        self.assertIsNone(entry(node, "ignored"))
        r = self.sim.request("PATCH", NODES + "/" + name + "?fieldManager=" + "m" * 129,
                             {"metadata": {"annotations": {"a.example/x": "2"}}},
                             content_type=MERGE)
        self.assertStatus(r, 422, "Invalid")
        causes = r.json()["details"]["causes"]
        self.assertEqual([c["field"] for c in causes], ["fieldManager"])
        self.assertEqual(causes[0]["reason"], "FieldValueTooLong")
        self.assertEqual(r.json()["details"]["kind"], "PatchOptions")
        # Long User-Agents are cut to 128 bytes instead.
        node = self.patch(NODES + "/" + name, {"metadata": {"annotations": {"a.example/y": "1"}}},
                          "u" * 200 + "/1.0")
        self.assertIsNotNone(entry(node, "u" * 128), entries(node))

    def test_create_service_and_lists(self):
        """Service create: `spec.ports` keyed by port and protocol, `selector` atomic,
        `finalizers` a set (`v:"..."`), status not owned by the main resource"""
        svc = {"metadata": {"name": "mf-svc", "labels": {"app": "web"},
                            "finalizers": ["example.com/hold"]},
               "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                        "ports": [{"port": 80, "protocol": "TCP"}]}}
        r = self.sim.request("POST", "/api/v1/namespaces/default/services", svc,
                             headers={"User-Agent": "kubectl-create/v1.32.0"})
        self.assertEqual(r.status, 201, r)
        created = r.json()
        e = entry(created, "kubectl-create")
        self.assertIsNotNone(e, entries(created))
        f = e["fieldsV1"]
        self.assertEqual(f["f:metadata"]["f:labels"], {".": {}, "f:app": {}})
        self.assertEqual(f["f:metadata"]["f:finalizers"], {".": {}, 'v:"example.com/hold"': {}})
        self.assertEqual(f["f:spec"]["f:selector"], {})
        port = f["f:spec"]["f:ports"]['k:{"port":80,"protocol":"TCP"}']
        self.assertEqual(port["."], {})
        self.assertIn("f:port", port)
        self.assertNotIn("f:status", f)
        # A status write by another manager: its own status entry.
        st = {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.5"}]}}}
        r = self.sim.request("PATCH", "/api/v1/namespaces/default/services/mf-svc/status", st,
                             content_type=MERGE, headers={"User-Agent": "ccm/1"})
        self.assertEqual(r.status, 200, r)
        se = entry(r.json(), "ccm", "status")
        self.assertEqual(se["fieldsV1"], {"f:status": {"f:loadBalancer": {"f:ingress": {}}}})

    def test_removal_and_reset(self):
        """a field removed by a write leaves every set; an update that sends
        `managedFields: []` resets them (only the fields it changed are recorded)"""
        body = {"metadata": {"name": "mf-cm", "labels": {"a": "1", "b": "2"}},
                "data": {"k": "v"}}
        r = self.sim.request("POST", "/api/v1/namespaces/default/configmaps", body,
                             headers={"User-Agent": "creator/1"})
        self.assertEqual(r.status, 201, r)
        r = self.sim.request("PATCH", "/api/v1/namespaces/default/configmaps/mf-cm",
                             {"metadata": {"labels": {"a": None}}}, content_type=MERGE,
                             headers={"User-Agent": "remover/1"})
        self.assertEqual(r.status, 200, r)
        cm = r.json()
        self.assertIsNone(entry(cm, "remover"))
        self.assertEqual(entry(cm, "creator")["fieldsV1"]["f:metadata"]["f:labels"],
                         {".": {}, "f:b": {}})
        cm["metadata"]["managedFields"] = []
        cm["data"]["k"] = "changed"
        r = self.sim.request("PUT", "/api/v1/namespaces/default/configmaps/mf-cm", cm,
                             headers={"User-Agent": "resetter/1"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(entries(r.json()), [{
            "manager": "resetter", "operation": "Update", "apiVersion": "v1",
            "time": entries(r.json())[0]["time"], "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:k": {}}}}])
        # A PUT that sends the managedFields it read keeps them as they are.
        cm = r.json()
        cm["data"]["k"] = "again"
        r = self.sim.request("PUT", "/api/v1/namespaces/default/configmaps/mf-cm", cm,
                             headers={"User-Agent": "resetter/1"})
        self.assertEqual([e["manager"] for e in entries(r.json())], ["resetter"])

    def test_table_rows_and_metadata_answers(self):
        """PartialObjectMetadata answers keep managedFields; Table rows do not"""
        name = self.node_name()
        r = self.sim.get(NODES + "/" + name, headers={
            "Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(entries(r.json()))
        r = self.sim.get(NODES, headers={"Accept": "application/json;as=Table;g=meta.k8s.io;v=v1"})
        self.assertEqual(r.status, 200, r)
        for row in r.json()["rows"]:
            self.assertNotIn("managedFields", row["object"]["metadata"])

    def test_heartbeats_keep_kubelet_ownership(self):
        """the simulated kubelet's status updates and Lease renewals are written as `kubelet`"""
        name = self.node_name()
        self.sim.admin("POST", "nodes/%s/ready" % name, {"status": "False"})
        node = self.sim.get(NODES + "/" + name).json()
        status = entry(node, "kubelet", "status")
        self.assertIn('k:{"type":"Ready"}', status["fieldsV1"]["f:status"]["f:conditions"])
        lease = self.sim.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"
                             + name).json()
        self.assertEqual([e["manager"] for e in entries(lease)], ["kubelet"])
        self.sim.admin("POST", "nodes/%s/ready" % name, {"status": "True"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
