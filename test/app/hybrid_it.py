#!/usr/bin/env python3
"""One cloud-controller-manager serving a hybrid cluster: fake-cloud and the SDK's C example
(minimal.so, providerID scheme minimal://) loaded together against one kubesim. Each node is
initialised by its own provider; a vanished VM in one cloud is deleted while the other's
nodes are untouched; a node whose provider is not loaded is never deleted; a node no provider
claims gets a Warning event and is left alone; Services and routes go to their provider."""
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from harness import Cluster, free_port, https_get, is_initialized, wait_for  # noqa: E402

BUILD = os.environ["CCM_BUILD_DIR"]
MINIMAL = os.path.join(BUILD, "plugin-sdk", "examples", "minimal.so")
FAKE = os.path.join(BUILD, "plugins", "fake-cloud.so")


def provider_id(node):
    return node["spec"].get("providerID", "")


class HybridClusterTest(unittest.TestCase):

    def test_two_providers_serve_one_cluster(self):
        with Cluster() as c:
            plugins = self.plugin_dir(c)
            machines = os.path.join(c.tmp, "machines.txt")
            with open(machines, "w") as f:
                f.write("node-a zone-m small 10.10.0.1\n")
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            c.add_nodes(names=["fc-1", "fc-2", "node-a", "orphan", "ghost"])
            c.api.patch("/api/v1/nodes/node-a", {"metadata": {"labels": {"cloud": "minimal"}}})
            c.api.patch("/api/v1/nodes/orphan", {"metadata": {"labels": {"cloud": "other"}}})
            c.api.patch("/api/v1/nodes/ghost", {"spec": {"providerID": "gone://ghost"}})

            port = free_port()
            ccm = c.start_ccm(cloud, plugin_dir=plugins, extra=[
                "--secure-port=%d" % port, "--bind-address=127.0.0.1",
                "--cloud-provider=fake-cloud,minimal",
                "--cloud-config=fake-cloud=%s,minimal=%s" % (cloud, machines),
                "--provider-node-selector=fake-cloud=!cloud",
                "--provider-node-selector=minimal=cloud=minimal",
                "--load-balancer-class-provider=example.com/minimal=minimal",
                "--node-monitor-period=1s",
                "--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16",
                "--configure-cloud-routes=true", "--route-reconciliation-period=1s"])

            # Nodes of both kinds initialised by their own provider.
            wait_for(lambda: all(is_initialized(c.node(n)) for n in ("fc-1", "fc-2", "node-a")),
                     "the nodes of both providers initialised", timeout=120)
            self.assertTrue(provider_id(c.node("fc-1")).startswith("fake://"))
            self.assertEqual(provider_id(c.node("node-a")), "minimal://node-a")
            self.check_health_and_metrics(c, port)

            # Claimed by nobody, or owned by a provider not loaded: a Warning event, no action.
            def warned(name):
                return [e for e in c.events("ProviderNotDetermined")
                        if e["involvedObject"]["name"] == name]
            orphan = wait_for(lambda: warned("orphan"), "a warning on the unclaimed node")
            self.assertEqual(orphan[0]["type"], "Warning")
            self.assertIn("no provider's node selector matches", orphan[0]["message"])
            ghost = wait_for(lambda: warned("ghost"), "a warning on the node of no loaded provider")
            self.assertIn("gone://ghost", ghost[0]["message"])
            self.assertFalse(is_initialized(c.node("orphan")))
            self.assertFalse(is_initialized(c.node("ghost")))

            # Services by class: no class -> fake-cloud; the minimal class -> minimal, which
            # has no load balancers (an error for that Service, nothing in fake-cloud).
            for name, cls in (("web", None), ("web-m", "example.com/minimal")):
                spec = {"type": "LoadBalancer", "ports": [{"port": 80, "protocol": "TCP"}]}
                if cls:
                    spec["loadBalancerClass"] = cls
                c.api.post("/api/v1/namespaces/default/services",
                           {"metadata": {"name": name}, "spec": spec})
            wait_for(lambda: [lb for lb in c.cloud_state()["loadBalancers"]
                              if lb["service"] == "web"], "the fake-cloud load balancer")
            def ingress(name):
                svc = c.api.get("/api/v1/namespaces/default/services/" + name)
                return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress")
            wait_for(lambda: ingress("web"), "the fake-cloud load balancer's address")
            # Its provider's annotations are written (the domain is the serving provider's).
            def provider_annotations():
                svc = c.api.get("/api/v1/namespaces/default/services/web")
                return [k for k in (svc["metadata"].get("annotations") or {})
                        if k.startswith("fake-cloud.ccm.io/")]
            wait_for(provider_annotations, "fake-cloud's annotations on its Service")
            failed = wait_for(lambda: [e for e in c.events()
                                       if e["involvedObject"]["name"] == "web-m"
                                       and e["type"] == "Warning"],
                              "the minimal-class Service's error")
            self.assertIn("provider minimal", failed[0]["message"])
            self.assertFalse(ingress("web-m"))
            lbs = c.cloud_state()["loadBalancers"]
            self.assertEqual([lb["service"] for lb in lbs], ["web"], lbs)
            # Its backends are fake-cloud's nodes only.
            self.assertEqual(sorted(lbs[0]["nodes"]), ["fc-1", "fc-2"], lbs[0])

            # Routes: fake-cloud's nodes get routes in fake-cloud; no other node does.
            wait_for(lambda: {"fc-1", "fc-2"} <= {r["targetNode"]
                                                  for r in c.cloud_state()["routes"]},
                     "routes for fake-cloud's nodes")
            targets = {r["targetNode"] for r in c.cloud_state()["routes"]}
            self.assertEqual(targets, {"fc-1", "fc-2"})

            # A VM vanishes from fake-cloud: its node is deleted; minimal's node, also NotReady,
            # and the node of the provider that is not loaded are never deleted.
            c.update_cloud(instances=[{"name": "fc-2", "state": "absent"}])
            c.set_ready(["fc-2", "node-a", "ghost"], "False")
            wait_for(lambda: not c.node_exists("fc-2"), "the vanished fake-cloud node deleted")
            time.sleep(3)
            for name in ("fc-1", "node-a", "ghost", "orphan"):
                self.assertTrue(c.node_exists(name), name)
            deleting = [e["involvedObject"]["name"] for e in c.events("DeletingNode")]
            self.assertEqual(deleting, ["fc-2"])
            # Zones are kept per provider: minimal's only zone is fully disrupted (node-a is
            # NotReady), which did not stop fake-cloud's deletion.
            self.assertNotIn("Every zone is fully disrupted", ccm.output())
            # Every fake-cloud node NotReady and its VM gone, while minimal's node is Ready:
            # that looks like a partition of fake-cloud's nodes, so nothing of it is deleted
            # (with one set of zones for all providers, minimal's Ready node would hide it).
            c.update_cloud(instances=[{"name": "fc-1", "state": "absent"},
                                      {"name": "fc-2", "state": "absent"}])
            c.set_ready(["node-a"], "True")
            c.set_ready(["fc-1"], "False")
            wait_for(lambda: 'Every zone of a provider is fully disrupted' in ccm.output()
                     and 'provider="fake-cloud"' in ccm.output(), "fake-cloud's zones protected")
            self.assertTrue(c.node_exists("fc-1"))
            self.assertTrue(ccm.alive(), ccm.output()[-3000:])
            self.assertEqual(ccm.stop(), 0)

    def check_health_and_metrics(self, c, port):
        """A health check per provider, and metrics that name the provider."""
        base = "https://127.0.0.1:%d" % port
        token = c.admin("POST", "/credentials", {"user": "ops", "groups": ["system:masters"],
                                                 "type": "token"})["token"]
        for endpoint in ("healthz", "readyz"):
            status, body = https_get("%s/%s?verbose" % (base, endpoint))
            self.assertEqual(status, 200, body)
            self.assertIn("[+]provider-fake-cloud ok\n", body)
            self.assertIn("[+]provider-minimal ok\n", body)
        status, body = https_get(base + "/livez?verbose")
        self.assertEqual(status, 200, body)
        self.assertNotIn("provider-", body)
        for name in ("fake-cloud", "minimal"):
            self.assertEqual(https_get("%s/healthz/provider-%s" % (base, name), token=token),
                             (200, "ok"))
        self.assertEqual(https_get(base + "/healthz/provider-other", token=token)[0], 404)
        # Each provider initialised its own nodes: the calls are counted per provider, and
        # minimal's (no batch capability) are never added to fake-cloud's.
        status, body = https_get(base + "/metrics", token=token)
        self.assertEqual(status, 200, body)
        calls = {}
        for provider, cap, n in re.findall(r'^ccm_provider_calls_total\{provider="([^"]+)",'
                                           r'capability="([^"]+)",[^}]*code="OK"\} (\S+)$',
                                           body, re.M):
            calls[(provider, cap)] = calls.get((provider, cap), 0) + float(n)
        self.assertGreaterEqual(calls.get(("minimal", "ccm.instances/1"), 0), 1, calls)
        self.assertGreaterEqual(calls.get(("fake-cloud", "ccm.instances.batch/1"), 0) +
                                calls.get(("fake-cloud", "ccm.instances/1"), 0), 1, calls)
        self.assertNotIn(("minimal", "ccm.instances.batch/1"), calls)
        self.assertRegex(body, r'(?m)^ccm_provider_info\{provider="minimal",name="minimal",')
        self.assertEqual(body.count("# TYPE ccm_provider_calls_total "), 1)

    def plugin_dir(self, c):
        plugins = os.path.join(c.tmp, "plugins")
        os.mkdir(plugins, 0o755)
        for so in (FAKE, MINIMAL):
            shutil.copy(so, plugins)
        return plugins

    def test_check_config_checks_and_names_every_provider(self):
        with Cluster() as c:
            plugins = self.plugin_dir(c)
            machines = os.path.join(c.tmp, "machines.txt")
            with open(machines, "w") as f:
                f.write("node-a zone-m small 10.10.0.1\n")
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            base = c.ccm_args(cloud, plugin_dir=plugins) + ["--check-config",
                                                             "--cloud-provider=fake-cloud,minimal"]
            r = subprocess.run(base + ["--cloud-config=fake-cloud=%s,minimal=%s"
                                       % (cloud, machines)],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            blocks = r.stdout.split("configuration valid\n")
            self.assertTrue(blocks[0].startswith("provider fake-cloud "), r.stdout)
            self.assertTrue(blocks[1].startswith("provider minimal "), r.stdout)
            self.assertEqual(blocks[2], "")
            # minimal's config cannot be read: the error names it.
            r = subprocess.run(base + ["--cloud-config=fake-cloud=%s,minimal=/no/such/file"
                                       % cloud],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1)
            self.assertIn("provider minimal: cannot read --cloud-config=/no/such/file", r.stderr)
            # A plain path is ambiguous with several providers; a rule naming an unlisted
            # provider is a bad command line.
            for bad, want in ((["--cloud-config=" + cloud], "NAME=PATH"),
                              (["--cloud-config=fake-cloud=" + cloud,
                                "--provider-node-selector=openstack=x"], "openstack")):
                r = subprocess.run(base + bad, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(want, r.stderr)

    def test_routing_flags_with_one_provider(self):
        """A class mapped to the one loaded provider is served as --load-balancer-class
        (a notice says so); a rule naming a provider that is not listed is a bad command
        line."""
        with Cluster() as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            base = c.ccm_args(cloud) + ["--check-config"]
            r = subprocess.run(base + ["--load-balancer-class-provider=example.com/x=fake-cloud"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("--load-balancer-class-provider only adds its classes", r.stderr)
            self.assertNotIn("have no effect", r.stderr)
            r = subprocess.run(base + ["--provider-node-selector=fake-cloud=cloud=a"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("--provider-node-selector and --provider-discovery have no effect",
                          r.stderr)
            r = subprocess.run(base + ["--load-balancer-class-provider=example.com/x=openstack"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("openstack", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
