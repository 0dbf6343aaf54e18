#!/usr/bin/python3
"""manifests/: every YAML file parses, both kustomizations render with kubectl kustomize,
the rendered objects are well-formed and consistent (selectors, volumes, service account,
probe, tolerations, node selector, anti-affinity, leader election), the RBAC loads into
kubesim, the provider configuration examples are accepted by the providers, and the unused-rule
detector of the RBAC test does flag what it should.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("CCM_SOURCE_DIR", ""), "test", "support"))
import rbac_usage  # noqa: E402

BUILD = os.environ["CCM_BUILD_DIR"]
SOURCE = os.environ["CCM_SOURCE_DIR"]
MANIFESTS = os.path.join(SOURCE, "manifests")
KUBECTL = os.environ.get("KUBECTL", "kubectl")
BINARY = os.path.join(BUILD, "host", "cloud-controller-manager")
PLUGINS = os.path.join(BUILD, "plugins")
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"


def run(cmd, check=True, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    r = subprocess.run(cmd, **kw)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (" ".join(cmd), r.returncode,
                                                          r.stdout[-3000:], r.stderr[-3000:]))
    return r


def render(path):
    with tempfile.TemporaryDirectory() as cache:
        out = run([KUBECTL, "kustomize", path], env=dict(os.environ, KUBECACHEDIR=cache)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def flag(args, name):
    values = [a.split("=", 1)[1] for a in args if a.startswith("--" + name + "=")]
    return values[-1] if values else None


class YamlTest(unittest.TestCase):

    def test_every_yaml_file_parses_into_objects_or_a_provider_config(self):
        files = []
        for root, _dirs, names in os.walk(MANIFESTS):
            files += [os.path.join(root, n) for n in names if n.endswith((".yaml", ".yml"))]
        self.assertGreater(len(files), 8)
        for f in sorted(files):
            with open(f) as fh:
                docs = [d for d in yaml.safe_load_all(fh) if d is not None]
            self.assertTrue(docs, f)
            if f.endswith(os.path.join("examples", "fake-cloud.yaml")):
                continue  # a provider configuration, checked below
            for d in docs:
                self.assertIsInstance(d, dict, f)
                self.assertIn("apiVersion", d, f)
                self.assertIn("kind", d, f)
                if d["kind"] != "Kustomization":
                    self.assertTrue(d.get("metadata", {}).get("name"), f)


class RenderTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.default = render(MANIFESTS)
        cls.ha = render(os.path.join(MANIFESTS, "ha"))

    def check_common(self, docs, workload_kind):
        kinds = sorted(d["kind"] for d in docs)
        workloads = by_kind(docs, workload_kind)
        self.assertEqual(len(workloads), 1, kinds)
        for other in {"DaemonSet", "Deployment"} - {workload_kind}:
            self.assertEqual(by_kind(docs, other), [], "apply one workload, not both")
        for kind in ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                     "RoleBinding"]:
            self.assertTrue(by_kind(docs, kind), kind)
        self.assertEqual(by_kind(docs, "Secret"), [], "credentials are not part of it")
        names = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
                 for d in docs}
        self.assertEqual(len(names), len(docs), "duplicate objects")

        w = workloads[0]
        self.assertEqual(w["apiVersion"], "apps/v1")
        self.assertEqual(w["metadata"]["namespace"], "kube-system")
        spec = w["spec"]
        pod = spec["template"]["spec"]
        labels = spec["template"]["metadata"]["labels"]
        for k, v in spec["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v, "the selector must match the pod template")
        sa = pod["serviceAccountName"]
        self.assertIn(("ServiceAccount", "kube-system", sa), names)
        self.assertTrue(pod["hostNetwork"])
        # Names (the cloud's API) resolve through the node's resolver: cluster DNS may not
        # run before nodes are initialised.
        self.assertIn(pod.get("dnsPolicy", "ClusterFirst"), ("ClusterFirst", "Default"))
        self.assertEqual(pod["nodeSelector"], {"node-role.kubernetes.io/control-plane": ""})
        tolerated = {(t["key"], t.get("effect")) for t in pod["tolerations"]}
        self.assertIn((UNINITIALIZED, "NoSchedule"), tolerated)
        self.assertIn(("node-role.kubernetes.io/control-plane", "NoSchedule"), tolerated)
        self.assertEqual(pod["securityContext"]["runAsUser"], 65532)
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])

        self.assertEqual(len(pod["containers"]), 1)
        c = pod["containers"][0]
        self.assertNotIn("command", c, "the image's entrypoint is the binary")
        args = c["args"]
        self.assertTrue(flag(args, "cloud-provider"))
        self.assertEqual(flag(args, "cloud-provider-plugin-dir"), "/usr/lib/ccm/providers")
        self.assertEqual(flag(args, "leader-elect"), "true")
        port = int(flag(args, "secure-port") or 10258)
        self.assertEqual(port, 10258)
        probe = c["livenessProbe"]["httpGet"]
        self.assertEqual((probe["scheme"], probe["path"], probe["port"]),
                         ("HTTPS", "/healthz", port))
        # The cloud config comes from a Secret volume mounted where --cloud-config points.
        volumes = {v["name"]: v for v in pod["volumes"]}
        config = flag(args, "cloud-config")
        mounts = [m for m in c["volumeMounts"] if config.startswith(m["mountPath"] + "/")]
        self.assertEqual(len(mounts), 1, c["volumeMounts"])
        self.assertTrue(mounts[0]["readOnly"])
        secret = volumes[mounts[0]["name"]]["secret"]
        self.assertEqual(secret["secretName"], "cloud-config")
        self.assertEqual(os.path.basename(config), "cloud.conf")
        for m in c["volumeMounts"]:
            self.assertIn(m["name"], volumes)
        self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])
        self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])
        # Every flag is one the binary knows (checked against the real --help).
        help_text = run([BINARY, "--help"]).stdout
        for a in args:
            self.assertIn(a.split("=")[0] + " ", help_text.replace("=", " "), a)
        return w

    def test_default_is_the_daemonset(self):
        ds = self.check_common(self.default, "DaemonSet")
        self.assertEqual(ds["spec"]["updateStrategy"]["type"], "RollingUpdate")

    def test_ha_is_a_deployment_of_two_with_anti_affinity(self):
        d = self.check_common(self.ha, "Deployment")
        self.assertEqual(d["spec"]["replicas"], 2)
        self.assertEqual(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0)
        terms = d["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(len(terms), 1)
        self.assertEqual(terms[0]["topologyKey"], "kubernetes.io/hostname")
        self.assertEqual(terms[0]["labelSelector"]["matchLabels"],
                         d["spec"]["selector"]["matchLabels"])
        pdb = by_kind(self.ha, "PodDisruptionBudget")
        self.assertEqual(len(pdb), 1)
        self.assertEqual(pdb[0]["spec"]["selector"], d["spec"]["selector"])

    def test_both_share_the_same_rbac(self):
        rbac = lambda docs: sorted(json.dumps(d, sort_keys=True) for d in docs  # noqa: E731
                                   if d["apiVersion"].startswith("rbac.") or
                                   d["kind"] == "ServiceAccount")
        self.assertEqual(rbac(self.default), rbac(self.ha))

    def test_rbac_loads_into_kubesim(self):
        """kubesim applies the RBAC with its validation (names, roleRef, ...)."""
        from harness import Cluster
        with Cluster(kubesim_args=["--manifests=" + MANIFESTS]) as c:
            rendered = [d for d in self.default if d["apiVersion"].startswith("rbac.")]
            for d in rendered:
                plural = {"ClusterRole": "clusterroles", "ClusterRoleBinding":
                          "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings"}
                ns = d["metadata"].get("namespace")
                path = "/apis/rbac.authorization.k8s.io/v1/%s%s/%s" % (
                    "namespaces/%s/" % ns if ns else "", plural[d["kind"]], d["metadata"]["name"])
                got = c.api.get(path)
                for key in ("rules", "roleRef", "subjects"):
                    if key in d:
                        self.assertEqual(got.get(key), d[key], path)
            sa = c.api.get("/api/v1/namespaces/kube-system/serviceaccounts/"
                           "cloud-controller-manager")
            self.assertEqual(sa["metadata"]["name"], "cloud-controller-manager")


    def test_kubectl_accepts_what_kubesim_serves(self):
        """kubectl create --dry-run=server (kubectl's client-side decoding, the server's
        validation) of the RBAC and the example Secret, and `kubectl apply -k` of both
        kustomizations (DaemonSet; Deployment and PodDisruptionBudget) with server dry run."""
        from harness import Cluster
        with Cluster() as c:
            with tempfile.TemporaryDirectory() as cache:
                base = [KUBECTL, "--kubeconfig=" + c.kubeconfig, "--cache-dir=" + cache,
                        "create", "--dry-run=server", "-o", "name"]
                out = run(base + ["-k", os.path.join(MANIFESTS, "rbac")]).stdout.split()
                self.assertEqual(len(out), len([d for d in self.default
                                                if d["apiVersion"].startswith("rbac.") or
                                                d["kind"] == "ServiceAccount"]), out)
                out = run(base + ["-f", os.path.join(MANIFESTS, "examples",
                                                     "openstack-secret.yaml")]).stdout
                self.assertEqual(out.strip(), "secret/cloud-config")
                apply = base[:3] + ["apply", "--dry-run=server", "-o", "name", "-k"]
                out = run(apply + [MANIFESTS]).stdout.split()
                self.assertIn("daemonset.apps/cloud-controller-manager", out)
                out = run(apply + [os.path.join(MANIFESTS, "ha")]).stdout.split()
                self.assertIn("deployment.apps/cloud-controller-manager", out)
                self.assertIn("poddisruptionbudget.policy/cloud-controller-manager", out)


class ExamplesTest(unittest.TestCase):

    def test_fake_cloud_example_is_accepted(self):
        r = run([BINARY, "--cloud-provider=fake-cloud", "--cloud-provider-plugin-dir=" + PLUGINS,
                 "--cloud-config=" + os.path.join(MANIFESTS, "examples", "fake-cloud.yaml"),
                 "--check-config"], check=False)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("ccm.loadbalancer/1", r.stdout)
        self.assertIn("ccm.routes/1", r.stdout)

    def openstack_check(self, conf_text):
        """--check-config of the openstack provider with conf_text, against the OpenStack
        simulator (Keystone's URL, the credentials and the subnet, network and router IDs
        swapped for the simulator's)."""
        os_sim = os.path.join(SOURCE, "openstack-sim", "openstack_sim.py")
        with tempfile.TemporaryDirectory() as tmp:
            port_file = os.path.join(tmp, "port.json")
            log = open(os.path.join(tmp, "sim.log"), "wb")
            sim = subprocess.Popen(["/usr/bin/python3", os_sim, "--port", "0", "--port-file",
                                    port_file], stdout=log, stderr=subprocess.STDOUT)
            try:
                from harness import wait_for
                wait_for(lambda: os.path.exists(port_file) or sim.poll() is not None,
                         "the OpenStack simulator", timeout=30)
                with open(port_file) as f:
                    url = json.load(f)["url"]
                lines = []
                for line in conf_text.splitlines():
                    key = line.split("=")[0].strip()
                    if key == "auth-url":
                        line = "auth-url = %s/identity/v3" % url
                    elif key == "application-credential-id":
                        line = "application-credential-id = ac-id"
                    elif key == "application-credential-secret":
                        line = "application-credential-secret = ac-secret-value"
                    elif key == "subnet-id":  # the IDs creation checks: the simulator's
                        line = "subnet-id = sub-private"
                    elif key == "floating-network-id":
                        line = "floating-network-id = net-public"
                    elif key == "router-id":
                        line = "router-id = router-1"
                    lines.append(line)
                conf = os.path.join(tmp, "cloud.conf")
                with open(conf, "w") as f:
                    f.write("\n".join(lines) + "\n")
                return run([BINARY, "--cloud-provider=openstack",
                            "--cloud-provider-plugin-dir=" + PLUGINS, "--cloud-config=" + conf,
                            "--check-config"], check=False)
            finally:
                sim.terminate()
                sim.wait(timeout=20)
                log.close()

    @staticmethod
    def warnings(r):
        return [line for line in r.stderr.splitlines() if line.startswith(("W", "E"))]

    def check_openstack(self, text):
        r = self.openstack_check(text)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn("provider openstack", r.stdout)
        self.assertIn("ccm.loadbalancer/1", r.stdout)
        self.assertIn("ccm.routes/1", r.stdout)
        self.assertEqual(self.warnings(r), [], "the example has keys the provider does not know")

    def test_openstack_examples_are_accepted(self):
        with open(os.path.join(MANIFESTS, "examples", "openstack-cloud.conf")) as f:
            self.check_openstack(f.read())
        with open(os.path.join(MANIFESTS, "examples", "openstack-secret.yaml")) as f:
            secret = yaml.safe_load(f)
        self.assertEqual((secret["kind"], secret["metadata"]["namespace"],
                          secret["metadata"]["name"]), ("Secret", "kube-system", "cloud-config"))
        self.check_openstack(secret["stringData"]["cloud.conf"])

    def test_a_bad_openstack_key_is_seen(self):
        """The check above can fail: a typo in a key is reported."""
        r = self.openstack_check("[Global]\nauth-url = x\nregion = RegionOne\n"
                                 "application-credential-id = a\n"
                                 "application-credential-secret = b\n"
                                 "[LoadBalancer]\nsubnet-idd = x\n")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertEqual(len(self.warnings(r)), 1, r.stderr[-2000:])
        self.assertIn("subnet-idd", self.warnings(r)[0])


class UnusedRuleDetectorTest(unittest.TestCase):
    """rbac_usage on made-up manifests and decisions: it must flag what is unused, honour the
    kept-unused comment, and scope Role grants to their namespace."""

    MANIFEST = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r}
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, delete]
# kept-unused: documented for compatibility
- apiGroups: [""]
  resources: [endpoints]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}
