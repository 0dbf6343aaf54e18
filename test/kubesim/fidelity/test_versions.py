"""Fidelity: the served API follows --server-version (section "Transport, authentication,
discovery": "The served API depends on the version"). Each case runs against v1.26.0 and the
default (newest) version and checks the real servers' answers."""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from kubesim_harness import KUBESIM, Kubesim, KubesimTestCase  # noqa: E402

SERVICES = "/api/v1/namespaces/default/services"
LB = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
      "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}
INGRESS = {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7", "ipMode": "VIP"}]}}}
WATCH_LIST = ("/api/v1/namespaces?watch=1&sendInitialEvents=true"
              "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")


class Version126Test(KubesimTestCase):
    KUBESIM_ARGS = ("--server-version=v1.26.0",)

    def test_version_reported(self):
        v = self.sim.get("/version").json()
        self.assertEqual((v["major"], v["minor"], v["gitVersion"]), ("1", "26", "v1.26.0"))

    def test_ip_mode_dropped_with_warning(self):
        """On 1.26 status.loadBalancer.ingress[].ipMode is dropped with a warning (field added
        in 1.29)."""
        self.assertEqual(self.sim.request("POST", SERVICES, LB).status, 201)
        r = self.sim.request("PATCH", SERVICES + "/lb/status", INGRESS,
                             content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("Warning"),
                         '299 - "unknown field \\"status.loadBalancer.ingress[0].ipMode\\""')
        self.assertEqual(r.json()["status"]["loadBalancer"]["ingress"], [{"ip": "203.0.113.7"}])
        stored = self.sim.get(SERVICES + "/lb").json()
        self.assertEqual(stored["status"]["loadBalancer"]["ingress"], [{"ip": "203.0.113.7"}])
        # fieldValidation=Strict turns the unknown field into an error, as for any other.
        r = self.sim.request("PATCH", SERVICES + "/lb/status?fieldValidation=Strict", INGRESS,
                             content_type="application/merge-patch+json")
        self.assertStatus(r, 422, "Invalid")

    def test_openapi_has_no_ip_mode(self):
        """The 1.26 OpenAPI v3 document of core/v1 has no LoadBalancerIngress.ipMode."""
        url = self.sim.get("/openapi/v3").json()["paths"]["api/v1"]["serverRelativeURL"]
        schemas = self.sim.get(url).json()["components"]["schemas"]
        props = schemas["io.k8s.api.core.v1.LoadBalancerIngress"]["properties"]
        self.assertEqual(sorted(props), ["hostname", "ip", "ports"])

    def test_service_type_and_cluster_ip_field_selectors_400(self):
        """On 1.26 field selectors on Service spec.type / spec.clusterIP give 400."""
        for sel in ("spec.type=LoadBalancer", "spec.clusterIP=None"):
            r = self.sim.get(SERVICES + "?fieldSelector=" + sel)
            self.assertStatus(r, 400, "BadRequest")
            self.assertEqual(r.json()["message"],
                             "field label not supported: " + sel.split("=")[0])
        self.assertEqual(self.sim.get(SERVICES + "?fieldSelector=metadata.name=lb").status, 200)

    def test_watch_list_422(self):
        """On 1.26 watch-list (sendInitialEvents) gives 422: the parameter does not exist and
        resourceVersionMatch is forbidden on a watch."""
        r = self.sim.get(WATCH_LIST)
        self.assertStatus(r, 422, "Invalid")
        body = r.json()
        self.assertEqual(body["message"],
                         'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
                         'Forbidden: resourceVersionMatch is forbidden for watch')
        self.assertEqual([c["field"] for c in body["details"]["causes"]],
                         ["resourceVersionMatch"])

    def test_self_subject_review_absent(self):
        """On 1.26 SelfSubjectReview is absent: not in discovery, 404 on POST."""
        names = [r["name"] for r in
                 self.sim.get("/apis/authentication.k8s.io/v1").json()["resources"]]
        self.assertEqual(names, ["tokenreviews"])
        r = self.sim.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             {"apiVersion": "authentication.k8s.io/v1",
                              "kind": "SelfSubjectReview"})
        self.assertStatus(r, 404, "NotFound")


class NewestVersionTest(KubesimTestCase):
    """The default version serves all of the above."""

    def test_ip_mode_kept(self):
        self.assertEqual(self.sim.request("POST", SERVICES, LB).status, 201)
        r = self.sim.request("PATCH", SERVICES + "/lb/status", INGRESS,
                             content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.header("Warning"))
        self.assertEqual(r.json()["status"]["loadBalancer"]["ingress"],
                         [{"ip": "203.0.113.7", "ipMode": "VIP"}])

    def test_field_selectors_served(self):
        r = self.sim.get(SERVICES + "?fieldSelector=spec.type=LoadBalancer")
        self.assertEqual(r.status, 200, r)

    def test_watch_list_served(self):
        w = self.sim.watch(WATCH_LIST + "&timeoutSeconds=5")
        ev = w.events_until(lambda e: e["type"] == "BOOKMARK")
        self.assertEqual(ev[-1]["object"]["metadata"]["annotations"],
                         {"k8s.io/initial-events-end": "true"})
        w.close()

    def test_self_subject_review_served(self):
        r = self.sim.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             {"apiVersion": "authentication.k8s.io/v1",
                              "kind": "SelfSubjectReview"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["status"]["userInfo"]["username"], "kubesim-admin")


class VersionRangeTest(unittest.TestCase):
    def test_unserved_versions_refused(self):
        """--server-version outside v1.26.0..newest is refused with a clear error."""
        for v in ("v1.25.9", "v1.99.0", "v2.0.0", "1.26", "latest"):
            p = subprocess.run([KUBESIM, "--server-version=" + v, "--port=0"],
                               capture_output=True, text=True, timeout=30)
            self.assertNotEqual(p.returncode, 0, v)
            self.assertIn("--server-version %s is not served" % v, p.stdout + p.stderr)

    def test_served_versions_start(self):
        for v in ("v1.27.3", "v1.29.0", "v1.34.1"):
            sim = Kubesim("--server-version=" + v, workdir=tempfile.mkdtemp(prefix="kubesim-v-"))
            try:
                sim.start()
                self.assertEqual(sim.get("/version").json()["gitVersion"], v)
            finally:
                sim.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
