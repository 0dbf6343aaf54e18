#!/usr/bin/env python3
"""The openstack provider end to end, through the host: kubesim with kubelet-like nodes, the
real cloud-controller-manager binary loading openstack.so from the build's plugins/ folder
(--cloud-provider=openstack), and the OpenStack simulator (openstack_sim.py) as the cloud, all on
127.0.0.1. Nothing is faked between the host and the plugin or between the plugin and the
cloud's HTTP APIs.

  - nodes: kubelet-registered nodes named like Nova servers are initialised (providerID,
    flavor, zone, region, addresses by the provider's documented rules); a NotReady node whose
    server is gone from Nova is deleted after the host's confirmation, a Ready one is kept;
  - load balancers: a LoadBalancer Service gets a floating IP as ingress once Octavia has
    moved its load balancer through the provisioning states; listeners, pools, members and
    monitors follow the Service's ports and the nodes; a busy Octavia makes the host retry; a
    restarted host writes nothing; deleting the Service (or changing its type) leaves nothing
    behind (or only the kept floating IP), with and without cascade delete;
  - security groups (manage-security-groups): the Service's group on its member ports, a
    joining node's port included, removed with the Service;
  - routes: a route, an ownership tag and an allowed address pair per node's pod CIDR (IPv4
    and IPv6) on the configured router, removed with the node;
  - a bad cloud.conf stops the host with one error naming the section and key.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import json
import os
import re
import subprocess
import sys
import unittest
import urllib.request

SOURCE = os.environ["CCM_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "test", "support"))
from harness import Cluster, ApiError, wait_for, is_initialized, labels, taint_keys  # noqa: E402
sys.path.insert(0, os.path.join(SOURCE, "test", "reliability"))
from relsupport import Scraper, free_port, secure_args  # noqa: E402

OS_SIM = os.path.join(SOURCE, "openstack-sim", "openstack_sim.py")
CLUSTER = "kubernetes"  # the host's default --cluster-name
FIP_NETWORK = "net-public"
LB_SUBNET = "sub-private"
KEEP_FIP = "loadbalancer.openstack.org/keep-floatingip"
MONITOR = "loadbalancer.openstack.org/enable-health-monitor"
LB_ID = "loadbalancer.openstack.org/load-balancer-id"
LB_ADDRESS = "loadbalancer.openstack.org/load-balancer-address"


class OsSim:
    """openstack_sim.py as a separate process, seeded with servers (see its module docstring)."""

    def __init__(self, directory, seed):
        self.directory = directory
        self.seed = seed

    def __enter__(self):
        seed_path = os.path.join(self.directory, "os-seed.json")
        with open(seed_path, "w") as f:
            json.dump(self.seed, f)
        port_file = os.path.join(self.directory, "os-sim.json")
        self.log_path = os.path.join(self.directory, "os-sim.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(["/usr/bin/python3", OS_SIM, "--port", "0", "--port-file",
                                      port_file, "--seed", seed_path],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: os.path.exists(port_file) or self.proc.poll() is not None,
                 "the OpenStack simulator to start", timeout=30)
        if self.proc.poll() is not None:
            raise AssertionError("openstack_sim.py exited: see " + self.log_path)
        with open(port_file) as f:
            self.url = json.load(f)["url"]
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.log.close()
        if exc[0] is not None:
            with open(self.log_path, "rb") as f:
                print("---- os-sim.log ----\n" + f.read().decode(errors="replace")[-3000:])
        return False

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
            return json.loads(text) if text else None

    def state(self):
        return self.call("GET", "/_sim/state")

    def control(self, what, body):
        return self.call("POST", "/_sim/" + what, body)

    def server_id(self, name):
        ids = [s["id"] for s in self.state()["servers"] if s["name"] == name]
        assert len(ids) == 1, (name, ids)
        return ids[0]

    def cloud_conf(self, path, sections=""):
        """A cloud.conf for this simulator (password auth in RegionOne) plus `sections`."""
        with open(path, "w") as f:
            f.write("[Global]\n"
                    "auth-url = %s/identity/v3\n"
                    "username = demo\n"
                    "password = demo-password\n"
                    "user-domain-name = Default\n"
                    "tenant-id = p-demo\n"
                    "region = RegionOne\n%s" % (self.url, sections))
        return path


def server(name, ip, flavor="flv-small", az="az-1", floating=None, more_networks=(), **fields):
    """An add_server spec: one port on the private network (with a floating IP Nova reports
    when asked), more if asked."""
    first = {"network": "private", "ip": ip}
    if floating:
        first["floating"] = floating
    spec = {"name": name, "flavor": flavor, "az": az, "networks": [first] + list(more_networks)}
    spec.update(fields)
    return spec


def addresses(node):
    return [(a["type"], a["address"]) for a in node.get("status", {}).get("addresses", [])]


def condition(node, kind):
    for c in node.get("status", {}).get("conditions", []) or []:
        if c["type"] == kind:
            return c
    return None


def all_initialized(cluster, count):
    nodes = cluster.nodes()
    return len(nodes) == count and all(is_initialized(n) for n in nodes)


def error_lines(output):
    """klog text error lines (E<mmdd> ...)."""
    return [line for line in output.splitlines() if len(line) > 1 and line[0] == "E" and
            line[1].isdigit()]


class NodesTest(unittest.TestCase):

    def test_nodes_initialised_and_a_vanished_not_ready_node_deleted(self):
        servers = [
            # A floating IP Nova reports: ExternalIP after the port's InternalIP.
            server("node-00001", "10.0.0.21", floating="172.24.4.221"),
            # Dual stack and a hostname in the metadata: two InternalIPs and the cloud's
            # Hostname, which replaces the kubelet's.
            server("node-00002", "10.0.0.22", flavor="flv-large", az="az-2",
                   more_networks=[{"network": "private", "ip": "fd00::22"}],
                   metadata={"hostname": "node-00002.example.org"}),
            # An address on a public-network-name network is ExternalIP, not InternalIP.
            server("node-00003", "10.0.0.23",
                   more_networks=[{"network": "public", "ip": "172.24.4.223"}]),
        ]
        with Cluster(nodes=3) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[Networking]\npublic-network-name = public\n")
            ccm = c.start_ccm(conf, provider="openstack", extra=["--node-monitor-period=1s"])
            wait_for(lambda: all_initialized(c, 3), "the 3 nodes initialised")
            want = {
                "node-00001": ("m1.small", "az-1", [("InternalIP", "10.0.0.21"),
                                                   ("ExternalIP", "172.24.4.221"),
                                                   ("Hostname", "node-00001")]),
                "node-00002": ("m1.large", "az-2", [("InternalIP", "10.0.0.22"),
                                                   ("InternalIP", "fd00::22"),
                                                   ("Hostname", "node-00002.example.org")]),
                "node-00003": ("m1.small", "az-1", [("InternalIP", "10.0.0.23"),
                                                   ("ExternalIP", "172.24.4.223"),
                                                   ("Hostname", "node-00003")]),
            }
            ids = {}
            for n in c.nodes():
                name = n["metadata"]["name"]
                flavor, zone, addrs = want[name]
                ids[name] = sim.server_id(name)
                self.assertEqual(n["spec"]["providerID"], "openstack:///" + ids[name])
                lb = labels(n)
                for key in ("node.kubernetes.io/instance-type",
                            "beta.kubernetes.io/instance-type"):
                    self.assertEqual(lb[key], flavor, key)
                for key in ("topology.kubernetes.io/zone",
                            "failure-domain.beta.kubernetes.io/zone"):
                    self.assertEqual(lb[key], zone, key)
                for key in ("topology.kubernetes.io/region",
                            "failure-domain.beta.kubernetes.io/region"):
                    self.assertEqual(lb[key], "RegionOne", key)
                self.assertEqual(addresses(n), addrs, name)
                # ccm's taint is gone; the not-ready taint the API server's admission put on
                # the new Node is the node lifecycle controller's to remove, not ccm's.
                self.assertEqual(taint_keys(n), ["node.kubernetes.io/not-ready"])
            self.assertIn('"Loaded cloud provider" provider="openstack"', ccm.output())

            # Both servers vanish from Nova; only the NotReady node may go.
            sim.control("remove_server", {"id": ids["node-00001"]})
            sim.control("remove_server", {"id": ids["node-00002"]})
            c.set_ready(["node-00002"], "False")
            wait_for(lambda: not c.node_exists("node-00002"), "the vanished node deleted")
            out = ccm.output()
            first = out.index("will delete the node if this is confirmed")
            self.assertLess(first, out.index('"Deleting node because its instance does not exist'))
            ev = c.events("DeletingNode")
            self.assertEqual([e["involvedObject"]["name"] for e in ev], ["node-00002"])
            # The deletion took at least two monitor passes: by now node-00001 (Ready, never
            # checked) and node-00003 (its server exists) have been seen several times.
            self.assertTrue(c.node_exists("node-00001"))
            self.assertTrue(c.node_exists("node-00003"))
            # Nova answered 404 for the deleted server, by its ID (the providerID).
            reqs = sim.call("GET", "/_sim/requests")["requests"]
            self.assertTrue(any(r["rel"] == "/servers/" + ids["node-00002"] and
                                r.get("status") == 404 for r in reqs))
            self.assertEqual(ccm.stop(), 0)


    def test_regional_provider_ids(self):
        # OS_CCM_REGIONAL=true: providerIDs carry the region, and the lifecycle controller's
        # existence checks read them back. Six nodes registered at once mostly go through
        # batch metadata (one server list); with every node NotReady the host would suspect
        # a partition and delete nothing, so only one goes NotReady.
        names = ["node-%05d" % i for i in range(1, 7)]
        servers = [server(n, "10.0.0.%d" % (30 + i)) for i, n in enumerate(names)]
        with Cluster(nodes=6) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"))
            c.start_ccm(conf, provider="openstack", extra=["--node-monitor-period=1s"],
                        env={"OS_CCM_REGIONAL": "true"})
            wait_for(lambda: all_initialized(c, 6), "the nodes initialised")
            for i, name in enumerate(names):
                n = c.node(name)
                self.assertEqual(n["spec"]["providerID"],
                                 "openstack://RegionOne/" + sim.server_id(name))
                self.assertEqual(addresses(n), [("InternalIP", "10.0.0.%d" % (30 + i)),
                                                ("Hostname", name)])
            sid = sim.server_id("node-00001")
            sim.control("remove_server", {"id": sid})
            c.set_ready(["node-00001"], "False")
            wait_for(lambda: not c.node_exists("node-00001"), "the vanished node deleted")


class LoadBalancerTest(unittest.TestCase):

    def assert_load_balancer(self, st, svc, node_ips, monitors):
        """The simulator holds exactly the load balancer OCCM would make for svc, and returns
        its floating IP address."""
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        lb_name = "kube_service_%s_%s_%s" % (CLUSTER, ns, name)
        lbs = [x for x in st["loadbalancers"] if x["name"] == lb_name]
        self.assertEqual(len(lbs), 1, lb_name)
        lb = lbs[0]
        self.assertEqual(lb["provisioning_status"], "ACTIVE")
        self.assertEqual(lb["vip_subnet_id"], LB_SUBNET)
        self.assertEqual(lb["description"], "Kubernetes external service %s/%s from cluster %s"
                         % (ns, name, CLUSTER))
        self.assertEqual(st["lb_history"][lb["id"]][:2], ["PENDING_CREATE", "ACTIVE"])
        listeners = {x["protocol_port"]: x for x in st["listeners"]
                     if x["loadbalancers"][0]["id"] == lb["id"]}
        ports = svc["spec"]["ports"]
        self.assertEqual(sorted(listeners), sorted(p["port"] for p in ports))
        pools = {x["id"]: x for x in st["pools"]}
        mons = {x["id"]: x for x in st["healthmonitors"]}
        for i, p in enumerate(ports):
            lst = listeners[p["port"]]
            self.assertEqual(lst["name"], "listener_%d_%s" % (i, lb_name))
            self.assertEqual(lst["protocol"], "TCP")
            pool = pools[lst["default_pool_id"]]
            self.assertEqual(pool["name"], "pool_%d_%s" % (i, lb_name))
            members = {(m["name"], m["address"], m["protocol_port"])
                       for m in st["members"][pool["id"]]}
            self.assertEqual(members, {(n, ip, p["nodePort"]) for n, ip in node_ips.items()})
            if monitors:
                mon = mons[pool["healthmonitor_id"]]
                self.assertEqual(mon["name"], "monitor_%d_%s" % (i, lb_name))
                self.assertEqual(mon["type"], "TCP")
            else:
                self.assertIsNone(pool["healthmonitor_id"])
        fips = [f for f in st["floatingips"] if f["port_id"] == lb["vip_port_id"]]
        self.assertEqual(len(fips), 1)
        self.assertEqual(fips[0]["floating_network_id"], FIP_NETWORK)
        self.assertEqual(fips[0]["description"],
                         "Floating IP for Kubernetes external service %s/%s from cluster %s"
                         % (ns, name, CLUSTER))
        return fips[0]["floating_ip_address"]

    def test_a_claimed_load_balancer_class_is_served_and_others_left_alone(self):
        # Beside MetalLB: ccm claims one class (and Services without one); a Service of
        # another class gets nothing from Octavia, no finalizer and no event.
        servers = [server("node-00001", "10.0.0.51")]
        with Cluster(nodes=1) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[LoadBalancer]\nsubnet-id = %s\nfloating-network-id = %s\n"
                                  % (LB_SUBNET, FIP_NETWORK))
            ccm = c.start_ccm(conf, extra=["--load-balancer-class=openstack.example.com/octavia"],
                              provider="openstack")
            wait_for(lambda: all_initialized(c, 1), "the node initialised")

            def service(name, cls=None):
                spec = {"type": "LoadBalancer", "selector": {"app": name},
                        "ports": [{"port": 80, "protocol": "TCP"}]}
                if cls:
                    spec["loadBalancerClass"] = cls
                return c.api.post("/api/v1/namespaces/default/services",
                                  {"metadata": {"name": name}, "spec": spec})

            service("claimed", "openstack.example.com/octavia")
            service("plain")
            service("metallb", "metallb.io/metallb")

            def ingress(name):
                svc = c.api.get("/api/v1/namespaces/default/services/" + name)
                return (svc["status"].get("loadBalancer") or {}).get("ingress") or []
            wait_for(lambda: ingress("claimed") and ingress("plain"), "the claimed ingresses")
            names = sorted(lb["name"] for lb in sim.state()["loadbalancers"])
            self.assertEqual(names, ["kube_service_kubernetes_default_claimed",
                                     "kube_service_kubernetes_default_plain"])
            other = c.api.get("/api/v1/namespaces/default/services/metallb")
            self.assertEqual(ingress("metallb"), [])
            self.assertNotIn("finalizers", other["metadata"])
            self.assertFalse([e for e in c.events() if
                              e.get("involvedObject", {}).get("name") == "metallb"])
            self.assertEqual(ccm.stop(), 0)

    def test_service_load_balancer_lifecycle(self):
        # Every change leaves the load balancer PENDING_* for one more GET; deletion is one
        # cascade call.
        self.lifecycle(cascade=True, pending_polls=1)

    def test_service_load_balancer_lifecycle_without_cascade_delete(self):
        # Octavia refuses to delete a load balancer with children: the provider must remove
        # the monitors, pools and listeners one by one first.
        self.lifecycle(cascade=False, pending_polls=0)

    def lifecycle(self, cascade, pending_polls):
        servers = [server("node-00001", "10.0.0.41"), server("node-00002", "10.0.0.42")]
        seed = {"config": {"pending_polls": pending_polls}, "servers": servers}
        with Cluster(nodes=2) as c, OsSim(c.tmp, seed) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[LoadBalancer]\nsubnet-id = %s\nfloating-network-id = %s\n"
                                  "ccm-active-wait-timeout = 3s\ncascade-delete = %s\n"
                                  % (LB_SUBNET, FIP_NETWORK, "true" if cascade else "false"))
            port = free_port()
            ccm = c.start_ccm(conf, extra=secure_args(port), provider="openstack")
            wait_for(lambda: all_initialized(c, 2), "the nodes initialised")
            web = c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "web", "annotations": {MONITOR: "true"}},
                "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [
                    {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                    {"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}]}})
            kept = c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "kept", "annotations": {KEEP_FIP: "true"}},
                "spec": {"type": "LoadBalancer", "selector": {"app": "kept"}, "ports": [
                    {"port": 5432, "protocol": "TCP"}]}})

            def ingress(name):
                svc = c.api.get("/api/v1/namespaces/default/services/" + name)
                return [i.get("ip") for i in svc["status"].get("loadBalancer", {})
                        .get("ingress", []) or []]
            wait_for(lambda: ingress("web") and ingress("kept"), "both Services' ingress")
            st = sim.state()
            nodes = {"node-00001": "10.0.0.41", "node-00002": "10.0.0.42"}
            self.assertEqual(ingress("web"), [self.assert_load_balancer(st, web, nodes, True)])
            kept_ip = self.assert_load_balancer(st, kept, nodes, False)
            self.assertEqual(ingress("kept"), [kept_ip])
            self.assertEqual(len(st["loadbalancers"]), 2)
            self.assertEqual(len(st["floatingips"]), 2)

            # OCCM's annotations written back (ABI 1.1): the load balancer's ID and the
            # published address; the user's annotation is left as it was.
            def annotations(name):
                svc = c.api.get("/api/v1/namespaces/default/services/" + name)
                return svc["metadata"].get("annotations", {})
            lb_ids = {lb["name"].rsplit("_", 1)[-1]: lb["id"] for lb in st["loadbalancers"]}
            wait_for(lambda: annotations("web").get(LB_ID) == lb_ids["web"] and
                     annotations("kept").get(LB_ID) == lb_ids["kept"], "the annotations written")
            self.assertEqual(annotations("web").get(LB_ADDRESS), ingress("web")[0])
            self.assertEqual(annotations("kept").get(LB_ADDRESS), kept_ip)
            self.assertEqual(annotations("web").get(MONITOR), "true")
            # OCCM's metric names on /metrics, without the host's prefix.
            samples = Scraper(c, port).metrics()
            names = {(n, lbl.get("request")) for n, lbl, _ in samples}
            self.assertIn(("openstack_api_requests_total", "loadbalancer_create"), names)
            self.assertIn(("openstack_api_request_duration_seconds_count", "loadbalancer_create"),
                          names)
            self.assertFalse([n for n, _ in names if n.startswith("ccm_provider_openstack_")])
            self.assertTrue([lbl for n, lbl, _ in samples if n == "ccm_provider_info" and
                             lbl.get("metric_namespace") == "openstack"])
            # OCCM's reconcile metrics, recorded by the host for the provider's namespace.
            ensures = [v for n, lbl, v in samples if n == "cloudprovider_openstack_reconcile_total"
                       and lbl.get("operation") == "loadbalancer_ensure"]
            self.assertEqual(len(ensures), 1)
            self.assertGreaterEqual(ensures[0], 2)  # one per Service at least
            self.assertTrue([n for n, lbl, _ in samples
                             if n == "cloudprovider_openstack_reconcile_duration_seconds_bucket"
                             and lbl.get("operation") == "loadbalancer_ensure"
                             and lbl.get("le") == "1000"])

            # A third node while Octavia is busy: the member update leaves each load
            # balancer PENDING_UPDATE, the provider answers "try again later" (the host may
            # first update with the node still uninitialised, which changes nothing: a node
            # without addresses is no member), and the host retries.
            sim.control("config", {"hold_pending": True})
            sim.control("add_server", server("node-00003", "10.0.0.43"))
            c.add_nodes(names=["node-00003"])

            # Busy is normal progress: a Normal event, never a Warning.
            def busy_reported(name):
                return any("Octavia is still working" in e["message"] and
                           e["involvedObject"]["name"] == name and e["type"] == "Normal"
                           for e in c.events("LoadBalancerPending"))
            wait_for(lambda: busy_reported("web") and busy_reported("kept"),
                     "the busy load balancers reported", timeout=90)
            self.assertEqual([e["message"] for e in c.events()
                              if e["type"] == "Warning" and "still working" in e["message"]], [])

            def successes(name):
                return sum(e.get("count", 1) for e in c.events()
                           if e["involvedObject"]["name"] == name and
                           e["reason"] in ("UpdatedLoadBalancer", "EnsuredLoadBalancer"))
            before = {name: successes(name) for name in ("web", "kept")}
            sim.control("config", {"hold_pending": False})
            nodes["node-00003"] = "10.0.0.43"
            wait_for(lambda: all(successes(n) > k for n, k in before.items()),
                     "both load balancers synced once Octavia is done", timeout=90)
            st = sim.state()
            self.assert_load_balancer(st, web, nodes, True)
            self.assert_load_balancer(st, kept, nodes, False)
            for history in st["lb_history"].values():
                self.assertIn("PENDING_UPDATE", history)

            # Deleting the Services removes everything but the kept (detached) floating IP.
            c.api.delete("/api/v1/namespaces/default/services/web")
            c.api.delete("/api/v1/namespaces/default/services/kept")

            def gone(name):
                try:
                    c.api.get("/api/v1/namespaces/default/services/" + name)
                    return False
                except ApiError as e:
                    if e.code == 404:
                        return True
                    raise
            wait_for(lambda: gone("web") and gone("kept"), "the Services deleted", timeout=90)
            st = sim.state()
            self.assertEqual(st["loadbalancers"], [])
            self.assertEqual(st["listeners"], [])
            self.assertEqual(st["pools"], [])
            self.assertEqual(st["members"], {})
            self.assertEqual(st["healthmonitors"], [])
            self.assertEqual([p for p in st["ports"] if p["device_owner"] == "Octavia"], [])
            self.assertEqual(len(st["lb_history"]), 2)
            for history in st["lb_history"].values():
                self.assertEqual(history[-2:], ["PENDING_DELETE", "DELETED"])
            fips = st["floatingips"]
            self.assertEqual([f["floating_ip_address"] for f in fips], [kept_ip])
            self.assertIsNone(fips[0]["port_id"])
            self.assertEqual(len(c.events("DeletedLoadBalancer")), 2)
            lb_deletes = [r for r in sim.call("GET", "/_sim/requests")["requests"]
                          if r["method"] == "DELETE" and r["service"] == "load-balancer" and
                          re.fullmatch(r"/v2(\.0)?/lbaas/loadbalancers/[^/]+", r["rel"])]
            self.assertEqual(len(lb_deletes), 2)
            for r in lb_deletes:
                self.assertEqual(r["query"].get("cascade"), ["true"] if cascade else None)
                self.assertEqual(r["status"], 204)
            self.assertEqual(ccm.stop(), 0)


    def test_dual_stack_service_gets_an_ingress_per_family(self):
        # kubesim serves dual-stack Services; nodes have an IPv4 and an IPv6 address; Octavia
        # (2.27) takes additional VIPs: one load balancer, the floating IP and the IPv6 VIP.
        names = ["node-00001", "node-00002"]
        servers = [server(n, "10.0.0.%d" % (61 + i),
                          more_networks=[{"network": "private", "ip": "fd00::%d" % (61 + i)}])
                   for i, n in enumerate(names)]
        with Cluster(nodes=2, kubesim_args=["--service-cluster-ip-range=10.96.0.0/12,"
                                            "fd00:96::/108"]) as c, \
                OsSim(c.tmp, {"servers": servers}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[LoadBalancer]\nsubnet-id = %s\nfloating-network-id = %s\n"
                                  % (LB_SUBNET, FIP_NETWORK))
            ccm = c.start_ccm(conf, provider="openstack")
            wait_for(lambda: all_initialized(c, 2), "the nodes initialised")
            c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "dual"},
                "spec": {"type": "LoadBalancer", "selector": {"app": "dual"},
                         "ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"],
                         "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}})

            def ingress():
                svc = c.api.get("/api/v1/namespaces/default/services/dual")
                return [i.get("ip") for i in svc["status"].get("loadBalancer", {})
                        .get("ingress", []) or []]
            wait_for(lambda: len(ingress()) == 2, "both ingress addresses", timeout=90)
            st = sim.state()
            self.assertEqual(len(st["loadbalancers"]), 1)
            lb = st["loadbalancers"][0]
            fips = [f["floating_ip_address"] for f in st["floatingips"]]
            v6 = [v["ip_address"] for v in lb["additional_vips"]]
            self.assertEqual(ingress(), fips + v6)
            self.assertTrue(v6[0].startswith("fd00::"))

            c.api.delete("/api/v1/namespaces/default/services/dual")
            wait_for(lambda: not sim.state()["loadbalancers"] and
                     not sim.state()["floatingips"], "the load balancer deleted", timeout=90)
            self.assertEqual(ccm.stop(), 0)

    def test_load_balancer_follows_the_service_and_the_nodes(self):
        servers = [server("node-%05d" % i, "10.0.0.%d" % (60 + i)) for i in (1, 2, 3)]
        with Cluster(nodes=3) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[LoadBalancer]\nsubnet-id = %s\nfloating-network-id = %s\n"
                                  "create-monitor = true\n" % (LB_SUBNET, FIP_NETWORK))
            ccm = c.start_ccm(conf, provider="openstack")
            wait_for(lambda: all_initialized(c, 3), "the nodes initialised")
            path = "/api/v1/namespaces/default/services/local"
            svc = c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "local"},
                "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                         "sessionAffinity": "ClientIP",
                         "loadBalancerSourceRanges": ["192.0.2.0/24"],
                         "selector": {"app": "local"},
                         "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
            hc_port = svc["spec"]["healthCheckNodePort"]
            wait_for(lambda: c.api.get(path)["status"].get("loadBalancer", {}).get("ingress"),
                     "the ingress")

            def check(st, ports, nodes):
                """One listener/pool/monitor per port; members are `nodes`."""
                self.assertEqual(len(st["loadbalancers"]), 1)
                self.assertEqual(len(st["listeners"]), len(ports))
                by_port = {x["protocol_port"]: x for x in st["listeners"]}
                pools = {x["id"]: x for x in st["pools"]}
                mons = {x["id"]: x for x in st["healthmonitors"]}
                for p in ports:
                    lst = by_port[p["port"]]
                    self.assertEqual(lst["protocol"], p["protocol"])
                    self.assertEqual(lst["allowed_cidrs"], ["192.0.2.0/24"])
                    pool = pools[lst["default_pool_id"]]
                    self.assertEqual(pool["session_persistence"], {"type": "SOURCE_IP"})
                    self.assertEqual({(m["name"], m["address"], m["protocol_port"],
                                       m["monitor_port"]) for m in st["members"][pool["id"]]},
                                     {(n, "10.0.0.%d" % (60 + int(n[-1])), p["nodePort"],
                                       hc_port) for n in nodes})
                    # externalTrafficPolicy: Local checks the nodes' /healthz.
                    mon = mons[pool["healthmonitor_id"]]
                    self.assertEqual((mon["type"], mon["url_path"]), ("HTTP", "/healthz"))
            names = ["node-00001", "node-00002", "node-00003"]
            check(sim.state(), svc["spec"]["ports"], names)

            # A second port: a UDP listener and pool appear.
            svc = c.api.get(path)
            svc["spec"]["ports"].append({"name": "dns", "port": 53, "protocol": "UDP"})
            svc = c.api.request("PUT", path, svc)
            # The monitor comes after the members: wait for it too.
            wait_for(lambda: len(sim.state()["pools"]) == 2 and
                     all(len(m) == 3 for m in sim.state()["members"].values()) and
                     all(p.get("healthmonitor_id") for p in sim.state()["pools"]),
                     "the second listener, pool and monitor")
            check(sim.state(), svc["spec"]["ports"], names)

            # A node leaves the cluster: it leaves every pool.
            c.admin("DELETE", "/nodes/node-00003")
            wait_for(lambda: all(len(m) == 2 for m in sim.state()["members"].values()),
                     "the departed node's members removed")
            check(sim.state(), svc["spec"]["ports"], names[:2])

            # A restarted host ensures the Service again and finds nothing to change.
            self.assertEqual(ccm.stop(), 0)
            ensured = sum(e.get("count", 1) for e in c.events("EnsuredLoadBalancer"))
            sim.control("requests/clear", {})
            ccm = c.start_ccm(conf, provider="openstack")
            wait_for(lambda: sum(e.get("count", 1) for e in c.events("EnsuredLoadBalancer")) >
                     ensured, "the Service ensured after the restart")
            writes = [(r["method"], r["rel"]) for r in sim.call("GET", "/_sim/requests")
                      ["requests"] if r["method"] != "GET" and r["service"] != "identity"]
            self.assertEqual(writes, [])
            check(sim.state(), svc["spec"]["ports"], names[:2])

            # No longer a LoadBalancer: the load balancer and its floating IP go, and so do
            # the finalizer and the ingress.
            svc = c.api.get(path)
            svc["spec"]["type"] = "ClusterIP"
            for p in svc["spec"]["ports"]:
                del p["nodePort"]
            for key in ("externalTrafficPolicy", "healthCheckNodePort",
                        "loadBalancerSourceRanges"):
                del svc["spec"][key]
            c.api.request("PUT", path, svc)
            wait_for(lambda: not c.api.get(path)["metadata"].get("finalizers") and
                     not c.api.get(path)["status"].get("loadBalancer", {}).get("ingress"),
                     "the finalizer and the ingress removed")
            st = sim.state()
            for kind in ("loadbalancers", "listeners", "pools", "healthmonitors",
                         "floatingips"):
                self.assertEqual(st[kind], [], kind)
            self.assertEqual(st["members"], {})

            # The written-back annotations stay (a deletion cannot remove them); switching
            # the type back gets a new load balancer all the same, and its ID written back.
            old_id = c.api.get(path)["metadata"].get("annotations", {}).get(LB_ID)
            self.assertTrue(old_id)
            svc = c.api.get(path)
            svc["spec"]["type"] = "LoadBalancer"
            c.api.request("PUT", path, svc)
            wait_for(lambda: c.api.get(path)["status"].get("loadBalancer", {}).get("ingress"),
                     "the ingress of the new load balancer", timeout=90)
            st = sim.state()
            self.assertEqual(len(st["loadbalancers"]), 1)
            new_id = st["loadbalancers"][0]["id"]
            self.assertNotEqual(new_id, old_id)
            wait_for(lambda: c.api.get(path)["metadata"].get("annotations", {}).get(LB_ID) ==
                     new_id, "the new load balancer's ID written back")
            self.assertEqual(ccm.stop(), 0)


def route_tag(cidr):
    """The ownership tag the provider puts on the router per route (docs/providers/
    openstack.md): ccm:<fnv1a32(cluster name)>:<destination with / as _>."""
    h = 2166136261
    for b in CLUSTER.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return "ccm:%08x:%s" % (h, cidr.replace("/", "_"))


class RoutesTest(unittest.TestCase):

    def test_a_route_and_an_address_pair_per_node_and_family(self):
        names = ["node-00001", "node-00002", "node-00003"]
        v4 = {n: "10.0.0.%d" % (51 + i) for i, n in enumerate(names)}
        v6 = {n: "fd00::%d" % (51 + i) for i, n in enumerate(names)}
        servers = [server(n, v4[n], more_networks=[{"network": "private", "ip": v6[n]}])
                   for n in names]
        with Cluster(nodes=3) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[Route]\nrouter-id = router-1\n")
            ccm = c.start_ccm(conf, provider="openstack", extra=[
                "--configure-cloud-routes=true", "--allocate-node-cidrs",
                "--cluster-cidr=10.244.0.0/16,fd00:10::/56", "--route-reconciliation-period=1s"])

            def pod_cidrs():
                return {n["metadata"]["name"]: n["spec"].get("podCIDRs") for n in c.nodes()}

            def router():
                return next(r for r in sim.state()["routers"] if r["id"] == "router-1")

            def routes():
                return {(r["destination"], r["nexthop"]) for r in router()["routes"]}

            def pairs(ip):
                """allowed_address_pairs of the port holding ip."""
                port = next(p for p in sim.state()["ports"]
                            if any(f["ip_address"] == ip for f in p["fixed_ips"]))
                return [p["ip_address"] for p in port["allowed_address_pairs"]]

            wait_for(lambda: len(pod_cidrs()) == 3 and all(pod_cidrs().values()),
                     "pod CIDRs allocated")
            cidrs = pod_cidrs()
            for pair in cidrs.values():
                self.assertEqual(len(pair), 2)
                self.assertRegex(pair[0], r"^10\.244\.\d+\.0/24$")
                self.assertRegex(pair[1], r"^fd00:10:[0-9a-f:]*/64$")
            want = {(cidrs[n][0], v4[n]) for n in names} | {(cidrs[n][1], v6[n]) for n in names}
            self.assertEqual(len(want), 6)
            wait_for(lambda: routes() == want, "a route per node and family on the router")
            self.assertEqual(sorted(router()["tags"]), sorted(route_tag(d) for d, _ in want))
            for n in names:
                self.assertEqual(pairs(v4[n]), [cidrs[n][0]], n)
                self.assertEqual(pairs(v6[n]), [cidrs[n][1]], n)
            wait_for(lambda: all((condition(n, "NetworkUnavailable") or {}).get("status") ==
                                 "False" for n in c.nodes()),
                     "NetworkUnavailable=False on every node")

            # A node leaves: its routes, tags and address pairs go; the others stay.
            c.admin("DELETE", "/nodes/node-00002")
            want -= {(cidrs["node-00002"][0], v4["node-00002"]),
                     (cidrs["node-00002"][1], v6["node-00002"])}
            wait_for(lambda: routes() == want, "the departed node's routes removed")
            wait_for(lambda: pairs(v4["node-00002"]) == [] and pairs(v6["node-00002"]) == [],
                     "its address pairs removed")
            self.assertEqual(sorted(router()["tags"]), sorted(route_tag(d) for d, _ in want))
            self.assertEqual(pairs(v4["node-00001"]), [cidrs["node-00001"][0]])
            self.assertEqual(ccm.stop(), 0)


    def test_sixteen_nodes_at_once_on_a_router_that_fails_concurrent_writes(self):
        # Neutron answers 500 to a write on a router while another one runs (fault 1): the
        # provider writes one at a time, so 16 joining nodes converge with each route added
        # once, nothing rolled back and no FailedToCreateRoute event.
        names = ["node-%05d" % (i + 1) for i in range(16)]
        v4 = {n: "10.0.0.%d" % (100 + i) for i, n in enumerate(names)}
        servers = [server(n, v4[n]) for n in names]
        seed = {"servers": servers, "config": {"router_write_s": 0.05}}
        with Cluster(nodes=16) as c, OsSim(c.tmp, seed) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[Route]\nrouter-id = router-1\n")
            ccm = c.start_ccm(conf, provider="openstack", extra=[
                "--configure-cloud-routes=true", "--allocate-node-cidrs",
                "--cluster-cidr=10.244.0.0/16", "--route-reconciliation-period=1s"])

            def routes():
                router = next(r for r in sim.state()["routers"] if r["id"] == "router-1")
                return {(r["destination"], r["nexthop"]) for r in router["routes"]}

            def pod_cidrs():
                return {n["metadata"]["name"]: (n["spec"].get("podCIDRs") or [None])[0]
                        for n in c.nodes()}
            wait_for(lambda: len(pod_cidrs()) == 16 and all(pod_cidrs().values()),
                     "pod CIDRs allocated")
            cidrs = pod_cidrs()
            want = {(cidrs[n], v4[n]) for n in names}
            wait_for(lambda: routes() == want, "a route per node on the router", timeout=120)
            requests = sim.call("GET", "/_sim/requests")["requests"]
            adds = [r for r in requests if r["path"].endswith("/add_extraroutes")]
            removals = [r for r in requests if r["path"].endswith("/remove_extraroutes")]
            self.assertEqual(len(adds), 16)
            self.assertEqual(removals, [])
            self.assertEqual(sim.state()["router_conflicts"], 0)
            self.assertEqual(c.events("FailedToCreateRoute"), [])
            self.assertEqual(ccm.stop(), 0)


class SecurityGroupTest(unittest.TestCase):

    def test_manage_security_groups_service_lifecycle(self):
        # manage-security-groups: the Service's group opens its node port and health-check
        # node port from the member subnet on exactly the member nodes' ports, follows a
        # joining node, and goes with the Service, leaving nothing behind.
        servers = [server("node-%05d" % i, "10.0.0.%d" % (70 + i)) for i in (1, 2)]
        with Cluster(nodes=2) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[LoadBalancer]\nsubnet-id = %s\nfloating-network-id = %s\n"
                                  "manage-security-groups = true\n" % (LB_SUBNET, FIP_NETWORK))
            ccm = c.start_ccm(conf, provider="openstack")
            wait_for(lambda: all_initialized(c, 2), "the nodes initialised")
            path = "/api/v1/namespaces/default/services/web"
            svc = c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "web"},
                "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                         "selector": {"app": "web"},
                         "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
            node_port = svc["spec"]["ports"][0]["nodePort"]
            hc_port = svc["spec"]["healthCheckNodePort"]
            group_name = "lb-sg-%s-default-web" % svc["metadata"]["uid"]

            def group():
                groups = [g for g in sim.state()["security_groups"] if g["name"] == group_name]
                return groups[0] if len(groups) == 1 else None

            def attached(gid):
                return {p["fixed_ips"][0]["ip_address"] for p in sim.state()["ports"]
                        if gid in p["security_groups"]}

            wait_for(lambda: c.api.get(path)["status"].get("loadBalancer", {}).get("ingress"),
                     "the ingress")
            wait_for(lambda: group() is not None and
                     attached(group()["id"]) == {"10.0.0.71", "10.0.0.72"},
                     "the security group on both member ports")
            g = group()
            self.assertEqual(g["description"], "Security Group for default/web Service "
                             "LoadBalancer in cluster %s" % CLUSTER)
            rules = {(r["protocol"], r["port_range_min"], r["port_range_max"],
                      r["remote_ip_prefix"], r["ethertype"])
                     for r in g["security_group_rules"] if r["direction"] == "ingress"}
            self.assertEqual(rules, {("tcp", node_port, node_port, "10.0.0.0/24", "IPv4"),
                                     ("tcp", hc_port, hc_port, "10.0.0.0/24", "IPv4")})

            # A node joins: its port gets the group too.
            sim.control("add_server", server("node-00003", "10.0.0.73"))
            c.add_nodes(names=["node-00003"])
            wait_for(lambda: attached(g["id"]) == {"10.0.0.71", "10.0.0.72", "10.0.0.73"},
                     "the joining node's port attached", timeout=90)

            c.api.delete(path)

            def gone():
                try:
                    c.api.get(path)
                    return False
                except ApiError as e:
                    if e.code == 404:
                        return True
                    raise
            wait_for(gone, "the Service deleted", timeout=90)
            st = sim.state()
            self.assertEqual(st["security_groups"], [])
            self.assertEqual(st["security_group_rules"], [])
            self.assertEqual([p["id"] for p in st["ports"] if p["security_groups"]], [])
            for kind in ("loadbalancers", "listeners", "pools", "floatingips"):
                self.assertEqual(st[kind], [], kind)
            self.assertEqual(ccm.stop(), 0)


class BadConfigTest(unittest.TestCase):

    def check_refused(self, sections, global_extra, needle):
        with Cluster() as c, OsSim(c.tmp, {}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"), sections)
            if global_extra:
                with open(conf) as f:
                    text = f.read().replace("[Global]\n", "[Global]\n" + global_extra, 1)
                with open(conf, "w") as f:
                    f.write(text)
            ccm = c.start_ccm(conf, provider="openstack")
            self.assertEqual(ccm.proc.wait(timeout=60), 1)
            errors = error_lines(ccm.output())
            self.assertEqual(len(errors), 1, ccm.output())
            self.assertIn(needle, errors[0])
            # Refused before the cloud was asked anything.
            self.assertEqual(sim.state()["auth_count"], 0)

    def test_invalid_duration(self):
        self.check_refused("[LoadBalancer]\nmonitor-delay = 5\n", "",
                           '[LoadBalancer] monitor-delay: invalid duration \\"5\\"')

    def test_invalid_boolean(self):
        self.check_refused("", "tls-insecure = yes\n", "[Global] tls-insecure")

    def test_unknown_router_refused_by_check_config(self):
        with Cluster() as c, OsSim(c.tmp, {}) as sim:
            conf = sim.cloud_conf(os.path.join(c.tmp, "cloud.conf"),
                                  "[Route]\nrouter-id = no-such-router\n")
            args = c.ccm_args(conf, [], "openstack", None) + ["--check-config"]
            out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=60, text=True)
            self.assertEqual(out.returncode, 1, out.stdout)
            self.assertIn('[Route] router-id = \\"no-such-router\\": no router', out.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
