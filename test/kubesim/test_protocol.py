"""kubesim wire-protocol tests with raw HTTPS: authentication, RBAC, CRUD semantics, lists,
watches, subresources and bad input, checked against the status codes and Status bodies of a
real API server."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from kubesim_harness import KubesimTestCase, wait_for  # noqa: E402

NODES = "/api/v1/nodes"
CM = "/api/v1/namespaces/default/configmaps"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


def node_body(name, **extra):
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}}
    body.update(extra)
    return body


class AuthTest(KubesimTestCase):
    KUBESIM_ARGS = ("--nodes=1",)

    def test_bad_tokens_are_rejected_anonymous_is_left_to_rbac(self):
        for kw in ({"token": "nope"}, {"token": "a.b.c"}):
            r = self.sim.get(NODES, **kw)
            self.assertStatus(r, 401, "Unauthorized")
            self.assertEqual(r.json()["message"], "Unauthorized")
        self.assertStatus(self.sim.get(NODES, anonymous=True), 403, "Forbidden")
        r = self.sim.get("/healthz", anonymous=True)
        self.assertEqual(r.status, 200)

    def test_health_version_discovery(self):
        self.assertEqual(self.sim.get("/healthz").body, "ok")
        self.assertEqual(self.sim.get("/readyz").body, "ok")
        v = self.sim.get("/version").json()
        self.assertEqual(v["major"], "1")
        api = self.sim.get("/api").json()
        self.assertEqual(api["kind"], "APIVersions")
        self.assertEqual(api["versions"], ["v1"])
        groups = {g["name"] for g in self.sim.get("/apis").json()["groups"]}
        for g in ("coordination.k8s.io", "events.k8s.io", "discovery.k8s.io",
                  "rbac.authorization.k8s.io", "authentication.k8s.io", "authorization.k8s.io"):
            self.assertIn(g, groups)
        res = {r["name"]: r for r in self.sim.get("/api/v1").json()["resources"]}
        self.assertEqual(res["nodes"]["kind"], "Node")
        self.assertFalse(res["nodes"]["namespaced"])
        self.assertEqual(res["nodes"]["shortNames"], ["no"])
        self.assertEqual(res["nodes/status"]["verbs"], ["get", "patch", "update"])
        self.assertIn("serviceaccounts/token", res)
        self.assertEqual(self.sim.get("/apis/coordination.k8s.io").json()["kind"], "APIGroup")
        self.assertEqual(self.sim.get("/apis/nope.example.com/v1").status, 404)
        self.assertStatus(self.sim.get("/api/v1/nopes"), 404, "NotFound")

    def test_service_account_tokens_and_reviews(self):
        self.sim.admin("POST", "credentials", {"serviceAccount": "kube-system/ccm"})
        r = self.sim.request("POST", "/api/v1/namespaces/kube-system/serviceaccounts/ccm/token",
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                              "spec": {"expirationSeconds": 3600}})
        self.assertEqual(r.status, 201, r)
        token = r.json()["status"]["token"]
        self.assertTrue(r.json()["status"]["expirationTimestamp"].endswith("Z"))
        # The token authenticates as the service account (and RBAC denies it nodes).
        who = self.sim.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                               {"apiVersion": "authentication.k8s.io/v1",
                                "kind": "SelfSubjectReview"}, token=token)
        self.assertEqual(who.status, 201, who)
        ui = who.json()["status"]["userInfo"]
        self.assertEqual(ui["username"], "system:serviceaccount:kube-system:ccm")
        self.assertEqual(ui["groups"], ["system:serviceaccounts",
                                        "system:serviceaccounts:kube-system",
                                        "system:authenticated"])
        denied = self.sim.get(NODES, token=token)
        self.assertStatus(denied, 403, "Forbidden")
        self.assertEqual(denied.json()["message"],
                         'nodes is forbidden: User "system:serviceaccount:kube-system:ccm" cannot '
                         'list resource "nodes" in API group "" at the cluster scope')
        self.assertEqual(denied.json()["details"], {"kind": "nodes"})
        # TokenReview (delegated authentication).
        tr = self.sim.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                              {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                               "spec": {"token": token}})
        self.assertEqual(tr.status, 201)
        self.assertTrue(tr.json()["status"]["authenticated"])
        self.assertEqual(tr.json()["status"]["user"]["username"],
                         "system:serviceaccount:kube-system:ccm")
        bad = self.sim.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                               {"spec": {"token": "garbage"}})
        self.assertNotIn("authenticated", bad.json()["status"])
        # SubjectAccessReview (delegated authorization).
        sar = self.sim.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                               {"spec": {"user": "system:serviceaccount:kube-system:ccm",
                                         "groups": ["system:serviceaccounts"],
                                         "resourceAttributes": {"verb": "list",
                                                                "resource": "nodes"}}})
        self.assertEqual(sar.status, 201, sar)
        self.assertFalse(sar.json()["status"]["allowed"])
        sar2 = self.sim.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                {"spec": {"user": "x", "groups": ["system:authenticated"],
                                          "nonResourceAttributes": {"verb": "get",
                                                                    "path": "/healthz"}}})
        self.assertTrue(sar2.json()["status"]["allowed"])
        # Deleting the service account invalidates its tokens.
        self.sim.request("DELETE", "/api/v1/namespaces/kube-system/serviceaccounts/ccm")
        self.assertEqual(self.sim.get("/version", token=token).status, 401)
        # Too short a lifetime is invalid.
        self.sim.admin("POST", "credentials", {"serviceAccount": "kube-system/ccm"})
        short = self.sim.request("POST",
                                 "/api/v1/namespaces/kube-system/serviceaccounts/ccm/token",
                                 {"spec": {"expirationSeconds": 10}})
        self.assertStatus(short, 422, "Invalid")
        missing = self.sim.request("POST",
                                   "/api/v1/namespaces/kube-system/serviceaccounts/nope/token", {})
        self.assertStatus(missing, 404, "NotFound")

    def test_rbac_roles_and_bindings_from_the_api(self):
        cred = self.sim.admin("POST", "credentials", {"user": "bob", "groups": ["team"]})
        tok = cred["token"]
        self.assertStatus(self.sim.get(CM, token=tok), 403, "Forbidden")
        self.assertEqual(self.sim.get(CM, token=tok).json()["message"],
                         'configmaps is forbidden: User "bob" cannot list resource "configmaps" '
                         'in API group "" in the namespace "default"')
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "cm-reader", "namespace": "default"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                           "verbs": ["get", "list"]}]}
        rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
              "metadata": {"name": "team-cm", "namespace": "default"},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                          "name": "cm-reader"},
              "subjects": [{"kind": "Group", "name": "team",
                            "apiGroup": "rbac.authorization.k8s.io"}]}
        base = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
        self.assertEqual(self.sim.request("POST", base + "/roles", role).status, 201)
        self.assertEqual(self.sim.request("POST", base + "/rolebindings", rb).status, 201)
        self.assertEqual(self.sim.get(CM, token=tok).status, 200)
        # Only in that namespace, and only reading.
        self.assertEqual(self.sim.get("/api/v1/namespaces/kube-system/configmaps",
                                      token=tok).status, 403)
        self.assertEqual(self.sim.request("POST", CM, {"metadata": {"name": "x"}},
                                          token=tok).status, 403)
        # resourceNames restricts by name.
        role["metadata"]["name"] = "one-cm"
        role["rules"] = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"],
                          "resourceNames": ["allowed"]}]
        self.sim.request("POST", base + "/roles", role)
        rb["metadata"]["name"] = "team-one"
        rb["roleRef"]["name"] = "one-cm"
        self.sim.request("POST", base + "/rolebindings", rb)
        for name in ("allowed", "other"):
            self.sim.request("POST", CM, {"metadata": {"name": name}})
        self.assertEqual(self.sim.request("DELETE", CM + "/other", token=tok).status, 403)
        self.assertEqual(self.sim.request("DELETE", CM + "/allowed", token=tok).status, 200)
        # Removing the binding removes the permission.
        self.sim.request("DELETE", base + "/rolebindings/team-cm")
        self.assertEqual(self.sim.get(CM, token=tok).status, 403)

    def test_impersonation(self):
        r = self.sim.get(NODES, headers={"Impersonate-User": "eve"})
        self.assertStatus(r, 403, "Forbidden")
        self.assertIn('User "eve" cannot list resource "nodes"', r.json()["message"])
        cred = self.sim.admin("POST", "credentials", {"user": "mallory"})
        r = self.sim.get(NODES, token=cred["token"], headers={"Impersonate-User": "kubesim-admin"})
        self.assertStatus(r, 403, "Forbidden")
        self.assertIn("cannot impersonate resource", r.json()["message"])

    def test_client_certificate_identity(self):
        cert_dir = os.path.join(self.sim.workdir, "alice")
        os.makedirs(cert_dir, exist_ok=True)
        kc = os.path.join(cert_dir, "kc")
        self.sim.admin("POST", "credentials", {"user": "alice", "groups": ["qa", "dev"],
                                               "type": "cert", "kubeconfig": kc})
        import base64
        import ssl
        import yaml  # Debian's python3-yaml comes with python3-kubernetes
        with open(kc) as f:
            cfg = yaml.safe_load(f)
        user = cfg["users"][0]["user"]
        cert = os.path.join(cert_dir, "c.pem")
        key = os.path.join(cert_dir, "k.pem")
        with open(cert, "wb") as f:
            f.write(base64.b64decode(user["client-certificate-data"]))
        with open(key, "wb") as f:
            f.write(base64.b64decode(user["client-key-data"]))
        ctx = ssl.create_default_context(cafile=self.sim.ca_file)
        ctx.load_cert_chain(cert, key)
        import http.client
        conn = http.client.HTTPSConnection("127.0.0.1", self.sim.port, context=ctx)
        conn.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                     body=json.dumps({"kind": "SelfSubjectReview",
                                      "apiVersion": "authentication.k8s.io/v1"}),
                     headers={"Content-Type": "application/json"})
        info = json.loads(conn.getresponse().read())["status"]["userInfo"]
        self.assertEqual(info["username"], "alice")
        self.assertEqual(info["groups"], ["qa", "dev", "system:authenticated"])


class CrudTest(KubesimTestCase):
    def test_create_get_update_conflict_delete(self):
        r = self.sim.request("POST", NODES, node_body("crud-1"))
        self.assertEqual(r.status, 201, r)
        n = r.json()
        meta = n["metadata"]
        self.assertEqual(n["kind"], "Node")
        self.assertRegex(meta["uid"], r"^[0-9a-f-]{36}$")
        self.assertTrue(meta["creationTimestamp"].endswith("Z"))
        rv1 = int(meta["resourceVersion"])
        self.assertStatus(self.sim.request("POST", NODES, node_body("crud-1")), 409, "AlreadyExists")
        self.assertEqual(self.sim.request("POST", NODES, node_body("crud-1")).json()["message"],
                         'nodes "crud-1" already exists')
        # Update with the current RV.
        n["metadata"]["labels"] = {"a": "b"}
        r2 = self.sim.request("PUT", NODES + "/crud-1", n)
        self.assertEqual(r2.status, 200, r2)
        rv2 = int(r2.json()["metadata"]["resourceVersion"])
        self.assertGreater(rv2, rv1)
        # Stale RV -> 409 Conflict with the exact message.
        n["metadata"]["labels"] = {"a": "c"}
        stale = self.sim.request("PUT", NODES + "/crud-1", n)
        self.assertStatus(stale, 409, "Conflict")
        self.assertEqual(stale.json()["message"],
                         'Operation cannot be fulfilled on nodes "crud-1": the object has been '
                         'modified; please apply your changes to the latest version and try again')
        # Unconditional update (no RV).
        del n["metadata"]["resourceVersion"]
        self.assertEqual(self.sim.request("PUT", NODES + "/crud-1", n).status, 200)
        # No-op update keeps the RV.
        cur = self.sim.get(NODES + "/crud-1").json()
        same = self.sim.request("PUT", NODES + "/crud-1", cur)
        self.assertEqual(same.json()["metadata"]["resourceVersion"],
                         cur["metadata"]["resourceVersion"])
        # Name mismatch.
        bad = self.sim.request("PUT", NODES + "/other", cur)
        self.assertStatus(bad, 400, "BadRequest")
        self.assertStatus(self.sim.request("PUT", NODES + "/missing", node_body("missing")), 404,
                          "NotFound")
        # Delete with a wrong UID precondition.
        pre = self.sim.request("DELETE", NODES + "/crud-1",
                               {"kind": "DeleteOptions", "apiVersion": "v1",
                                "preconditions": {"uid": "nope"}})
        self.assertStatus(pre, 409, "Conflict")
        self.assertIn("Precondition failed: UID in precondition: nope", pre.json()["message"])
        d = self.sim.request("DELETE", NODES + "/crud-1")
        self.assertEqual(d.status, 200)
        self.assertEqual(d.json()["status"], "Success")
        self.assertEqual(d.json()["details"]["name"], "crud-1")
        self.assertEqual(d.json()["details"]["kind"], "nodes")
        nf = self.sim.get(NODES + "/crud-1")
        self.assertStatus(nf, 404, "NotFound")
        self.assertEqual(nf.json()["message"], 'nodes "crud-1" not found')
        self.assertEqual(nf.json()["details"], {"name": "crud-1", "kind": "nodes"})

    def test_generate_name_namespace_rules_and_missing_namespace(self):
        r = self.sim.request("POST", CM, {"metadata": {"generateName": "gen-"}, "data": {"k": "v"}})
        self.assertEqual(r.status, 201, r)
        self.assertRegex(r.json()["metadata"]["name"], r"^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$")
        wrong = self.sim.request("POST", CM, {"metadata": {"name": "x", "namespace": "other"}})
        self.assertStatus(wrong, 400, "BadRequest")
        self.assertEqual(wrong.json()["message"], "the namespace of the provided object does not "
                                                  "match the namespace sent on the request")
        missing = self.sim.request("POST", "/api/v1/namespaces/nope/configmaps",
                                   {"metadata": {"name": "x"}})
        self.assertStatus(missing, 404, "NotFound")
        self.assertEqual(missing.json()["message"], 'namespaces "nope" not found')
        lease = self.sim.request("POST", LEASES, {"metadata": {"name": "ccm"},
                                                  "spec": {"holderIdentity": "a"}})
        self.assertEqual(lease.status, 201)
        again = self.sim.request("POST", LEASES, {"metadata": {"name": "ccm"}})
        self.assertEqual(again.json()["message"],
                         'leases.coordination.k8s.io "ccm" already exists')
        self.assertEqual(again.json()["details"]["group"], "coordination.k8s.io")

    def test_finalizers_and_deletion_timestamp(self):
        self.sim.request("POST", CM, {"metadata": {"name": "fin", "finalizers": ["example.com/x"]}})
        d = self.sim.request("DELETE", CM + "/fin")
        self.assertEqual(d.status, 200)
        obj = d.json()
        self.assertIn("deletionTimestamp", obj["metadata"])
        self.assertEqual(obj["metadata"]["deletionGracePeriodSeconds"], 0)
        # Still there; no new finalizers allowed.
        add = self.sim.request("PATCH", CM + "/fin",
                               {"metadata": {"finalizers": ["example.com/x", "example.com/y"]}},
                               content_type="application/merge-patch+json")
        self.assertStatus(add, 422, "Invalid")
        self.assertIn("no new finalizers can be added if the object is being deleted",
                      add.json()["message"])
        # Removing the last finalizer deletes it.
        rm = self.sim.request("PATCH", CM + "/fin", {"metadata": {"finalizers": None}},
                              content_type="application/merge-patch+json")
        self.assertEqual(rm.status, 200, rm)
        self.assertStatus(self.sim.get(CM + "/fin"), 404, "NotFound")

    def test_status_subresource_split(self):
        self.sim.request("POST", NODES, node_body("split", status={"phase": "x"}))
        # Main resource ignores status changes...
        r = self.sim.request("PATCH", NODES + "/split",
                             {"spec": {"unschedulable": True},
                              "status": {"addresses": [{"type": "Hostname", "address": "h"}]}},
                             content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["spec"]["unschedulable"])
        self.assertNotIn("addresses", r.json()["status"])
        # ... /status ignores spec changes but applies metadata and status.
        r = self.sim.request("PATCH", NODES + "/split/status",
                             {"metadata": {"labels": {"s": "1"}}, "spec": {"unschedulable": False},
                              "status": {"addresses": [{"type": "Hostname", "address": "h"}]}},
                             content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["spec"]["unschedulable"])
        self.assertEqual(r.json()["metadata"]["labels"], {"s": "1"})
        self.assertEqual(r.json()["status"]["addresses"][0]["address"], "h")
        self.assertEqual(self.sim.get(NODES + "/split/status").json()["metadata"]["name"], "split")
        self.assertStatus(self.sim.get(NODES + "/split/bogus"), 404, "NotFound")

    def test_patch_types_and_preconditions(self):
        self.sim.request("POST", NODES, node_body("p1"))
        smp = self.sim.request("PATCH", NODES + "/p1",
                               {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}},
                               content_type="application/strategic-merge-patch+json")
        self.assertEqual(smp.status, 200, smp)
        rv = smp.json()["metadata"]["resourceVersion"]
        jp = self.sim.request("PATCH", NODES + "/p1",
                              [{"op": "add", "path": "/metadata/labels", "value": {"x/y": "1"}}],
                              content_type="application/json-patch+json")
        self.assertEqual(jp.json()["metadata"]["labels"], {"x/y": "1"})
        jp2 = self.sim.request("PATCH", NODES + "/p1",
                               [{"op": "replace", "path": "/metadata/labels/x~1y", "value": "2"}],
                               content_type="application/json-patch+json")
        self.assertEqual(jp2.json()["metadata"]["labels"], {"x/y": "2"})
        failed = self.sim.request("PATCH", NODES + "/p1",
                                  [{"op": "test", "path": "/metadata/labels/x~1y", "value": "9"}],
                                  content_type="application/json-patch+json")
        self.assertStatus(failed, 422, "Invalid")
        # A resourceVersion in the patch is a precondition.
        pre = self.sim.request("PATCH", NODES + "/p1", {"metadata": {"resourceVersion": rv},
                                                        "spec": {"unschedulable": True}},
                               content_type="application/strategic-merge-patch+json")
        self.assertStatus(pre, 409, "Conflict")
        # Taint validation.
        dup = self.sim.request("PATCH", NODES + "/p1",
                               {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                                                    {"key": "a", "effect": "NoSchedule"}]}},
                               content_type="application/merge-patch+json")
        self.assertStatus(dup, 422, "Invalid")
        causes = dup.json()["details"]["causes"]
        self.assertEqual(causes[0]["reason"], "FieldValueDuplicate")
        self.assertEqual(causes[0]["field"], "spec.taints[1]")
        self.assertIn("taints must be unique by key and effect pair", causes[0]["message"])
        self.assertEqual(dup.json()["details"]["kind"], "Node")
        eff = self.sim.request("PATCH", NODES + "/p1",
                               {"spec": {"taints": [{"key": "a", "effect": "Bad"}]}},
                               content_type="application/merge-patch+json")
        self.assertIn('spec.taints[0].effect: Unsupported value: "Bad": supported values: '
                      '"NoSchedule", "PreferNoSchedule", "NoExecute"', eff.json()["message"])
        # providerID may change only from "".
        self.sim.request("PATCH", NODES + "/p1", {"spec": {"providerID": "fake://1"}},
                         content_type="application/merge-patch+json")
        pid = self.sim.request("PATCH", NODES + "/p1", {"spec": {"providerID": "fake://2"}},
                               content_type="application/merge-patch+json")
        self.assertStatus(pid, 422, "Invalid")
        self.assertIn('node updates may not change providerID except from "" to valid',
                      pid.json()["message"])
        # Apply patches are not implemented: a clear 415.
        apply = self.sim.request("PATCH", NODES + "/p1?fieldManager=x", "spec: {}",
                                 content_type="application/apply-patch+yaml")
        self.assertStatus(apply, 415, "UnsupportedMediaType")
        self.assertIn("application/strategic-merge-patch+json", apply.json()["message"])
        other = self.sim.request("PATCH", NODES + "/p1", "{}", content_type="text/plain")
        self.assertStatus(other, 415, "UnsupportedMediaType")
        self.assertStatus(self.sim.request("PATCH", NODES + "/nope", {},
                                           content_type="application/merge-patch+json"),
                          404, "NotFound")

    def test_services_defaults_and_endpoints(self):
        svc = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "selector": {"app": "x"},
                                                   "ports": [{"port": 80}]},
               "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}
        r = self.sim.request("POST", "/api/v1/namespaces/default/services", svc)
        self.assertEqual(r.status, 201, r)
        s = r.json()
        self.assertRegex(s["spec"]["clusterIP"], r"^10\.9[6-9]\.|^10\.1[01][0-9]\.")
        self.assertEqual(s["spec"]["clusterIPs"], [s["spec"]["clusterIP"]])
        p = s["spec"]["ports"][0]
        self.assertEqual((p["protocol"], p["targetPort"]), ("TCP", 80))
        self.assertTrue(30000 <= p["nodePort"] <= 32767)
        self.assertEqual(s["spec"]["externalTrafficPolicy"], "Cluster")
        self.assertEqual(s["spec"]["sessionAffinity"], "None")
        self.assertTrue(s["spec"]["allocateLoadBalancerNodePorts"])
        self.assertEqual(s["status"], {"loadBalancer": {}})  # wiped on create
        wait_for(lambda: self.sim.get("/api/v1/namespaces/default/endpoints/lb").status == 200)
        slices = wait_for(lambda: self.sim.get(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector="
            "kubernetes.io/service-name%3Dlb").json()["items"])
        self.assertEqual(slices[0]["metadata"]["ownerReferences"][0]["kind"], "Service")
        # Status via the subresource; finalizer added through /status too.
        st = self.sim.request("PATCH", "/api/v1/namespaces/default/services/lb/status",
                              {"metadata": {"finalizers":
                                            ["service.kubernetes.io/load-balancer-cleanup"]},
                               "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}},
                              content_type="application/strategic-merge-patch+json")
        self.assertEqual(st.status, 200, st)
        self.assertEqual(st.json()["status"]["loadBalancer"]["ingress"][0]["ip"], "203.0.113.7")
        self.assertEqual(st.json()["metadata"]["finalizers"],
                         ["service.kubernetes.io/load-balancer-cleanup"])
        # Update keeps allocated values.
        cur = st.json()
        del cur["spec"]["clusterIP"]
        del cur["spec"]["ports"][0]["nodePort"]
        up = self.sim.request("PUT", "/api/v1/namespaces/default/services/lb", cur)
        self.assertEqual(up.json()["spec"]["clusterIP"], s["spec"]["clusterIP"])
        self.assertEqual(up.json()["spec"]["ports"][0]["nodePort"], p["nodePort"])
        # Deletion waits for the finalizer, then the endpoints go too.
        self.assertIn("deletionTimestamp",
                      self.sim.request("DELETE", "/api/v1/namespaces/default/services/lb")
                      .json()["metadata"])
        self.sim.request("PATCH", "/api/v1/namespaces/default/services/lb/status",
                         {"metadata": {"$deleteFromPrimitiveList/finalizers":
                                       ["service.kubernetes.io/load-balancer-cleanup"]}},
                         content_type="application/strategic-merge-patch+json")
        wait_for(lambda: self.sim.get("/api/v1/namespaces/default/services/lb").status == 404)
        wait_for(lambda: self.sim.get("/api/v1/namespaces/default/endpoints/lb").status == 404)
        bad = self.sim.request("POST", "/api/v1/namespaces/default/services",
                               {"metadata": {"name": "Bad_Name"}, "spec": {"ports": []}})
        self.assertStatus(bad, 422, "Invalid")
        fields = {c["field"] for c in bad.json()["details"]["causes"]}
        self.assertEqual(fields, {"metadata.name", "spec.ports"})

    def test_events_both_apis(self):
        core = {"metadata": {"name": "ev1"},
                "involvedObject": {"kind": "Node", "name": "n1", "namespace": ""},
                "reason": "Synced", "message": "Node synced successfully", "type": "Normal",
                "source": {"component": "cloud-node-controller"}, "count": 1}
        r = self.sim.request("POST", "/api/v1/namespaces/default/events", core)
        self.assertEqual(r.status, 201, r)
        v1 = self.sim.get("/apis/events.k8s.io/v1/namespaces/default/events/ev1").json()
        self.assertEqual(v1["apiVersion"], "events.k8s.io/v1")
        self.assertEqual(v1["note"], "Node synced successfully")
        self.assertEqual(v1["regarding"]["name"], "n1")
        self.assertEqual(v1["deprecatedSource"]["component"], "cloud-node-controller")
        bump = self.sim.request("PATCH", "/api/v1/namespaces/default/events/ev1",
                                {"count": 2, "message": "again"},
                                content_type="application/strategic-merge-patch+json")
        self.assertEqual(bump.json()["count"], 2)
        sel = self.sim.get("/api/v1/events?fieldSelector=involvedObject.kind%3DNode,"
                           "involvedObject.name%3Dn1,reason%3DSynced").json()
        self.assertEqual([i["metadata"]["name"] for i in sel["items"]], ["ev1"])
        wrong_ns = dict(core, metadata={"name": "ev2"},
                        involvedObject={"kind": "Pod", "name": "p", "namespace": "other"})
        bad = self.sim.request("POST", "/api/v1/namespaces/default/events", wrong_ns)
        self.assertStatus(bad, 422, "Invalid")
        self.assertIn("does not match event.namespace", bad.json()["message"])
        new = {"metadata": {"name": "ev3"}, "eventTime": "2026-01-01T00:00:00.000000Z",
               "reportingController": "ccm", "reportingInstance": "ccm-1", "action": "Sync",
               "reason": "Synced", "regarding": {"kind": "Node", "name": "n1"},
               "type": "Normal", "note": "hi"}
        r = self.sim.request("POST", "/apis/events.k8s.io/v1/namespaces/default/events", new)
        self.assertEqual(r.status, 201, r)
        core3 = self.sim.get("/api/v1/namespaces/default/events/ev3").json()
        self.assertEqual(core3["message"], "hi")
        self.assertEqual(core3["reportingComponent"], "ccm")
        missing_time = dict(new, metadata={"name": "ev4"})
        del missing_time["eventTime"]
        self.assertStatus(self.sim.request(
            "POST", "/apis/events.k8s.io/v1/namespaces/default/events", missing_time), 422,
            "Invalid")

    def test_namespace_deletion_empties_it(self):
        self.sim.request("POST", "/api/v1/namespaces", {"metadata": {"name": "tmp-ns"}})
        wait_for(lambda: self.sim.get("/api/v1/namespaces/tmp-ns/serviceaccounts/default")
                 .status == 200, message="default service account")
        self.sim.request("POST", "/api/v1/namespaces/tmp-ns/configmaps", {"metadata": {"name": "c"}})
        d = self.sim.request("DELETE", "/api/v1/namespaces/tmp-ns")
        self.assertEqual(d.status, 200)
        self.assertEqual(d.json()["status"]["phase"], "Terminating")
        wait_for(lambda: self.sim.get("/api/v1/namespaces/tmp-ns").status == 404,
                 message="namespace removal")
        self.assertStatus(self.sim.request("DELETE", "/api/v1/namespaces/kube-system"), 403,
                          "Forbidden")

    def test_dry_run_does_not_persist(self):
        rv = self.sim.get(NODES).json()["metadata"]["resourceVersion"]
        r = self.sim.request("POST", NODES + "?dryRun=All", node_body("dry"))
        self.assertEqual(r.status, 201)
        self.assertStatus(self.sim.get(NODES + "/dry"), 404, "NotFound")
        self.assertEqual(self.sim.get(NODES).json()["metadata"]["resourceVersion"], rv)


class ListTest(KubesimTestCase):
    # resourceVersion=0 lists here compare with quorum lists: no watch cache lag (the lag has
    # its own cases in fidelity/test_history.py).
    KUBESIM_ARGS = ("--watch-cache-lag=0",)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for i in range(25):
            cls.sim.request("POST", NODES, node_body("l-%02d" % i, metadata={
                "name": "l-%02d" % i, "labels": {"parity": "even" if i % 2 == 0 else "odd",
                                                  "idx": str(i)}}))

    def test_paging_consistent_snapshot(self):
        total = len(self.sim.get(NODES).json()["items"])
        p1 = self.sim.get(NODES + "?limit=10").json()
        self.assertEqual(len(p1["items"]), 10)
        self.assertEqual(p1["metadata"]["remainingItemCount"], total - 10)
        token = p1["metadata"]["continue"]
        # A change after the first page is not visible in later pages.
        self.sim.request("DELETE", NODES + "/l-15")
        self.sim.request("POST", NODES, node_body("l-155"))
        names = [i["metadata"]["name"] for i in p1["items"]]
        while token:
            page = self.sim.get(NODES + "?limit=10&continue=" + token).json()
            self.assertEqual(page["metadata"]["resourceVersion"], p1["metadata"]["resourceVersion"])
            names += [i["metadata"]["name"] for i in page["items"]]
            token = page["metadata"].get("continue")
        self.assertIn("l-15", names)
        self.assertNotIn("l-155", names)
        self.assertEqual(names, sorted(names))
        # A limit of zero or below means no limit.
        self.assertNotIn("continue", self.sim.get(NODES + "?limit=-1").json()["metadata"])
        # Items of a list are ordered by name and always present.
        empty = self.sim.get(NODES + "?labelSelector=nothing%3Dhere").json()
        self.assertEqual(empty["items"], [])
        self.assertEqual(empty["kind"], "NodeList")
        # Bad tokens and RV with continue.
        self.assertStatus(self.sim.get(NODES + "?limit=1&continue=%%%"), 400, "BadRequest")
        self.assertStatus(self.sim.get(NODES + "?limit=1&continue=bm90LWpzb24"), 400, "BadRequest")
        self.assertStatus(self.sim.get(NODES + "?limit=1&resourceVersion=5&continue=" +
                                       p1["metadata"]["continue"]), 400, "BadRequest")

    def test_continue_expires_after_compaction(self):
        p1 = self.sim.get(NODES + "?limit=5").json()
        self.sim.request("POST", NODES, node_body("l-compact"))
        self.sim.admin("POST", "compact")
        r = self.sim.get(NODES + "?limit=5&continue=" + p1["metadata"]["continue"])
        self.assertStatus(r, 410, "Expired")
        self.assertTrue(r.json()["message"].startswith("The provided continue parameter is too old"))
        fresh = r.json()["metadata"]["continue"]
        self.assertEqual(self.sim.get(NODES + "?limit=5&continue=" + fresh).status, 200)

    def test_selectors(self):
        odd = self.sim.get(NODES + "?labelSelector=parity%3Dodd").json()["items"]
        self.assertTrue(odd)
        self.assertTrue(all(i["metadata"]["labels"]["parity"] == "odd" for i in odd))
        r = self.sim.get(NODES + "?labelSelector=idx+in+(1,2,3),parity!%3Deven").json()["items"]
        self.assertEqual([i["metadata"]["name"] for i in r], ["l-01", "l-03"])
        self.assertTrue(all("idx" not in i["metadata"].get("labels", {}) for i in
                            self.sim.get(NODES + "?labelSelector=!idx").json()["items"]))
        self.assertEqual(len(self.sim.get(NODES + "?labelSelector=idx,!idx").json()["items"]), 0)
        byname = self.sim.get(NODES + "?fieldSelector=metadata.name%3Dl-03").json()["items"]
        self.assertEqual(len(byname), 1)
        bad = self.sim.get(NODES + "?labelSelector=a+in+b")
        self.assertStatus(bad, 400, "BadRequest")
        self.assertTrue(bad.json()["message"].startswith("unable to parse requirement"))
        badf = self.sim.get(NODES + "?fieldSelector=metadata.namespace%3Dx")
        self.assertStatus(badf, 400, "BadRequest")
        self.assertEqual(badf.json()["message"], "field label not supported: metadata.namespace")
        pods = self.sim.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1,status.phase!%3DFailed")
        self.assertEqual(pods.status, 200)

    def test_resource_version_semantics(self):
        cur = int(self.sim.get(NODES).json()["metadata"]["resourceVersion"])
        self.assertEqual(self.sim.get(NODES + "?resourceVersion=0&limit=1").status, 200)
        self.assertEqual(len(self.sim.get(NODES + "?resourceVersion=0&limit=1").json()["items"]),
                         len(self.sim.get(NODES).json()["items"]))
        ex = self.sim.get(NODES + "?resourceVersion=%d&resourceVersionMatch=Exact" % cur)
        self.assertEqual(ex.json()["metadata"]["resourceVersion"], str(cur))
        self.assertStatus(self.sim.get(NODES + "?resourceVersionMatch=Exact"), 422, "Invalid")
        self.assertEqual(self.sim.get(NODES + "?resourceVersionMatch=Exact").json()["message"],
                         'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                         'resourceVersionMatch is forbidden unless resourceVersion is provided')
        self.assertStatus(self.sim.get(NODES + "?resourceVersion=0&resourceVersionMatch=Exact"),
                          422, "Invalid")
        self.assertStatus(self.sim.get(NODES + "?resourceVersion=1&resourceVersionMatch=Bogus"),
                          422, "Invalid")
        future = self.sim.get(NODES + "?resourceVersion=%d" % (cur + 100000))
        self.assertStatus(future, 504, "Timeout")
        self.assertEqual(future.json()["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        self.assertStatus(self.sim.get(NODES + "?resourceVersion=abc"), 400, "BadRequest")
        self.assertStatus(self.sim.get(NODES + "?sendInitialEvents=true"), 422, "Invalid")
        # Old exact RVs within the window are served; compacted ones are 410.
        self.sim.request("POST", NODES, node_body("l-after"))
        old = self.sim.get(NODES + "?resourceVersion=%d&resourceVersionMatch=Exact" % cur).json()
        self.assertNotIn("l-after", [i["metadata"]["name"] for i in old["items"]])
        self.sim.admin("POST", "compact")
        self.assertStatus(self.sim.get(NODES + "?resourceVersion=%d&resourceVersionMatch=Exact" %
                                       cur), 410, "Expired")

    def test_table_output(self):
        t = self.sim.get(NODES + "?limit=2", headers={
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}).json()
        self.assertEqual(t["kind"], "Table")
        self.assertEqual([c["name"] for c in t["columnDefinitions"]][:5],
                         ["Name", "Status", "Roles", "Age", "Version"])
        self.assertEqual(len(t["rows"]), 2)
        self.assertEqual(t["rows"][0]["object"]["kind"], "PartialObjectMetadata")
        self.assertIn("continue", t["metadata"])
        # Protobuf is answered, as the API server does (test/kubesim/fidelity/test_transport.py).
        pb = self.sim.get(NODES, headers={"Accept": "application/vnd.kubernetes.protobuf"})
        self.assertEqual(pb.status, 200)
        self.assertEqual(pb.header("Content-Type"), "application/vnd.kubernetes.protobuf")

    def test_partial_object_metadata(self):
        # What client-go's metadata client asks for: the metadata only, whatever the verb.
        meta = {"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                          "application/json"}
        listed = {"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                            "application/json"}
        created = self.sim.request("POST", NODES, node_body("pom-1"), headers=meta)
        self.assertEqual(created.status, 201)
        c = created.json()
        self.assertEqual((c["kind"], c["apiVersion"]), ("PartialObjectMetadata", "meta.k8s.io/v1"))
        self.assertEqual(sorted(c), ["apiVersion", "kind", "metadata"])
        self.assertEqual(c["metadata"]["name"], "pom-1")
        full = self.sim.get(NODES + "/pom-1").json()
        self.assertEqual(self.sim.get(NODES + "/pom-1", headers=meta).json()["metadata"],
                         full["metadata"])
        # A write's answer: the metadata at the version the write produced.
        w = self.sim.watch(NODES + "?watch=1&resourceVersion=%s&timeoutSeconds=20" %
                           full["metadata"]["resourceVersion"], headers=meta)
        patched = self.sim.request("PATCH", NODES + "/pom-1/status",
                                   {"status": {"addresses": [{"type": "InternalIP",
                                                              "address": "10.0.0.9"}]}},
                                   headers=meta,
                                   content_type="application/strategic-merge-patch+json").json()
        after = self.sim.get(NODES + "/pom-1").json()
        self.assertEqual(patched["kind"], "PartialObjectMetadata")
        self.assertEqual(patched["metadata"], after["metadata"])
        self.assertNotIn("status", patched)
        ev = w.next()
        self.assertEqual(ev["type"], "MODIFIED")
        self.assertEqual(ev["object"], patched)
        w.close()
        # A list asks for PartialObjectMetadataList; a single object's form is not a list's.
        pl = self.sim.get(NODES + "?limit=1", headers=listed).json()
        self.assertEqual((pl["kind"], pl["apiVersion"]),
                         ("PartialObjectMetadataList", "meta.k8s.io/v1"))
        self.assertIn("continue", pl["metadata"])
        self.assertEqual(len(pl["items"]), 1)
        self.assertEqual(sorted(pl["items"][0]), ["apiVersion", "kind", "metadata"])
        self.assertEqual(self.sim.get(NODES, headers=meta).json()["kind"], "NodeList")
        only_list = {"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}
        self.assertEqual(self.sim.get(NODES, headers=only_list).json()["kind"],
                         "PartialObjectMetadataList")
        self.assertStatus(self.sim.get(NODES + "/pom-1", headers=only_list), 406, "NotAcceptable")
        # Errors stay Status objects.
        self.assertStatus(self.sim.get(NODES + "/missing", headers=meta), 404, "NotFound")


class WatchTest(KubesimTestCase):
    KUBESIM_ARGS = ("--watch-history=50", "--bookmark-interval=300ms")

    def test_watch_from_rv_filters_and_bookmarks(self):
        rv = self.sim.get(NODES).json()["metadata"]["resourceVersion"]
        w = self.sim.watch(NODES + "?watch=1&resourceVersion=%s&labelSelector=team%%3Da"
                           "&allowWatchBookmarks=true&timeoutSeconds=20" % rv)
        self.assertEqual(w.status, 200)
        self.sim.request("POST", NODES, node_body("w1", metadata={"name": "w1",
                                                                  "labels": {"team": "a"}}))
        self.sim.request("POST", NODES, node_body("w2", metadata={"name": "w2",
                                                                  "labels": {"team": "b"}}))
        self.sim.request("PATCH", NODES + "/w1", {"metadata": {"labels": {"team": "b"}}},
                         content_type="application/merge-patch+json")
        self.sim.request("PATCH", NODES + "/w2", {"metadata": {"labels": {"team": "a"}}},
                         content_type="application/merge-patch+json")
        self.sim.request("DELETE", NODES + "/w2")
        seen = w.events_until(lambda e: e["type"] == "DELETED" and
                              e["object"]["metadata"]["name"] == "w2")
        kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in seen
                 if e["type"] != "BOOKMARK"]
        self.assertEqual(kinds, [("ADDED", "w1"), ("DELETED", "w1"), ("ADDED", "w2"),
                                 ("DELETED", "w2")])
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in seen
               if e["type"] != "BOOKMARK"]
        self.assertEqual(rvs, sorted(rvs))
        bm = w.events_until(lambda e: e["type"] == "BOOKMARK")[-1]
        self.assertEqual(bm["object"]["kind"], "Node")
        self.assertEqual(bm["object"]["metadata"]["creationTimestamp"], None)
        self.assertGreaterEqual(int(bm["object"]["metadata"]["resourceVersion"]), rvs[-1])
        w.close()

    def test_initial_state_timeout_and_watch_list(self):
        self.sim.request("POST", NODES, node_body("i1"))
        w = self.sim.watch(NODES + "?watch=true&timeoutSeconds=1")
        names = []
        while True:
            ev = w.next()
            if ev is None:
                break  # the body ended cleanly at the timeout
            names.append(ev["object"]["metadata"]["name"])
        self.assertIn("i1", names)
        wl = self.sim.watch(NODES + "?watch=1&sendInitialEvents=true&resourceVersionMatch="
                            "NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5")
        seen = wl.events_until(lambda e: e["type"] == "BOOKMARK" and
                               e["object"]["metadata"].get("annotations", {}).get(
                                   "k8s.io/initial-events-end") == "true")
        self.assertIn("i1", [e["object"]["metadata"]["name"] for e in seen if e["type"] == "ADDED"])
        wl.close()
        bad = self.sim.get(NODES + "?watch=1&sendInitialEvents=true")
        self.assertStatus(bad, 422, "Invalid")
        self.assertIn("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                      bad.json()["message"])

    def test_expired_resource_version_is_an_error_event(self):
        for i in range(60):  # overflow the 50-event window
            self.sim.request("POST", "/api/v1/namespaces/default/configmaps",
                             {"metadata": {"generateName": "h-"}})
        w = self.sim.watch("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1")
        self.assertEqual(w.status, 200)
        ev = w.next()
        self.assertEqual(ev["type"], "ERROR")
        self.assertEqual(ev["object"]["code"], 410)
        self.assertEqual(ev["object"]["reason"], "Expired")
        self.assertRegex(ev["object"]["message"], r"^too old resource version: 1 \(\d+\)$")
        self.assertIsNone(w.next())

    def test_close_all_watches(self):
        rv = self.sim.get(NODES).json()["metadata"]["resourceVersion"]
        w = self.sim.watch(NODES + "?watch=1&resourceVersion=" + rv)
        wait_for(lambda: self.sim.admin("GET", "status")["watchers"] >= 1)
        self.sim.admin("POST", "watches/close")
        self.assertIsNone(w.next())


class BadInputTest(KubesimTestCase):
    def test_malformed_and_wrong_types(self):
        r = self.sim.request("POST", CM, "{not json")
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn("the object provided is unrecognized (must be of type ConfigMap)",
                      r.json()["message"])
        self.assertIn("invalid character 'n' looking for beginning of object key string",
                      r.json()["message"])
        self.assertStatus(self.sim.request("POST", CM, "[1,2]"), 400, "BadRequest")
        self.assertStatus(self.sim.request("POST", CM, "", content_type="application/json"), 400,
                          "BadRequest")
        proto = self.sim.request("POST", NODES, b"k8s\x00\x0a\x0b",
                                 content_type="application/vnd.kubernetes.protobuf")
        self.assertStatus(proto, 400, "BadRequest")  # a truncated protobuf Node
        bad_proto = self.sim.request("POST", CM, b"k8s\x00\x0a\x0b",
                                     content_type="application/vnd.kubernetes.protobuf")
        self.assertStatus(bad_proto, 400, "BadRequest")
        typed = self.sim.request("POST", NODES, {"metadata": {"name": "t"},
                                                 "spec": {"unschedulable": "yes"}})
        self.assertStatus(typed, 400, "BadRequest")
        self.assertEqual(typed.json()["message"],
                         'Node in version "v1" cannot be handled as a Node: json: cannot unmarshal '
                         'string into Go struct field NodeSpec.spec.unschedulable of type bool')
        kind = self.sim.request("POST", NODES, {"kind": "Pod", "apiVersion": "v1",
                                                "metadata": {"name": "t"}})
        self.assertStatus(kind, 400, "BadRequest")
        self.assertStatus(self.sim.request("POST", NODES, {"apiVersion": "v2",
                                                           "metadata": {"name": "t"}}),
                          400, "BadRequest")
        yaml_body = self.sim.request("POST", CM, "metadata:\n  name: from-yaml\ndata:\n  a: '1'\n",
                                     content_type="application/yaml")
        self.assertEqual(yaml_body.status, 201, yaml_body)

    def test_unknown_fields_per_field_validation(self):
        body = {"metadata": {"name": "uf"}, "data": {"a": "b"}, "bogus": 1,
                "spec": {"x": 1}}
        strict = self.sim.request("POST", CM + "?fieldValidation=Strict", body)
        self.assertStatus(strict, 400, "BadRequest")
        self.assertEqual(strict.json()["message"],
                         'strict decoding error: unknown field "bogus", unknown field "spec"')
        warn = self.sim.request("POST", CM, body)
        self.assertEqual(warn.status, 201)
        self.assertIn('299 - "unknown field \\"bogus\\""', warn.header("Warning"))
        self.assertNotIn("bogus", warn.json())
        ignore = self.sim.request("POST", CM + "?fieldValidation=Ignore",
                                  dict(body, metadata={"name": "uf2"}))
        self.assertEqual(ignore.status, 201)
        self.assertIsNone(ignore.header("Warning"))
        self.assertStatus(self.sim.request("POST", CM + "?fieldValidation=Maybe", body), 422,
                          "Invalid")
        patch = self.sim.request("PATCH", CM + "/uf?fieldValidation=Strict",
                                 {"spec": {"nope": True}},
                                 content_type="application/merge-patch+json")
        self.assertStatus(patch, 422, "Invalid")
        self.assertIn('strict decoding error: unknown field "spec"', patch.json()["message"])
        dup = self.sim.request("POST", CM + "?fieldValidation=Strict",
                               '{"metadata":{"name":"d","name":"d"}}')
        self.assertStatus(dup, 400, "BadRequest")
        self.assertIn('duplicate field "metadata.name"', dup.json()["message"])

    def test_oversized_body(self):
        big = '{"metadata":{"name":"big"},"data":{"a":"' + "x" * (3 * 1024 * 1024) + '"}}'
        r = self.sim.request("POST", CM, big)
        self.assertStatus(r, 413, "RequestEntityTooLarge")
        self.assertEqual(r.json()["message"], "Request entity too large: limit is 3145728")
        # The server is fine afterwards.
        self.assertEqual(self.sim.get(CM).status, 200)

    def test_invalid_names_and_labels(self):
        r = self.sim.request("POST", NODES, node_body("Bad_Name"))
        self.assertStatus(r, 422, "Invalid")
        self.assertEqual(
            r.json()["message"],
            'Node "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase '
            "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com', regex "
            "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
            "[a-z0-9])?)*')")
        c = r.json()["details"]["causes"][0]
        self.assertEqual((c["reason"], c["field"]), ("FieldValueInvalid", "metadata.name"))
        self.assertStatus(self.sim.request("POST", NODES, {"metadata": {}}), 422, "Invalid")
        lab = self.sim.request("POST", NODES, {"metadata": {"name": "okname",
                                                            "labels": {"a": "b c"}}})
        self.assertStatus(lab, 422, "Invalid")
        self.assertEqual(lab.json()["details"]["causes"][0]["field"], "metadata.labels")
        lease = self.sim.request("POST", LEASES, {"metadata": {"name": "bad-dur"},
                                                  "spec": {"leaseDurationSeconds": 0}})
        self.assertStatus(lease, 422, "Invalid")
        self.assertIn("spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                      lease.json()["message"])

    def test_methods_and_paths(self):
        self.assertStatus(self.sim.request("POST", NODES + "/x/status", {}), 405,
                          "MethodNotAllowed")
        self.assertStatus(self.sim.request("PUT", NODES, {}), 405, "MethodNotAllowed")
        self.assertStatus(self.sim.request("POST", "/api/v1/configmaps", {}), 405,
                          "MethodNotAllowed")
        self.assertEqual(self.sim.get("/nonsense").status, 404)
        self.assertStatus(self.sim.get("/api/v1/namespaces/default/nodes"), 404, "NotFound")
        # Server still healthy after all of that.
        self.assertEqual(self.sim.get("/healthz").body, "ok")


if __name__ == "__main__":
    unittest.main(verbosity=2)
