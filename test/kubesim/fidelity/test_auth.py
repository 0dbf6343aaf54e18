"""Fidelity: authentication and the review APIs as a real kube-apiserver answers them
(section "Transport, authentication, discovery" of the observed differences): anonymous
requests are system:anonymous and left to RBAC, TokenReview honours audiences and the
service-account token leeway, JWT segments are strict base64url, allowed SubjectAccessReviews
carry the RBAC authorizer's reason."""

import base64
import hashlib
import hmac
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from kubesim_harness import KubesimTestCase, wait_for  # noqa: E402

ISSUER = "https://kubernetes.default.svc.cluster.local"
TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SARS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_payload(token):
    seg = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))


class AnonymousTest(KubesimTestCase):
    def test_anonymous_403_on_resources(self):
        """Anonymous requests: 403 on resources (as system:anonymous, Forbidden)."""
        r = self.sim.get("/api/v1/nodes", anonymous=True)
        self.assertStatus(r, 403, "Forbidden")
        self.assertEqual(r.json()["message"],
                         'nodes is forbidden: User "system:anonymous" cannot list resource '
                         '"nodes" in API group "" at the cluster scope')
        self.assertEqual(r.json()["details"], {"kind": "nodes"})
        r = self.sim.get("/api/v1/namespaces/default/configmaps/x", anonymous=True)
        self.assertStatus(r, 403, "Forbidden")
        self.assertEqual(r.json()["message"],
                         'configmaps "x" is forbidden: User "system:anonymous" cannot get '
                         'resource "configmaps" in API group "" in the namespace "default"')

    def test_anonymous_200_on_version_and_health(self):
        """Anonymous requests: 200 on /version, /healthz, /livez, /readyz."""
        for path in ("/version", "/healthz", "/livez", "/readyz"):
            r = self.sim.get(path, anonymous=True)
            self.assertEqual(r.status, 200, (path, r))
        self.assertEqual(self.sim.get("/version", anonymous=True).json()["major"], "1")

    def test_anonymous_sub_paths_and_discovery_are_forbidden(self):
        """system:public-info-viewer grants exactly /healthz, /livez, /readyz, /version(/):
        anonymous sub-paths and discovery (system:discovery is for system:authenticated) → 403."""
        for path in ("/healthz/ping", "/readyz/etcd", "/api", "/apis", "/openapi/v3"):
            r = self.sim.get(path, anonymous=True)
            self.assertStatus(r, 403, "Forbidden")
            self.assertEqual(r.json()["message"],
                             'forbidden: User "system:anonymous" cannot get path "%s"' % path)
        # The same sub-path is fine for an authenticated user.
        self.assertEqual(self.sim.get("/healthz/ping").status, 200)

    def test_bad_token_still_401(self):
        """A *bad* token is still 401 (not anonymous)."""
        for token in ("nope", "a.b.c"):
            r = self.sim.get("/version", token=token)
            self.assertStatus(r, 401, "Unauthorized")
            self.assertEqual(r.json()["message"], "Unauthorized")

    def test_non_bearer_schemes_are_anonymous(self):
        """Basic credentials or an empty bearer token are no credential: anonymous, not 401."""
        for auth in ("Basic dXNlcjpwYXNz", "Bearer "):
            r = self.sim.get("/api/v1/nodes", anonymous=True, headers={"Authorization": auth})
            self.assertStatus(r, 403, "Forbidden")
            self.assertIn('User "system:anonymous"', r.json()["message"])


