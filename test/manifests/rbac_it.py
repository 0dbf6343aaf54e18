#!/usr/bin/python3
"""cloud-controller-manager with no authority but what manifests/ grants its service account.

kubesim loads manifests/ (ServiceAccount, ClusterRole, Roles and bindings) and records every
authorization decision (--record-authz). Two replicas of the real binary run with a kubeconfig
holding a token of kube-system/cloud-controller-manager (not an admin), with leader election,
node IPAM and cloud routes, against fake-cloud. The test walks through node initialisation,
routes, a Service of type LoadBalancer (ingress, finalizer, events, their de-duplication,
deletion and clean-up), the deletion of a NotReady node whose machine vanished, /metrics
scraped by a user RBAC allows (through the host's TokenReview and SubjectAccessReview, made
with the service account's rights) and refused to one it does not, and a leader hand-over.

Then:
  - any refusal of the service account (recorded by kubesim, or a Forbidden in a replica's
    log) fails the test: a permission is missing from the manifests;
  - every permission the manifests grant the service account is listed as used (with a count)
    or unused; an unused one fails the test unless the manifest keeps it on purpose with a
    "kept-unused:" comment saying why.
A negative control runs the host with one rule removed and checks that the refusal is seen.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import json
import os
import signal
import socket
import ssl
import sys
import unittest
import urllib.error
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("CCM_SOURCE_DIR", ""), "test", "support"))
from harness import ApiError, Ccm, Cluster, is_initialized, wait_for  # noqa: E402
import rbac_usage  # noqa: E402

SOURCE = os.environ.get("CCM_SOURCE_DIR", "")
MANIFESTS = os.path.join(SOURCE, "manifests")
RBAC_DIR = os.path.join(MANIFESTS, "rbac")
SA = {"kind": "ServiceAccount", "name": "cloud-controller-manager", "namespace": "kube-system"}
SA_USER = "system:serviceaccount:kube-system:cloud-controller-manager"
FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cloud-controller-manager"
CLUSTER_CIDR = "10.244.0.0/16"
ELECTION = ["--leader-elect=true", "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms"]
CONTROLLERS = ["--configure-cloud-routes=true", "--allocate-node-cidrs=true",
               "--cluster-cidr=" + CLUSTER_CIDR, "--route-reconciliation-period=1s",
               "--node-monitor-period=1s"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def condition(node, kind):
    for c in node.get("status", {}).get("conditions", []) or []:
        if c["type"] == kind:
            return c
    return None


def forbidden_lines(text):
    """Lines of a replica's log about a Forbidden answer of the API server (the replica's
    own refusals of scrapers, "Forbidden request on the secure port", are not that)."""
    return [line for line in text.splitlines()
            if ("forbidden" in line.lower() or " 403" in line or "=403" in line) and
            "on the secure port" not in line]


class Replica:
    def __init__(self, ccm, port):
        self.ccm = ccm
        self.port = port

    def leads(self):
        return "Became leader: starting controllers" in self.ccm.output()


class RbacFromManifestsTest(unittest.TestCase):
    maxDiff = None

    def start_cluster(self, manifests, nodes):
        c = Cluster(nodes=nodes, kubesim_args=["--manifests=" + manifests, "--record-authz",
                                               "--heartbeat-period=1s"])
        c.__enter__()
        self.addCleanup(c.__exit__, None, None, None)
        # The service account must come from the manifests: do not let kubesim create it.
        sa = c.admin("POST", "/credentials", {
            "serviceAccount": "kube-system/cloud-controller-manager", "create": False,
            "kubeconfig": os.path.join(c.tmp, "ccm.kubeconfig")})
        self.assertEqual(sa["user"], SA_USER)
        c.sa_kubeconfig = sa["kubeconfig"]
        c.sa_token = sa["token"]
        return c

    def start_replica(self, c, cloud, name, extra=()):
        port = free_port()
        args = [a for a in c.ccm_args(cloud, list(extra))
                if not a.startswith(("--kubeconfig=", "--secure-port=", "--leader-elect="))]
        args += ["--kubeconfig=" + c.sa_kubeconfig, "--bind-address=127.0.0.1",
                 "--secure-port=%d" % port] + ELECTION
        p = Ccm(args, os.path.join(c.tmp, name + ".log"))
        c.processes.append(p)
        r = Replica(p, port)
        wait_for(lambda: "Serving securely" in p.output() or not p.alive(),
                 name + " serving on its secure port", timeout=30)
        self.assertTrue(p.alive(), p.output()[-3000:])
        return r

    def decisions(self, c):
        return c.admin("GET", "/authz?user=" + SA_USER)["decisions"]

    def refusals(self, c):
        return [d for d in self.decisions(c) if not d["allowed"]]

    def scrape(self, c, replica, token, path="/metrics"):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the replica's self-signed serving certificate
        req = urllib.request.Request("https://127.0.0.1:%d%s" % (replica.port, path))
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def external_roles(self, c):
        """The built-in roles the manifests bind to, as the server holds them."""
        out = {}
        for item in c.api.get("/apis/rbac.authorization.k8s.io/v1/clusterroles")["items"]:
            out["ClusterRole/" + item["metadata"]["name"]] = item.get("rules") or []
        for item in c.api.get("/apis/rbac.authorization.k8s.io/v1/roles")["items"]:
            out["Role/%s/%s" % (item["metadata"]["namespace"], item["metadata"]["name"])] = \
                item.get("rules") or []
        return out

    # ------------------------------------------------------------------------------------------

    def test_the_manifests_grant_exactly_what_the_host_uses(self):
        c = self.start_cluster(MANIFESTS, nodes=3)
        cloud = c.fake_cloud(
            autoInstances={"zones": ["zone-a"]},
            loadBalancer={"ipPool": "203.0.113.0/24"},
            # Two failed ensures, retried at once: the failure event repeats (a PATCH of the
            # first one) before the load balancer is made.
            faults=[{"op": "ensureLoadBalancer", "code": "UNAVAILABLE",
                     "message": "cloud busy", "count": 2, "retryAfter": "200ms"}])
        a = self.start_replica(c, cloud, "replica-a", CONTROLLERS)
        b = self.start_replica(c, cloud, "replica-b", CONTROLLERS)

        # Leader election: exactly one leads.
        wait_for(lambda: a.leads() or b.leads(), "a leader")
        leader, other = (a, b) if a.leads() else (b, a)

        # Initialisation, IPAM, routes.
        def settled():
            nodes = c.nodes()
            return len(nodes) == 3 and all(
                is_initialized(n) and n["spec"].get("podCIDR") and
                (condition(n, "NetworkUnavailable") or {}).get("reason") == "RouteCreated"
                for n in nodes)
        wait_for(settled, "nodes initialised, given pod CIDRs and routed")
        routes = {r["targetNode"]: r["destinationCIDR"] for r in c.cloud_state()["routes"]}
        self.assertEqual(routes, {n["metadata"]["name"]: n["spec"]["podCIDR"]
                                  for n in c.nodes()})
        for n in c.nodes():
            self.assertEqual(n["metadata"]["labels"]["topology.kubernetes.io/zone"], "zone-a")

        # A Service of type LoadBalancer.
        svc_path = "/api/v1/namespaces/default/services/web"
        c.api.post("/api/v1/namespaces/default/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
        svc = wait_for(lambda: (lambda s: s if s["status"].get("loadBalancer", {})
                                .get("ingress") else None)(c.api.get(svc_path)),
                       "the Service's ingress")
        self.assertEqual(svc["status"]["loadBalancer"]["ingress"][0]["ip"], "203.0.113.1")
        self.assertIn(FINALIZER, svc["metadata"]["finalizers"])
        lbs = c.cloud_state()["loadBalancers"]
        self.assertEqual([lb["service"] for lb in lbs], ["web"])

        # Events: written by the host (core/v1), readable in both API groups.
        failed = wait_for(lambda: [e for e in c.events("SyncLoadBalancerFailed")
                                   if e.get("count", 1) >= 2], "the repeated failure event")
        self.assertEqual(len(failed), 1, failed)
        wait_for(lambda: c.events("EnsuredLoadBalancer"), "the EnsuredLoadBalancer event")
        new_api = c.api.get("/apis/events.k8s.io/v1/namespaces/default/events")["items"]
        self.assertTrue(any(e.get("reason") == "EnsuredLoadBalancer" and
                            e.get("regarding", {}).get("name") == "web" for e in new_api),
                        new_api)
        wait_for(lambda: [e for e in c.events(namespace="kube-system")
                          if e.get("reason") == "LeaderElection"], "the LeaderElection event")

        # Deleting the Service deletes the cloud load balancer, then the finalizer goes.
        c.api.delete(svc_path)
        wait_for(lambda: not c.cloud_state()["loadBalancers"], "the cloud load balancer deleted")

        def svc_gone():
            try:
                c.api.get(svc_path)
                return False
            except ApiError as e:
                return e.code == 404
        wait_for(svc_gone, "the Service gone once its finalizer is removed")
        self.assertEqual(c.cloud_state()["stats"]["lbDeletes"], 1)

        # Lifecycle: a NotReady node whose machine vanished is deleted (with its route).
        c.update_cloud(instances=[{"name": "node-00003", "state": "absent"}])
        c.set_ready(["node-00003"], "False")
        wait_for(lambda: not c.node_exists("node-00003"), "the vanished node deleted")
        wait_for(lambda: "node-00003" not in [r["targetNode"] for r in
                                              c.cloud_state()["routes"]],
                 "its route deleted")

        # /metrics: a user RBAC allows gets them (TokenReview + SubjectAccessReview by the
        # host, with the service account's rights); one it does not, and an anonymous
        # request (system:anonymous, reviewed the same way), get 403.
        scraper = c.admin("POST", "/credentials", {"user": "metrics-scraper"})["token"]
        nobody = c.admin("POST", "/credentials", {"user": "nobody"})["token"]
        c.api.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "metrics-scraper"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:cloud-controller-manager:metrics-reader"},
            "subjects": [{"kind": "User", "name": "metrics-scraper"}]})
        for replica in (leader, other):
            code, body = self.scrape(c, replica, scraper)
            self.assertEqual(code, 200, body[:500])
            self.assertIn("# TYPE", body)
            self.assertEqual(self.scrape(c, replica, nobody)[0], 403)
            self.assertEqual(self.scrape(c, replica, None)[0], 403)
            self.assertEqual(self.scrape(c, replica, None, "/healthz")[0], 200)
        code, body = self.scrape(c, leader, scraper)
        self.assertIn("workqueue_adds_total", body)
        reviews = c.admin("GET", "/authz?user=metrics-scraper")["decisions"]
        self.assertTrue(any(d["source"] == "review" and d["allowed"] and
                            d["role"] == "ClusterRole/system:cloud-controller-manager:metrics-reader"
                            for d in reviews), reviews)

        # Hand-over: the leader stops (releasing the lease); the other takes over and works.
        self.assertEqual(leader.ccm.stop(signal.SIGTERM), 0)
        wait_for(other.leads, "the other replica takes over")
        # A node that joins with its pod CIDR already set (so only the cloud-node controller
        # writes to it), whose first PATCH meets a conflict: the controller re-reads it (GET)
        # and tries again.
        new = "node-00009"
        c.admin("POST", "/faults", {"verb": "patch", "path": "/api/v1/nodes/" + new,
                                    "status": 409, "count": 1})
        c.api.post("/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": new},
            "spec": {"podCIDR": "10.244.200.0/24", "podCIDRs": ["10.244.200.0/24"],
                     "taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                                 "value": "true", "effect": "NoSchedule"}]}})
        wait_for(lambda: is_initialized(c.node(new)), "the new leader initialises a new node")
        self.assertEqual([f["fired"] for f in c.admin("GET", "/faults")["faults"]], [1])
        wait_for(lambda: new in [r["targetNode"] for r in c.cloud_state()["routes"]],
                 "the new node's route")
        self.assertEqual(other.ccm.stop(signal.SIGTERM), 0)

        # --- the verdict ----------------------------------------------------------------------
        decisions = self.decisions(c)
        self.assertTrue(decisions, "kubesim recorded nothing for the service account")
        refused = [rbac_usage.decision_text(d) for d in decisions if not d["allowed"]]
        logs = {r.ccm.log_path: forbidden_lines(r.ccm.output()) for r in (a, b)}
        self.assertEqual(refused, [], "permissions missing from the manifests")
        self.assertEqual({k: v for k, v in logs.items() if v}, {},
                         "Forbidden answers in the host's logs")

        docs = rbac_usage.load_documents([RBAC_DIR])
        rules = rbac_usage.granted_rules(docs, SA, self.external_roles(c))
        used, unused = rbac_usage.usage(rules, decisions)
        print("\n" + rbac_usage.report(used, unused))
        # Everything the host was allowed came from the manifests' rules (not, say, from a
        # group binding of the cluster that a real cluster may not have).
        self.assertEqual([rbac_usage.decision_text(d)
                          for d in rbac_usage.uncovered(rules, decisions)], [],
                         "allowed by something other than the manifests")
        # The walk-through did exercise what the host needs (else "nothing refused" proves
        # little): these permissions must have been used.
        used_text = {a.describe().split("  (")[0] for a, _ in used}
        for need in ["get nodes in all namespaces", "list nodes in all namespaces",
                     "watch nodes in all namespaces", "patch nodes in all namespaces",
                     "delete nodes in all namespaces", "patch nodes/status in all namespaces",
                     "list services in all namespaces", "watch services in all namespaces",
                     "patch services/status in all namespaces",
                     "create events in all namespaces", "patch events in all namespaces",
                     "create leases.coordination.k8s.io in kube-system",
                     "get leases.coordination.k8s.io cloud-controller-manager in kube-system",
                     "update leases.coordination.k8s.io cloud-controller-manager in kube-system",
                     "create tokenreviews.authentication.k8s.io in all namespaces",
                     "create subjectaccessreviews.authorization.k8s.io in all namespaces"]:
            self.assertIn(need, used_text)
        unjustified = [a.describe() for a in unused if not a.rule.kept_reason]
        self.assertEqual(unjustified, [], "granted but never used, and not justified")

    def test_a_missing_permission_is_caught(self):
        """Negative control: without nodes/status patch, initialisation is refused, and both
        kubesim's record and the host's log show it."""
        c = self.start_cluster(MANIFESTS, nodes=1)
        with open(os.path.join(RBAC_DIR, "cluster-role.yaml")) as f:
            docs = list(yaml.safe_load_all(f))
        role = [d for d in docs if d and d.get("kind") == "ClusterRole"][0]
        before = len(role["rules"])
        role["rules"] = [r for r in role["rules"] if "nodes/status" not in r.get("resources", [])]
        self.assertEqual(len(role["rules"]), before - 1)
        c.api.request("PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/" +
                      role["metadata"]["name"], role)
        cloud = c.fake_cloud(autoInstances={"zones": ["zone-a"]})
        r = self.start_replica(c, cloud, "replica", ["--controllers=cloud-node"])
        wait_for(lambda: self.refusals(c), "a refusal recorded")
        self.assertIn("patch nodes/status node-00001",
                      [rbac_usage.decision_text(d) for d in self.refusals(c)])
        wait_for(lambda: forbidden_lines(r.ccm.output()), "the Forbidden answer in the log")
        self.assertFalse(is_initialized(c.node("node-00001")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
