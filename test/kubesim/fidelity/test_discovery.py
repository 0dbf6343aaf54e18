"""Fidelity: discovery and the served surface (section "Transport, authentication,
discovery": discovery includes apps/v1, so `kubectl apply -k manifests/` with a DaemonSet
works, server-side dry run too). The repository's own manifests are applied with the real
kubectl."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from kubesim_harness import KUBECTL, KubesimTestCase  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DS = "/apis/apps/v1/namespaces/kube-system/daemonsets"
DEPLOY = "/apis/apps/v1/namespaces/kube-system/deployments"
PDB = "/apis/policy/v1/namespaces/kube-system/poddisruptionbudgets"


class DiscoveryTest(KubesimTestCase):
    def test_apps_and_policy_groups_listed(self):
        """Discovery lists apps/v1 (and policy/v1 for the HA manifests' PodDisruptionBudget)."""
        groups = {g["name"]: g for g in self.sim.get("/apis").json()["groups"]}
        for name in ("apps", "policy"):
            self.assertEqual(groups[name]["preferredVersion"],
                             {"groupVersion": name + "/v1", "version": "v1"})
        apps = {r["name"]: r for r in self.sim.get("/apis/apps/v1").json()["resources"]}
        self.assertEqual(sorted(apps), ["daemonsets", "daemonsets/status", "deployments",
                                        "deployments/status"])
        self.assertEqual(apps["daemonsets"]["kind"], "DaemonSet")
        self.assertTrue(apps["daemonsets"]["namespaced"])
        self.assertEqual(apps["daemonsets"]["shortNames"], ["ds"])
        self.assertEqual(apps["deployments"]["shortNames"], ["deploy"])
        self.assertEqual(apps["deployments"]["categories"], ["all"])
        self.assertEqual(sorted(apps["deployments"]["verbs"]),
                         ["create", "delete", "deletecollection", "get", "list", "patch",
                          "update", "watch"])
        self.assertEqual(apps["daemonsets/status"]["verbs"], ["get", "patch", "update"])
        policy = {r["name"]: r for r in self.sim.get("/apis/policy/v1").json()["resources"]}
        self.assertEqual(policy["poddisruptionbudgets"]["shortNames"], ["pdb"])
        self.assertEqual(self.sim.get("/apis/apps").json()["kind"], "APIGroup")

    def test_openapi_v3_has_apps(self):
        """OpenAPI v3 documents for apps/v1 carry the DaemonSet and Deployment kinds."""
        paths = self.sim.get("/openapi/v3").json()["paths"]
        self.assertIn("apis/apps/v1", paths)
        doc = self.sim.get(paths["apis/apps/v1"]["serverRelativeURL"]).json()
        kinds = {gvk["kind"] for s in doc["components"]["schemas"].values()
                 for gvk in s.get("x-kubernetes-group-version-kind", [])}
        self.assertEqual(kinds, {"DaemonSet", "Deployment"})
        self.assertIn("/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}", doc["paths"])

    def test_daemonset_defaulted_as_the_api_server(self):
        """A DaemonSet is stored as the real server defaults it: spec defaults, generation 1,
        status counters at 0; dryRun=All answers the same without storing it."""
        body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds1"},
                "spec": {"selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}},
                                      "spec": {"containers": [{"name": "c", "image": "img:1",
                                                               "ports": [{"containerPort": 80}]}]}}}}
        r = self.sim.request("POST", DS + "?dryRun=All", body)
        self.assertEqual(r.status, 201, r)
        self.assertStatus(self.sim.get(DS + "/ds1"), 404, "NotFound")
        r = self.sim.request("POST", DS, body)
        self.assertEqual(r.status, 201, r)
        ds = r.json()
        self.assertEqual(ds["metadata"]["generation"], 1)
        self.assertEqual(ds["status"], {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                        "desiredNumberScheduled": 0, "numberReady": 0})
        self.assertEqual(ds["spec"]["updateStrategy"],
                         {"type": "RollingUpdate",
                          "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        self.assertEqual(ds["spec"]["revisionHistoryLimit"], 10)
        pod = ds["spec"]["template"]["spec"]
        self.assertEqual((pod["restartPolicy"], pod["dnsPolicy"], pod["schedulerName"],
                          pod["terminationGracePeriodSeconds"], pod["securityContext"]),
                         ("Always", "ClusterFirst", "default-scheduler", 30, {}))
        c = pod["containers"][0]
        self.assertEqual((c["imagePullPolicy"], c["terminationMessagePath"],
                          c["terminationMessagePolicy"], c["ports"][0]["protocol"]),
                         ("IfNotPresent", "/dev/termination-log", "File", "TCP"))
        # A spec change bumps the generation; a label change does not.
        r = self.sim.request("PATCH", DS + "/ds1", {"metadata": {"labels": {"x": "y"}}},
                             content_type="application/merge-patch+json")
        self.assertEqual(r.json()["metadata"]["generation"], 1)
        r = self.sim.request("PATCH", DS + "/ds1", {"spec": {"minReadySeconds": 5}},
                             content_type="application/merge-patch+json")
        self.assertEqual(r.json()["metadata"]["generation"], 2)

    def test_deployment_defaults(self):
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d1"},
                "spec": {"selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}},
                                      "spec": {"containers": [{"name": "c", "image": "img"}]}}}}
        r = self.sim.request("POST", DEPLOY, body)
        self.assertEqual(r.status, 201, r)
        d = r.json()
        self.assertEqual((d["spec"]["replicas"], d["spec"]["revisionHistoryLimit"],
                          d["spec"]["progressDeadlineSeconds"], d["status"]), (1, 10, 600, {}))
        self.assertEqual(d["spec"]["strategy"], {"type": "RollingUpdate", "rollingUpdate":
                                                 {"maxUnavailable": "25%", "maxSurge": "25%"}})
        self.assertEqual(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
                         "Always")

    def test_unknown_fields_refused_when_strict(self):
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bad"},
                "spec": {"replicaz": 2}}
        r = self.sim.request("POST", DEPLOY + "?fieldValidation=Strict", body)
        self.assertStatus(r, 400, "BadRequest")
        self.assertEqual(r.json()["message"], 'strict decoding error: unknown field "spec.replicaz"')