class TokenReviewTest(KubesimTestCase):
    def review(self, token, audiences=None):
        spec = {"token": token}
        if audiences is not None:
            spec["audiences"] = audiences
        r = self.sim.request("POST", TOKENREVIEWS, {"apiVersion": "authentication.k8s.io/v1",
                                                    "kind": "TokenReview", "spec": spec})
        self.assertEqual(r.status, 201, r)
        return r.json()["status"]

    def sa_token(self, name, audiences=None, seconds=3600):
        self.sim.admin("POST", "credentials", {"serviceAccount": "default/" + name})
        body = {"spec": {"expirationSeconds": seconds}}
        if audiences:
            body["spec"]["audiences"] = audiences
        r = self.sim.request("POST", "/api/v1/namespaces/default/serviceaccounts/%s/token" % name,
                             body)
        self.assertEqual(r.status, 201, r)
        return r.json()["status"]["token"]

    def test_audience_mismatch_is_not_authenticated(self):
        """A TokenReview for a token whose audience does not match spec.audiences →
        authenticated: false (kubesim: true)."""
        token = self.sa_token("aud-a")
        st = self.review(token, ["vault"])
        self.assertNotIn("authenticated", st)  # false is omitted
        self.assertEqual(st["user"], {})
        self.assertEqual(st["error"],
                         '[invalid bearer token, token audiences ["%s"] is invalid for the target '
                         'audiences ["vault"]]' % ISSUER)
        self.assertNotIn("audiences", st)

    def test_audiences_echoed(self):
        """TokenReview echoes the audiences the token is good for: the API server's when
        spec.audiences is empty, else the intersection."""
        st = self.review(self.sa_token("aud-b"))
        self.assertTrue(st["authenticated"])
        self.assertEqual(st["audiences"], [ISSUER])
        vault = self.sa_token("aud-c", audiences=["vault", "other"])
        self.assertEqual(jwt_payload(vault)["aud"], ["vault", "other"])
        st = self.review(vault, ["x", "other"])
        self.assertTrue(st["authenticated"])
        self.assertEqual(st["audiences"], ["other"])
        self.assertEqual(st["user"]["username"], "system:serviceaccount:default:aud-c")
        # A token for another audience is no credential for the API itself.
        self.assertStatus(self.sim.get("/api/v1/namespaces", token=vault), 401, "Unauthorized")
        # Static tokens are audience-agnostic: only the API server's audiences.
        st = self.review(self.sim.admin_token, ["vault"])
        self.assertEqual(st["error"], "invalid bearer token")

    def test_bound_token_accepted_past_expiry_within_leeway(self):
        """A bound service-account token is accepted for about 60 s past its expiry."""
        made = self.sim.admin("POST", "credentials",
                              {"serviceAccount": "default/short", "expirationSeconds": 1})
        token = made["token"]
        exp = jwt_payload(token)["exp"]
        wait_for(lambda: time.time() > exp + 1, timeout=10, message="token past exp")
        st = self.review(token)
        self.assertTrue(st.get("authenticated"), st)
        self.assertEqual(self.sim.get("/api", token=token).status, 200)

    def test_segments_are_strict_base64url(self):
        """Service-account JWT segments are decoded strictly: a properly signed token whose
        payload is padded or uses '+/' is refused."""
        token = self.sa_token("strict")
        header, payload, _ = token.split(".")
        with open(os.path.join(self.sim.workdir, "certs", "sa.secret"), "rb") as f:
            secret = f.read()

        def signed(h, p):
            sig = hmac.new(secret, (h + "." + p).encode(), hashlib.sha256).digest()
            return h + "." + p + "." + b64url(sig)

        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        if len(raw) % 3 == 0:
            raw = raw[:1] + b" " + raw[1:]  # same JSON, now with padding when encoded
        self.assertTrue(self.review(signed(header, b64url(raw))).get("authenticated"))
        padded = base64.urlsafe_b64encode(raw).decode()
        self.assertIn("=", padded)
        for bad in (padded, base64.b64encode(raw).decode()):
            st = self.review(signed(header, bad))
            self.assertNotIn("authenticated", st)
            self.assertStatus(self.sim.get("/api", token=signed(header, bad)), 401,
                              "Unauthorized")


class SubjectAccessReviewTest(KubesimTestCase):
    def sar(self, spec):
        r = self.sim.request("POST", SARS, {"apiVersion": "authorization.k8s.io/v1",
                                            "kind": "SubjectAccessReview", "spec": spec})
        self.assertEqual(r.status, 201, r)
        return r.json()["status"]

    def test_allowed_review_carries_rbac_reason(self):
        """An allowed SubjectAccessReview carries a reason (RBAC: allowed by ...)."""
        st = self.sar({"user": "someone", "groups": ["system:authenticated"],
                       "nonResourceAttributes": {"path": "/api", "verb": "get"}})
        self.assertEqual(st, {"allowed": True, "reason":
                              'RBAC: allowed by ClusterRoleBinding "system:discovery" of '
                              'ClusterRole "system:discovery" to Group "system:authenticated"'})

    def test_reason_names_role_binding_and_service_account(self):
        """RoleBinding reasons name the binding and the service account as name/namespace."""
        self.sim.request("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
                         {"metadata": {"name": "cm-reader"}, "rules": [
                             {"apiGroups": [""], "resources": ["configmaps"],
                              "verbs": ["get"]}]})
        r = self.sim.request(
            "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            {"metadata": {"name": "read-cms"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                         "name": "cm-reader"},
             "subjects": [{"kind": "ServiceAccount", "name": "app"}]})
        self.assertEqual(r.status, 201, r)
        st = self.sar({"user": "system:serviceaccount:default:app",
                       "resourceAttributes": {"namespace": "default", "verb": "get",
                                              "resource": "configmaps"}})
        self.assertEqual(st, {"allowed": True, "reason":
                              'RBAC: allowed by RoleBinding "read-cms/default" of Role '
                              '"cm-reader" to ServiceAccount "app/default"'})

    def test_denied_and_masters_have_no_reason(self):
        """Denied reviews and system:masters (not RBAC) carry no reason."""
        st = self.sar({"user": "nobody", "resourceAttributes": {"verb": "delete",
                                                                "resource": "nodes"}})
        self.assertEqual(st, {"allowed": False})
        st = self.sar({"user": "root", "groups": ["system:masters"],
                       "resourceAttributes": {"verb": "delete", "resource": "nodes"}})
        self.assertEqual(st, {"allowed": True})


if __name__ == "__main__":
    unittest.main(verbosity=2)