subjects: [{kind: ServiceAccount, name: sa, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: le, namespace: kube-system}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [x]
  verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: le, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: le}
subjects: [{kind: ServiceAccount, name: sa}]
---
# kept-unused: built-in, for later
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: builtin}
subjects: [{kind: ServiceAccount, name: sa, namespace: kube-system}]
"""

    def decision(self, verb, resource, ns="", name="", group="", allowed=True):
        return {"verb": verb, "apiGroup": group, "resource": resource, "subresource": "",
                "namespace": ns, "name": name, "allowed": allowed, "count": 1}

    def test_detector(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "rbac.yaml")
            with open(path, "w") as f:
                f.write(self.MANIFEST)
            docs = rbac_usage.load_documents([tmp])
            rules = rbac_usage.granted_rules(
                docs, {"kind": "ServiceAccount", "name": "sa", "namespace": "kube-system"},
                {"Role/kube-system/builtin": [{"apiGroups": [""], "resources": ["configmaps"],
                                               "verbs": ["get"]}]})
            decisions = [
                self.decision("get", "nodes", name="n1"),
                self.decision("delete", "nodes", name="n1", allowed=False),  # refused: unused
                # In another namespace than the Role's: does not count.
                self.decision("update", "leases", ns="default", name="x",
                              group="coordination.k8s.io"),
            ]
            used, unused = rbac_usage.usage(rules, decisions)
            self.assertEqual([a.describe().split("  (")[0] for a, _ in used],
                             ["get nodes in all namespaces"])
            flagged = {a.describe().split("  (")[0]: a.rule.kept_reason for a in unused}
            self.assertEqual(flagged, {
                "delete nodes in all namespaces": None,
                "get endpoints in all namespaces": "documented for compatibility",
                "update leases.coordination.k8s.io x in kube-system": None,
                "get configmaps in kube-system": "built-in, for later"})
            self.assertIn("NOT JUSTIFIED", rbac_usage.report(used, unused))
            self.assertEqual(len(rbac_usage.uncovered(rules, decisions)), 1)  # the leases one
            decisions.append(self.decision("update", "leases", ns="kube-system", name="x",
                                           group="coordination.k8s.io"))
            used, unused = rbac_usage.usage(rules, decisions)
            self.assertIn("update leases.coordination.k8s.io x in kube-system",
                          [a.describe().split("  (")[0] for a, _ in used])


if __name__ == "__main__":
    unittest.main(verbosity=2)
