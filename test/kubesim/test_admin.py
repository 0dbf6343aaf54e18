"""kubesim's simulated cluster and admin API: simulated kubelets (registration, heartbeats,
Ready/NotReady/Unknown, bulk add/delete), fault injection, closing watches, restarts with kept
or lost state, the state file across process restarts, manifests, token files and flags, and
the recorded authorization decisions (--record-authz, GET/DELETE /admin/authz)."""

import http.client
import json
import os
import ssl
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from kubesim_harness import Kubesim, KubesimTestCase, wait_for  # noqa: E402

NODES = "/api/v1/nodes"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"


def ready_status(node):
    for c in node["status"]["conditions"]:
        if c["type"] == "Ready":
            return c["status"]
    return None


class SimulatedNodesTest(KubesimTestCase):
    KUBESIM_ARGS = ("--nodes=2", "--heartbeat-period=200ms", "--node-status-period=300ms",
                    "--provided-node-ip")

    def test_registration_looks_like_external_cloud_provider_kubelets(self):
        n = self.sim.get(NODES + "/node-00001").json()
        # The kubelet registers with the uninitialized taint; admission (TaintNodesByCondition)
        # appends not-ready, which no node lifecycle controller removes in kubesim.
        self.assertEqual(n["spec"]["taints"], [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                                                "value": "true", "effect": "NoSchedule"},
                                               {"key": "node.kubernetes.io/not-ready",
                                                "effect": "NoSchedule"}])
        self.assertEqual(n["status"]["addresses"], [{"type": "Hostname", "address": "node-00001"}])
        self.assertIn("alpha.kubernetes.io/provided-node-ip", n["metadata"]["annotations"])
        self.assertEqual({c["type"] for c in n["status"]["conditions"]},
                         {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"})
        self.assertGreater(len(json.dumps(n)), 3000)  # images and all: several KB
        lease = self.sim.get(LEASE + "node-00001").json()
        self.assertEqual(lease["spec"]["holderIdentity"], "node-00001")
        self.assertEqual(lease["metadata"]["ownerReferences"][0]["uid"], n["metadata"]["uid"])

    def test_heartbeats_and_conditions(self):
        first = self.sim.get(LEASE + "node-00002").json()["spec"]["renewTime"]
        wait_for(lambda: self.sim.get(LEASE + "node-00002").json()["spec"]["renewTime"] != first,
                 message="lease renewal")
        self.sim.admin("POST", "nodes/node-00002/ready", {"status": "False"})
        n = self.sim.get(NODES + "/node-00002").json()
        self.assertEqual(ready_status(n), "False")
        self.assertEqual([c for c in n["status"]["conditions"] if c["type"] == "Ready"][0]["reason"],
                         "KubeletNotReady")
        self.sim.admin("POST", "nodes/node-00002/ready", {"status": "Unknown"})
        n = self.sim.get(NODES + "/node-00002").json()
        self.assertTrue(all(c["status"] == "Unknown" for c in n["status"]["conditions"]))
        # Unknown means a silent kubelet: the lease stops moving.
        frozen = self.sim.get(LEASE + "node-00002").json()["spec"]["renewTime"]
        kubelets = {k["name"]: k for k in self.sim.admin("GET", "nodes")["nodes"]}
        self.assertFalse(kubelets["node-00002"]["heartbeats"])
        renewals = kubelets["node-00002"]["leaseRenewals"]
        wait_for(lambda: {k["name"]: k for k in self.sim.admin("GET", "nodes")["nodes"]}
                 ["node-00001"]["leaseRenewals"] > renewals + 2, message="other node heartbeats")
        self.assertEqual(self.sim.get(LEASE + "node-00002").json()["spec"]["renewTime"], frozen)
        self.sim.admin("POST", "nodes/node-00002/heartbeats", {"enabled": True})
        wait_for(lambda: ready_status(self.sim.get(NODES + "/node-00002").json()) == "True",
                 message="node Ready again")

    def test_bulk_add_and_delete(self):
        added = self.sim.admin("POST", "nodes", {"count": 150})["names"]
        self.assertEqual(len(added), 150)
        self.assertEqual(len(self.sim.get(NODES).json()["items"]), 152)
        self.assertEqual(len(self.sim.get(
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases").json()["items"]), 152)
        self.sim.admin("POST", "nodes/ready", {"names": added[:3], "status": "False"})
        self.assertEqual(ready_status(self.sim.get(NODES + "/" + added[0]).json()), "False")
        self.sim.admin("DELETE", "nodes/" + added[0])
        self.assertEqual(self.sim.get(NODES + "/" + added[0]).status, 404)
        self.assertEqual(self.sim.get(LEASE + added[0]).status, 404)
        # A node deleted through the API (e.g. by a CCM) stops its kubelet and loses its lease.
        self.sim.request("DELETE", NODES + "/" + added[1])
        wait_for(lambda: self.sim.get(LEASE + added[1]).status == 404, message="lease GC")
        wait_for(lambda: added[1] not in [k["name"] for k in self.sim.admin("GET", "nodes")["nodes"]],
                 message="kubelet forgotten")
        named = self.sim.admin("POST", "nodes", {"names": ["ip-10-0-0-1.ec2.internal"]})
        self.assertEqual(named["names"], ["ip-10-0-0-1.ec2.internal"])
        self.assertEqual(self.sim.get(NODES + "/ip-10-0-0-1.ec2.internal").status, 200)

    def test_named_nodes_carry_their_kubelet_labels_from_creation(self):
        # As a kubelet's --node-labels: on the Node the watch first shows, not patched on
        # after it (a controller that acts on the first event must see them).
        rv = self.sim.get(NODES).json()["metadata"]["resourceVersion"]
        watch = self.sim.watch(NODES + "?watch=1&resourceVersion=" + rv)
        try:
            self.sim.admin("POST", "nodes", {"names": ["metal-9"], "labels": {"cloud": "metal"}})
            seen = watch.events_until(lambda e: e["object"]["metadata"]["name"] == "metal-9")
        finally:
            watch.close()
        first = seen[-1]
        self.assertEqual(first["type"], "ADDED")
        labels = first["object"]["metadata"]["labels"]
        self.assertEqual(labels["cloud"], "metal")
        self.assertEqual(labels["kubernetes.io/hostname"], "metal-9")  # the usual ones stay
        for bad in ({"cloud": 1}, ["cloud=metal"]):
            r = self.sim.request("POST", "/admin/nodes", body={"names": ["metal-10"],
                                                               "labels": bad})
            self.assertEqual(r.status, 400, r)
        self.assertEqual(self.sim.get(NODES + "/metal-10").status, 404)
        # Labels only with names: never dropped without a word.
        before = len(self.sim.get(NODES).json()["items"])
        r = self.sim.request("POST", "/admin/nodes", body={"count": 2, "labels": {"a": "b"}})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(len(self.sim.get(NODES).json()["items"]), before)
        # A label the API server would refuse on a kubelet's Node is refused here too.
        r = self.sim.request("POST", "/admin/nodes", body={"names": ["metal-11"],
                                                           "labels": {"bad key!": "x"}})
        self.assertGreaterEqual(r.status, 400, r)
        self.assertEqual(self.sim.get(NODES + "/metal-11").status, 404)


class FaultTest(KubesimTestCase):
    KUBESIM_ARGS = ("--nodes=1", "--fault=verb=get,path=/api/v1/namespaces/flag/*,status=500,count=1")

    def test_0_flag_fault(self):  # runs first: other tests clear the rules
        r = self.sim.get("/api/v1/namespaces/flag/configmaps/x")
        self.assertEqual(r.status, 500)
        self.assertEqual(r.json()["reason"], "InternalError")
        self.assertEqual(self.sim.get("/api/v1/namespaces/flag/configmaps/x").status, 404)

    def test_error_faults_by_verb_path_and_count(self):
        f = self.sim.admin("POST", "faults", {"verb": "patch", "path": "/api/v1/nodes/*",
                                              "status": 503, "count": 2, "retryAfter": 3})
        patch = lambda: self.sim.request("PATCH", NODES + "/node-00001", {},  # noqa: E731
                                         content_type="application/merge-patch+json")
        for _ in range(2):
            r = patch()
            self.assertEqual(r.status, 503)
            self.assertEqual(r.json()["reason"], "ServiceUnavailable")
            self.assertEqual(r.header("Retry-After"), "3")
        self.assertEqual(patch().status, 200)
        self.assertEqual(self.sim.get(NODES + "/node-00001").status, 200)  # GETs untouched
        rules = self.sim.admin("GET", "faults")["faults"]
        self.assertEqual([r["fired"] for r in rules if r["id"] == f["id"]], [2])
        self.sim.admin("DELETE", "faults")

        self.sim.admin("POST", "faults", {"path": "/api/v1/nodes", "status": 429,
                                          "retryAfter": 1, "count": 1})
        r = self.sim.get(NODES)
        self.assertEqual(r.status, 429)
        self.assertEqual(r.header("Retry-After"), "1")
        self.assertEqual(r.json()["details"]["retryAfterSeconds"], 1)
        self.sim.admin("POST", "faults", {"path": "/api/v1/nodes", "status": 429,
                                          "style": "apf", "count": 1})
        r = self.sim.get(NODES)
        self.assertEqual((r.status, r.body), (429, "Too many requests, please try again later.\n"))
        self.assertIsNotNone(r.header("X-Kubernetes-PF-FlowSchema-UID"))
        self.sim.admin("POST", "faults", {"verb": "update", "path": "/api/v1/nodes/*",
                                          "status": 409, "count": 1})
        cur = self.sim.get(NODES + "/node-00001").json()
        r = self.sim.request("PUT", NODES + "/node-00001", cur)
        self.assertEqual(r.status, 409)
        self.assertEqual(r.json()["message"],
                         'Operation cannot be fulfilled on nodes "node-00001": the object has '
                         'been modified; please apply your changes to the latest version and try '
                         'again')
        self.sim.admin("POST", "faults", {"path": "*", "status": 500, "probability": 0})
        self.assertEqual(self.sim.get(NODES).status, 200)
        self.sim.admin("DELETE", "faults")

    def test_closing_connections_spares_those_opened_after_the_answer(self):
        def version(conn):  # one request on a kept-alive connection
            conn.request("GET", "/version",
                         headers={"Authorization": "Bearer " + self.sim.admin_token})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())["gitVersion"][:1]

        watch = self.sim.watch(NODES + "?watch=1")
        self.assertEqual(watch.status, 200)
        kept = self.sim.connection()  # a kept-alive connection with one answer behind it
        self.assertEqual(version(kept), (200, "v"))
        closed = self.sim.admin("POST", "connections/close")["closed"]
        self.assertGreaterEqual(closed, 3)  # the watch, the kept-alive one, the admin's own
        # The watch ends (after the ADDED events it had already sent for the current nodes).
        self.assertEqual(watch.next()["type"], "ADDED")  # the one node
        self.assertIsNone(watch.next())
        with self.assertRaises((http.client.HTTPException, ConnectionError, ssl.SSLError, OSError)):
            version(kept)
        # A connection opened right after the answer is left alone, however long it lives.
        fresh = self.sim.connection()
        for _ in range(5):
            self.assertEqual(version(fresh), (200, "v"))
            time.sleep(0.05)
        fresh.close()
        watch.close()

    def test_drop_latency_and_watch_expiry(self):
        self.sim.admin("POST", "faults", {"verb": "get", "path": "/api/v1/nodes/node-00001",
                                          "action": "drop", "count": 1})
        with self.assertRaises((http.client.HTTPException, ConnectionError, ssl.SSLError, OSError)):
            self.sim.get(NODES + "/node-00001")
        self.assertEqual(self.sim.get(NODES + "/node-00001").status, 200)
        self.sim.admin("POST", "faults", {"path": "/version", "latencyMs": 50, "count": 1})
        self.assertEqual(self.sim.get("/version").status, 200)
        self.assertEqual([r["fired"] for r in self.sim.admin("GET", "faults")["faults"]
                          if r["path"] == "/version"], [1])
        self.sim.admin("POST", "faults", {"verb": "watch", "path": "/api/v1/nodes", "status": 410,
                                          "count": 1})
        w = self.sim.watch(NODES + "?watch=1&resourceVersion=1")
        self.assertEqual(w.status, 200)
        ev = w.next()
        self.assertEqual((ev["type"], ev["object"]["code"]), ("ERROR", 410))
        self.assertIsNone(w.next())
        self.sim.admin("DELETE", "faults")


class RestartTest(unittest.TestCase):
    def test_restarts_and_state_file(self):
        sim = Kubesim("--nodes=3", "--heartbeat-period=1h")
        state = os.path.join(sim.workdir, "state.json")
        sim.args.append("--state-file=" + state)
        sim.start()
        try:
            sim.request("POST", "/api/v1/namespaces/default/configmaps",
                        {"metadata": {"name": "keep-me"}, "data": {"k": "v"}})
            rv = int(sim.get(NODES).json()["metadata"]["resourceVersion"])
            w = sim.watch(NODES + "?watch=1&resourceVersion=%d" % rv)
            before = sim.admin("GET", "status")["restarts"]
            sim.request("POST", "/admin/restart", {"keepState": True, "downMs": 200})
            self.assertIsNone(w.next())  # the watch was cut
            sim.wait_restart(before)
            self.assertEqual(sim.get("/api/v1/namespaces/default/configmaps/keep-me").status, 200)
            rv2 = int(sim.get(NODES).json()["metadata"]["resourceVersion"])
            self.assertGreaterEqual(rv2, rv)
            # History is gone: resuming from the old RV gets 410.
            w = sim.watch(NODES + "?watch=1&resourceVersion=%d" % (rv - 1))
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["code"]), ("ERROR", 410))
            # Lost state: a fresh cluster, but the kubelets register their nodes again.
            before = sim.admin("GET", "status")["restarts"]
            sim.request("POST", "/admin/restart", {"keepState": False})
            sim.wait_restart(before)
            self.assertEqual(sim.get("/api/v1/namespaces/default/configmaps/keep-me").status, 404)
            nodes = sim.get(NODES).json()
            self.assertEqual(len(nodes["items"]), 3)
            self.assertGreater(int(nodes["metadata"]["resourceVersion"]), rv2)
            self.assertEqual(sim.get("/api/v1/namespaces/kube-system").status, 200)
            # Process restart through the state file keeps objects and credentials.
            sim.request("POST", "/api/v1/namespaces/default/configmaps",
                        {"metadata": {"name": "persisted"}})
            rv3 = int(sim.get(NODES).json()["metadata"]["resourceVersion"])
            sim.stop()
            sim.start()
            self.assertEqual(sim.get("/api/v1/namespaces/default/configmaps/persisted").status, 200)
            self.assertGreaterEqual(int(sim.get(NODES).json()["metadata"]["resourceVersion"]), rv3)
            self.assertEqual(len(sim.get(NODES).json()["items"]), 3)
        finally:
            sim.cleanup()

    def test_kubelets_in_name_order(self):
        # The simulated kubelets' table is hashed; where its order shows, it is the names'.
        sim = Kubesim("--nodes=2", "--heartbeat-period=1h", "--node-status-period=1h")
        sim.start()
        try:
            scrambled = ["zz-node", "node-00000", "mm-node", "aa-node", "yy-node", "bb-node",
                         "node-00003", "cc-node", "ip-10-0-0-1.ec2.internal", "b-node"]
            sim.admin("POST", "nodes", {"names": scrambled})
            names = [k["name"] for k in sim.admin("GET", "nodes")["nodes"]]
            self.assertEqual(names, sorted(scrambled + ["node-00001", "node-00002"]))
            # A restart that lost the state: the kubelets register again in name order, so the
            # Nodes' resourceVersions ascend with their names.
            before = sim.admin("GET", "status")["restarts"]
            sim.request("POST", "/admin/restart", {"keepState": False})
            sim.wait_restart(before)
            items = sim.get(NODES).json()["items"]
            by_rv = sorted(items, key=lambda n: int(n["metadata"]["resourceVersion"]))
            self.assertEqual([n["metadata"]["name"] for n in by_rv], names)
            self.assertEqual([k["name"] for k in sim.admin("GET", "nodes")["nodes"]], names)
        finally:
            sim.cleanup()


class FlagsTest(unittest.TestCase):
    def test_manifests_token_file_and_sa_token(self):
        sim = Kubesim()
        mdir = os.path.join(sim.workdir, "manifests")
        os.makedirs(mdir)
        with open(os.path.join(mdir, "ccm.yaml"), "w") as f:
            f.write("""apiVersion: v1
kind: ServiceAccount
metadata:
  name: cloud-controller-manager
  namespace: kube-system
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ignored
  namespace: kube-system
spec: {}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:cloud-controller-manager
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch, patch, update]
- apiGroups: [""]
  resources: [nodes/status]
  verbs: [patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:cloud-controller-manager
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:cloud-controller-manager
subjects:
- kind: ServiceAccount
  name: cloud-controller-manager
  namespace: kube-system
""")
        tokens = os.path.join(sim.workdir, "tokens.csv")
        with open(tokens, "w") as f:
            f.write('static-token,carol,1001,"ops,system:masters"\n')
        sa_file = os.path.join(sim.workdir, "ccm.token")
        sim.args += ["--manifests=" + mdir, "--token-auth-file=" + tokens, "--nodes=1",
                     "--sa-token=kube-system/cloud-controller-manager=" + sa_file]
        sim.start()
        try:
            with open(sa_file) as f:
                token = f.read().strip()
            self.assertEqual(sim.get(NODES, token=token).status, 200)
            self.assertEqual(sim.request("PATCH", NODES + "/node-00001/status", {},
                                         content_type="application/merge-patch+json",
                                         token=token).status, 200)
            r = sim.request("DELETE", NODES + "/node-00001", token=token)
            self.assertEqual(r.status, 403)
            self.assertIn('User "system:serviceaccount:kube-system:cloud-controller-manager" '
                          'cannot delete resource "nodes"', r.json()["message"])
            self.assertEqual(sim.get(NODES, token="static-token").status, 200)
            # --manifests loads RBAC, ServiceAccounts and Namespaces only: not the DaemonSet.
            self.assertEqual(sim.get("/apis/apps/v1/namespaces/kube-system/daemonsets/"
                                     "cloud-controller-manager").status, 404)
        finally:
            sim.cleanup()


READER_RBAC = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: node-reader
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list]
- nonResourceURLs: [/metrics]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: node-reader
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects:
- {kind: ServiceAccount, name: reader, namespace: kube-system}
- {kind: User, name: scraper}
"""


class AuthzRecordTest(unittest.TestCase):
    SA = "system:serviceaccount:kube-system:reader"

    def start(self, *args):
        sim = Kubesim(*args)
        self.addCleanup(sim.cleanup)
        path = os.path.join(sim.workdir, "rbac.yaml")
        with open(path, "w") as f:
            f.write(READER_RBAC)
        sim.args += ["--manifests=" + path, "--nodes=1"]
        return sim.start()

    def decisions(self, sim, user):
        return sim.admin("GET", "authz?user=" + user)["decisions"]

    def test_decisions_with_their_rules_counts_and_sources(self):
        sim = self.start("--record-authz")
        token = sim.admin("POST", "credentials", {"serviceAccount": "kube-system/reader"})["token"]
        for _ in range(3):
            self.assertEqual(sim.get(NODES, token=token).status, 200)
        self.assertEqual(sim.get(NODES + "/node-00001", token=token).status, 200)
        self.assertEqual(sim.request("DELETE", NODES + "/node-00001", token=token).status, 403)
        # A SubjectAccessReview (made by the admin) is recorded for the user it is about.
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": "scraper", "nonResourceAttributes": {"verb": "get",
                                                                         "path": "/metrics"}}}
        r = sim.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
        self.assertEqual(r.status, 201)
        self.assertTrue(r.json()["status"]["allowed"])
        # The answer carries the RBAC authorizer's reason, whatever is recorded.
        self.assertEqual(r.json()["status"]["reason"],
                         'RBAC: allowed by ClusterRoleBinding "node-reader" of ClusterRole '
                         '"node-reader" to User "scraper"')

        got = self.decisions(sim, self.SA)
        rule = {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["nodes"]}
        common = {"user": self.SA, "source": "request", "apiGroup": "", "resource": "nodes",
                  "subresource": "", "namespace": ""}
        self.assertEqual(got, [
            dict(common, groups=got[0]["groups"], verb="list", name="", allowed=True,
                 binding="ClusterRoleBinding/node-reader", role="ClusterRole/node-reader",
                 ruleIndex=0, rule=rule, count=3),
            dict(common, groups=got[0]["groups"], verb="get", name="node-00001", allowed=True,
                 binding="ClusterRoleBinding/node-reader", role="ClusterRole/node-reader",
                 ruleIndex=0, rule=rule, count=1),
            dict(common, groups=got[0]["groups"], verb="delete", name="node-00001",
                 allowed=False, binding="", role="", ruleIndex=-1, rule=None, count=1)])
        self.assertIn("system:serviceaccounts:kube-system", got[0]["groups"])
        self.assertEqual(self.decisions(sim, "scraper"), [{
            "user": "scraper", "groups": [], "source": "review", "verb": "get",
            "nonResourceURL": "/metrics", "allowed": True,
            "binding": "ClusterRoleBinding/node-reader", "role": "ClusterRole/node-reader",
            "ruleIndex": 1, "rule": {"verbs": ["get"], "nonResourceURLs": ["/metrics"]},
            "count": 1}])
        # The admin's own requests are there too (system:masters), the whole list unfiltered.
        everything = sim.admin("GET", "authz")
        self.assertEqual(everything["dropped"], 0)
        self.assertTrue(any(d["user"] == "kubesim-admin" and d["reason"] == "system:masters"
                            for d in everything["decisions"]))
        cleared = sim.admin("DELETE", "authz")["cleared"]
        self.assertEqual(cleared, len(everything["decisions"]))
        self.assertEqual(self.decisions(sim, self.SA), [])

    def test_off_by_default(self):
        sim = self.start()
        r = sim.get("/admin/authz")
        self.assertEqual(r.status, 400)
        self.assertIn("--record-authz", r.json()["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