class ApplyManifestsTest(KubesimTestCase):
    def apply(self, path, *extra):
        return self.sim.kubectl("apply", "-k", os.path.join(ROOT, path), *extra).stdout

    def test_apply_k_manifests_with_server_dry_run(self):
        """kubectl apply -k manifests/ (a DaemonSet) works, with --dry-run=server too."""
        out = self.apply("manifests", "--dry-run=server")
        self.assertIn("daemonset.apps/cloud-controller-manager created (server dry run)", out)
        self.assertStatus(self.sim.get(DS + "/cloud-controller-manager"), 404, "NotFound")
        out = self.apply("manifests")
        self.assertIn("daemonset.apps/cloud-controller-manager created", out)
        ds = self.sim.get(DS + "/cloud-controller-manager").json()
        self.assertEqual(ds["metadata"]["generation"], 1)
        self.assertIn("kubectl.kubernetes.io/last-applied-configuration",
                      ds["metadata"]["annotations"])
        out = self.apply("manifests")
        self.assertIn("daemonset.apps/cloud-controller-manager unchanged", out)
        table = self.sim.kubectl("get", "ds", "-n", "kube-system").stdout.split("\n")[0].split()
        self.assertEqual(table, ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE",
                                 "AVAILABLE", "NODE", "SELECTOR", "AGE"])

    def test_apply_k_manifests_ha(self):
        """kubectl apply -k manifests/ha/ (a Deployment and a PodDisruptionBudget) works."""
        out = self.apply("manifests/ha", "--dry-run=server")
        self.assertIn("deployment.apps/cloud-controller-manager created (server dry run)", out)
        self.assertIn("poddisruptionbudget.policy/cloud-controller-manager created (server dry "
                      "run)", out)
        self.assertStatus(self.sim.get(DEPLOY + "/cloud-controller-manager"), 404, "NotFound")
        out = self.apply("manifests/ha")
        self.assertIn("deployment.apps/cloud-controller-manager created", out)
        d = self.sim.get(DEPLOY + "/cloud-controller-manager").json()
        self.assertEqual(d["spec"]["replicas"], 2)
        pdb = self.sim.get(PDB + "/cloud-controller-manager").json()
        self.assertEqual(pdb["status"]["disruptionsAllowed"], 0)
        rows = self.sim.kubectl("get", "deploy,pdb", "-n", "kube-system", "-o", "json").stdout
        self.assertEqual(len(json.loads(rows)["items"]), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
