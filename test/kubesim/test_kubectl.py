"""kubesim driven by the real kubectl: get/describe, label, taint, cordon/uncordon, patch (all
three types, also --subresource=status where kubectl has it), create/delete, get -w, with a
token kubeconfig and a client-certificate kubeconfig, and kubectl's Forbidden message for an
RBAC denial."""

import json
import os
import selectors
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from kubesim_harness import KUBECTL, KubesimTestCase, kubectl_minor, wait_for  # noqa: E402

MINOR = kubectl_minor()
# kubectl before 1.29 validates `create -f` against the protobuf OpenAPI v2 document, which
# kubesim does not serve (it serves OpenAPI v3): turn client-side validation off for those.
CREATE_FLAGS = ["--validate=false"] if MINOR is not None and MINOR < 29 else []


@unittest.skipIf(KUBECTL is None, "kubectl not installed")
class KubectlTest(KubesimTestCase):
    KUBESIM_ARGS = ("--nodes=3", "--not-ready=node-00003")

    def k(self, *args, **kw):
        return self.sim.kubectl(*args, **kw)

    def node(self, name):
        return json.loads(self.k("get", "node", name, "-o", "json").stdout)

    def test_get_and_describe(self):
        out = self.k("get", "nodes").stdout
        lines = out.strip().splitlines()
        self.assertEqual(lines[0].split()[:5], ["NAME", "STATUS", "ROLES", "AGE", "VERSION"])
        rows = {l.split()[0]: l.split() for l in lines[1:]}
        self.assertEqual(rows["node-00001"][1], "Ready")
        self.assertEqual(rows["node-00003"][1], "NotReady")
        self.assertEqual(rows["node-00001"][4], "v1.32.0")
        names = self.k("get", "no", "-o", "name").stdout.split()
        self.assertIn("node/node-00002", names)
        desc = self.k("describe", "node", "node-00001").stdout
        self.assertIn("node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule", desc)
        self.assertIn("KubeletReady", desc)
        self.assertIn("Hostname:  node-00001", desc)
        self.assertIn("Non-terminated Pods:", desc)
        self.assertIn("HolderIdentity:  node-00001", desc)
        svc = self.k("get", "svc", "-A").stdout
        self.assertIn("kubernetes", svc)
        self.assertIn("10.96.0.1", svc)
        self.assertIn("443/TCP", self.k("describe", "svc", "kubernetes").stdout)
        leases = self.k("get", "leases", "-n", "kube-node-lease").stdout
        self.assertIn("node-00002", leases)
        self.assertIn("default", self.k("get", "namespaces").stdout)
        yaml_out = self.k("get", "node", "node-00002", "-o", "yaml").stdout
        self.assertIn("kind: Node", yaml_out)
        self.assertIn("v1", self.k("api-versions").stdout)
        self.assertIn("leases", self.k("api-resources").stdout)

    def test_label_taint_cordon(self):
        self.k("label", "node", "node-00001", "team=blue")
        self.assertEqual(self.node("node-00001")["metadata"]["labels"]["team"], "blue")
        self.k("label", "node", "node-00001", "team=red", "--overwrite")
        self.assertEqual(self.node("node-00001")["metadata"]["labels"]["team"], "red")
        self.k("label", "node", "node-00001", "team-")
        self.assertNotIn("team", self.node("node-00001")["metadata"]["labels"])
        self.k("annotate", "node", "node-00001", "example.com/note=hello")
        self.k("taint", "nodes", "node-00001", "dedicated=gpu:NoSchedule")
        taints = self.node("node-00001")["spec"]["taints"]
        self.assertIn({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, taints)
        self.k("taint", "nodes", "node-00001", "dedicated:NoSchedule-")
        keys = [t["key"] for t in self.node("node-00001")["spec"].get("taints", [])]
        # The kubelet's taint and the one the API server's admission adds at registration.
        self.assertEqual(keys, ["node.cloudprovider.kubernetes.io/uninitialized",
                                "node.kubernetes.io/not-ready"])
        bad = self.k("taint", "nodes", "node-00001", "x=y:Sometimes", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.k("cordon", "node-00002")
        self.assertTrue(self.node("node-00002")["spec"]["unschedulable"])
        self.assertIn("SchedulingDisabled", self.k("get", "node", "node-00002").stdout)
        self.k("uncordon", "node-00002")
        self.assertNotIn("unschedulable", self.node("node-00002")["spec"])

    def test_patch_all_types(self):
        self.k("patch", "node", "node-00002", "-p", '{"metadata":{"labels":{"smp":"1"}}}')
        self.k("patch", "node", "node-00002", "--type", "merge", "-p",
               '{"metadata":{"labels":{"merge":"1"}}}')
        self.k("patch", "node", "node-00002", "--type", "json", "-p",
               '[{"op":"add","path":"/metadata/labels/json","value":"1"}]')
        labels = self.node("node-00002")["metadata"]["labels"]
        self.assertEqual((labels["smp"], labels["merge"], labels["json"]), ("1", "1", "1"))
        failed = self.k("patch", "node", "node-00002", "--type", "json", "-p",
                        '[{"op":"test","path":"/metadata/labels/json","value":"2"}]', check=False)
        self.assertNotEqual(failed.returncode, 0)
        self.assertIn("The request is invalid", failed.stderr)

    @unittest.skipIf(MINOR is not None and MINOR < 24, "kubectl too old for --subresource")
    def test_patch_status_subresource(self):
        self.k("patch", "node", "node-00001", "--subresource=status", "--type=merge", "-p",
               '{"status":{"addresses":[{"type":"InternalIP","address":"10.1.2.3"},'
               '{"type":"Hostname","address":"node-00001"}]}}')
        wide = self.k("get", "node", "node-00001", "-o", "wide").stdout
        self.assertIn("10.1.2.3", wide)
        self.k("patch", "node", "node-00001", "--subresource=status", "-p",
               '{"status":{"conditions":[{"type":"NetworkUnavailable","status":"False",'
               '"reason":"RouteCreated","message":"routes created"}]}}')
        conds = {c["type"] for c in self.node("node-00001")["status"]["conditions"]}
        self.assertIn("NetworkUnavailable", conds)
        self.assertIn("Ready", conds)

    def test_create_delete_and_watch(self):
        manifest = os.path.join(self.sim.workdir, "svc.yaml")
        with open(manifest, "w") as f:
            f.write("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels: {app: web}\n"
                    "spec:\n  type: LoadBalancer\n  selector: {app: web}\n  ports:\n"
                    "  - port: 80\n    targetPort: 8080\n---\n"
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
                    "data:\n  a: \"1\"\n")
        out = self.k("create", "-f", manifest, *CREATE_FLAGS).stdout
        self.assertIn("service/web created", out)
        self.assertIn("configmap/settings created", out)
        svc = self.k("get", "svc", "web").stdout
        self.assertIn("LoadBalancer", svc)
        self.assertIn("<pending>", svc)
        self.assertIn("Endpoints:", self.k("describe", "svc", "web").stdout)
        dup = self.k("create", "-f", manifest, *CREATE_FLAGS, check=False)
        self.assertIn("AlreadyExists", dup.stderr)
        self.k("delete", "-f", manifest)
        self.assertIn("NotFound", self.k("get", "svc", "web", check=False).stderr)

        # get -w sees a change made while it runs. (Label again until the watch, which
        # starts at an unknown moment, reports one.)
        cache = os.path.join(self.sim.workdir, "kubectl-cache")
        w = subprocess.Popen([KUBECTL, "--kubeconfig=" + self.sim.kubeconfig, "--cache-dir=" + cache,
                              "get", "nodes", "-w", "--output-watch-events"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            sel = selectors.DefaultSelector()
            sel.register(w.stdout, selectors.EVENT_READ)
            lines = []
            seen = False
            deadline = time.monotonic() + 60
            i = 0
            while not seen and time.monotonic() < deadline:
                i += 1
                self.k("label", "node", "node-00002", "watched=%d" % i, "--overwrite")
                until = time.monotonic() + 1.0
                while not seen and time.monotonic() < until:
                    if not sel.select(timeout=0.2):
                        continue
                    line = w.stdout.readline()
                    if not line:
                        break
                    lines.append(line)
                    seen = line.startswith("MODIFIED") and "node-00002" in line
            self.assertTrue(seen, lines)
        finally:
            w.kill()
            w.wait()
            w.stdout.close()
            w.stderr.close()
        # delete a node; kubectl waits for it to disappear by watching it.
        self.sim.admin("POST", "nodes", {"names": ["node-extra"]})
        self.assertIn('node "node-extra" deleted', self.k("delete", "node", "node-extra").stdout)

    def test_generators_post_protobuf(self):
        # kubectl's typed clients send protobuf bodies for these.
        self.k("create", "namespace", "gen")
        self.k("create", "configmap", "cfg", "-n", "gen", "--from-literal=a=b")
        self.k("create", "secret", "generic", "sec", "-n", "gen", "--from-literal=pw=s3cret")
        self.k("create", "serviceaccount", "robot", "-n", "gen")
        self.k("create", "role", "pod-reader", "-n", "gen", "--verb=get", "--resource=pods")
        self.k("create", "rolebinding", "robot-reads", "-n", "gen", "--role=pod-reader",
               "--serviceaccount=gen:robot")
        cm = json.loads(self.k("get", "configmap", "cfg", "-n", "gen", "-o", "json").stdout)
        self.assertEqual(cm["data"], {"a": "b"})
        sec = json.loads(self.k("get", "secret", "sec", "-n", "gen", "-o", "json").stdout)
        self.assertEqual(sec["data"], {"pw": "czNjcmV0"})
        rb = json.loads(self.k("get", "rolebinding", "robot-reads", "-n", "gen", "-o", "json").stdout)
        self.assertEqual(rb["subjects"], [{"kind": "ServiceAccount", "name": "robot",
                                           "namespace": "gen"}])
        self.assertEqual(self.k("auth", "can-i", "list", "nodes").stdout.strip(), "yes")
        self.assertEqual(self.k("auth", "can-i", "get", "pods", "-n", "gen",
                                "--as=system:serviceaccount:gen:robot").stdout.strip(), "yes")
        no = self.k("auth", "can-i", "delete", "pods", "-n", "gen",
                    "--as=system:serviceaccount:gen:robot", check=False)
        self.assertEqual(no.stdout.strip(), "no")
        if MINOR is None or MINOR >= 24:
            token = self.k("create", "token", "robot", "-n", "gen").stdout.strip()
            # The token works and carries the role: get is allowed (404: no such pod), list not.
            self.assertEqual(self.sim.get("/api/v1/namespaces/gen/pods/p", token=token).status,
                             404)
            self.assertEqual(self.sim.get("/api/v1/namespaces/gen/pods", token=token).status, 403)
        self.k("delete", "namespace", "gen")
        self.assertIn("NotFound", self.k("get", "namespace", "gen", check=False).stderr)

    def test_client_certificate_kubeconfig(self):
        out = self.k("get", "nodes", kubeconfig=self.sim.cert_kubeconfig).stdout
        self.assertIn("node-00001", out)
        who = self.k("auth", "whoami", "-o", "json", kubeconfig=self.sim.cert_kubeconfig,
                     check=False)
        if who.returncode == 0:
            self.assertEqual(json.loads(who.stdout)["status"]["userInfo"]["username"],
                             "kubesim-admin")
        self.k("label", "node", "node-00003", "via=cert", kubeconfig=self.sim.cert_kubeconfig)
        self.assertEqual(self.node("node-00003")["metadata"]["labels"]["via"], "cert")

    def test_forbidden_for_a_restricted_user(self):
        kc = os.path.join(self.sim.workdir, "viewer.kubeconfig")
        self.sim.admin("POST", "credentials", {"user": "viewer", "groups": ["readers"],
                                               "kubeconfig": kc})
        r = self.k("get", "nodes", kubeconfig=kc, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('Error from server (Forbidden): nodes is forbidden: User "viewer" cannot '
                      'list resource "nodes" in API group "" at the cluster scope', r.stderr)
        # Bind the view ClusterRole in default: configmaps become readable there only.
        binding = os.path.join(self.sim.workdir, "rb.yaml")
        with open(binding, "w") as f:
            f.write("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n"
                    "  name: readers-view\n  namespace: default\nroleRef:\n"
                    "  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\n"
                    "subjects:\n- kind: Group\n  name: readers\n"
                    "  apiGroup: rbac.authorization.k8s.io\n")
        self.k("create", "-f", binding, *CREATE_FLAGS)
        self.k("get", "configmaps", "-n", "default", kubeconfig=kc)
        denied = self.k("delete", "configmap", "kube-root-ca.crt", "-n", "default", kubeconfig=kc,
                        check=False)
        self.assertIn("Error from server (Forbidden)", denied.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
