#!/usr/bin/env python3
"""./dev demo — ccm live, in a terminal.

Starts kubesim (a Kubernetes API simulator) whose kubelets register a few dozen nodes, the
fake-cloud provider, and cloud-controller-manager with every controller on. Then, as it
happens: nodes are initialised (providerID, zone/type labels, addresses, pod CIDR, the
uninitialized taint gone), a route appears per node, a LoadBalancer Service gets its ingress
IP, a VM is deleted in the fake cloud and its node removed after the safety checks. Finally it
prints where to look and waits for Ctrl-C.

  --nodes N      nodes the kubelets register (default 24)
  --once         run the story, print where to look, and exit (no waiting for Ctrl-C)
  --no-color     plain output (the default when stdout is not a terminal)
"""
import argparse
import json
import os
import shutil
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))

ZONES = ["demo-1a", "demo-1b", "demo-1c"]
# One machine described by hand, to show per-instance settings.
BIG = {"name": "node-00003", "type": "fake.large", "zone": "demo-1a",
       "addresses": [{"type": "InternalIP", "address": "10.0.100.3"},
                     {"type": "ExternalIP", "address": "198.51.100.203"}],
       "labels": {"example.com/pool": "big"}}


class Screen:
    def __init__(self, color):
        self.color = color
        self.live = color and sys.stdout.isatty()
        self.lines = 0

    def c(self, code, text):
        return "\033[%sm%s\033[0m" % (code, text) if self.color else text

    def bold(self, t):
        return self.c("1", t)

    def green(self, t):
        return self.c("32", t)

    def yellow(self, t):
        return self.c("33", t)

    def red(self, t):
        return self.c("31", t)

    def dim(self, t):
        return self.c("2", t)

    def cyan(self, t):
        return self.c("36", t)

    def say(self, text=""):
        self.clear_panel()
        print(text, flush=True)

    def step(self, text):
        self.say()
        self.say(self.bold(self.cyan("▶ " + text)))

    def panel(self, rows):
        """Redraws a block of lines in place (a live table) on a terminal."""
        if not self.live:
            return
        self.clear_panel()
        for r in rows:
            print(r)
        self.lines = len(rows)
        sys.stdout.flush()

    def clear_panel(self):
        if self.live and self.lines:
            sys.stdout.write("\033[%dA\033[J" % self.lines)
            self.lines = 0


def node_row(scr, n, routes):
    meta, spec = n["metadata"], n.get("spec", {})
    lb = meta.get("labels", {}) or {}
    taints = [t["key"] for t in spec.get("taints", []) or []]
    init = "node.cloudprovider.kubernetes.io/uninitialized" not in taints
    ip = next((a["address"] for a in n.get("status", {}).get("addresses", [])
               if a["type"] == "InternalIP"), "")
    cidr = (spec.get("podCIDRs") or [""])[0]
    state = scr.green("initialised ") if init else scr.yellow("waiting     ")
    route = scr.green("route ✓") if cidr and cidr in routes else scr.dim("route …")
    return "  %-11s %s %-9s %-12s %-19s %-11s %-15s %s" % (
        meta["name"], state, lb.get("topology.kubernetes.io/zone", "-"),
        lb.get("node.kubernetes.io/instance-type", "-"), spec.get("providerID", "-"),
        ip or "-", cidr or "-", route)


def table(scr, c):
    nodes = sorted(c.nodes(), key=lambda n: n["metadata"]["name"])
    routes = {r["destinationCIDR"] for r in c.cloud_state().get("routes", [])}
    head = scr.dim("  %-11s %-12s %-9s %-12s %-19s %-11s %-15s %s" % (
        "NODE", "STATE", "ZONE", "TYPE", "PROVIDER ID", "IP", "POD CIDR", "ROUTE"))
    rows = [head] + [node_row(scr, n, routes) for n in nodes]
    done = sum(1 for n in nodes if "node.cloudprovider.kubernetes.io/uninitialized"
               not in [t["key"] for t in n.get("spec", {}).get("taints", []) or []])
    return rows, done, len(nodes), len(routes)


MINIMAL = os.path.join("plugin-sdk", "examples", "minimal.so")
METAL = ["metal-1", "metal-2"]
METAL_CLASS = "example.com/metal"


def hybrid_setup(c, build_dir, cloud):
    """--hybrid: fake-cloud and minimal.so in one plugin folder, minimal's machines file, and
    the routing flags (nodes by label, Services by class)."""
    plugins = os.path.join(c.tmp, "plugins")
    os.mkdir(plugins, 0o755)
    for so in (os.path.join(build_dir, "plugins", "fake-cloud.so"),
               os.path.join(build_dir, MINIMAL)):
        shutil.copy(so, plugins)
    machines = os.path.join(c.tmp, "machines.txt")
    with open(machines, "w") as f:
        for i, name in enumerate(METAL):
            f.write("%s rack-%d metal.large 10.20.0.%d\n" % (name, i + 1, i + 1))
    return plugins, ["--cloud-provider=fake-cloud,minimal",
                     "--cloud-config=fake-cloud=%s,minimal=%s" % (cloud, machines),
                     "--provider-node-selector=fake-cloud=!cloud",
                     "--provider-node-selector=minimal=cloud=metal",
                     "--load-balancer-class-provider=%s=minimal" % METAL_CLASS]


def add_metal_nodes(c):
    # Their kubelets register them labelled (--node-labels=cloud=metal): a label patched on
    # after registration would race the host, which may route the unlabelled node to
    # fake-cloud (its selector is !cloud) before the label arrives.
    c.add_nodes(names=METAL, labels={"cloud": "metal"})


def show_class_routing(scr, c, wait_for):
    """A Service of minimal's class goes to minimal, not to fake-cloud: minimal has no load
    balancers, so the Service gets a Warning naming it and fake-cloud gets nothing."""
    scr.step("kubectl apply a Service of loadBalancerClass %s (default/metal-web)" % METAL_CLASS)
    c.api.post("/api/v1/namespaces/default/services", {
        "metadata": {"name": "metal-web"},
        "spec": {"type": "LoadBalancer", "loadBalancerClass": METAL_CLASS,
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
    event = wait_for(lambda: [e for e in c.events() if e["involvedObject"]["name"] == "metal-web"
                              and e["type"] == "Warning"], "minimal's answer", timeout=60)[0]
    names = [lb["service"] for lb in c.cloud_state()["loadBalancers"]]
    scr.say(scr.green("  ✓ routed to provider minimal by its class: %s" % event["message"]))
    scr.say(scr.green("  ✓ fake-cloud's load balancers: %s (none for metal-web)" %
                      ", ".join(names)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--repo", default=os.path.join(HERE, "..", ".."))
    ap.add_argument("--nodes", type=int, default=24)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--no-color", action="store_true")
    ap.add_argument("--hybrid", action="store_true",
                    help="two providers in one host: fake-cloud and the SDK's C example\n"
                         "(minimal.so, bare-metal machines labelled cloud=metal)")
    args = ap.parse_args()
    os.environ["CCM_BUILD_DIR"] = os.path.abspath(args.build_dir)
    os.environ["CCM_SOURCE_DIR"] = os.path.abspath(args.repo)
    import harness
    from harness import Cluster, wait_for

    scr = Screen(color=not args.no_color and sys.stdout.isatty())
    scr.say(scr.bold("ccm demo") + " — a cloud controller manager with plugin providers")
    scr.say(scr.dim("kubesim (a Kubernetes API simulator) + cloud-controller-manager + the "
                    "fake-cloud provider, all on 127.0.0.1"))

    stop = {"requested": False}

    def on_signal(*_):
        stop["requested"] = True
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    c = Cluster(nodes=0, kubesim_args=["--heartbeat-period=5s", "--node-status-period=20s"],
                keep=True)
    c.start_kubesim()
    try:
        cloud = c.fake_cloud(region="demo-1",
                             autoInstances={"zones": ZONES, "type": "fake.medium",
                                            "externalCidr": "198.51.100.0/24"},
                             instances=[BIG],
                             latency={"batch": "40ms", "ensureLoadBalancer": "300ms",
                                      "createRoute": "20ms"},
                             loadBalancer={"ipPool": "203.0.113.0/24"})
        metrics_port = 10258 + (os.getpid() % 1000)
        hybrid_flags, plugin_dir = [], None
        if args.hybrid:
            plugin_dir, hybrid_flags = hybrid_setup(c, args.build_dir, cloud)
        ccm = c.start_ccm(cloud, plugin_dir=plugin_dir, extra=hybrid_flags + [
            "--allocate-node-cidrs", "--cluster-cidr=10.244.0.0/16",
            "--configure-cloud-routes=true", "--node-monitor-period=2s",
            "--secure-port=%d" % metrics_port, "--bind-address=127.0.0.1",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--concurrent-node-syncs=4"], name="cloud-controller-manager")
        scr.say("  API server   %s" % c.url)
        scr.say("  provider     fake-cloud (%s)" % os.path.join(args.build_dir, "plugins",
                                                               "fake-cloud.so"))
        if args.hybrid:
            scr.say("  provider     minimal (%s): nodes labelled cloud=metal, load balancers of "
                    "class %s" % (os.path.join(args.build_dir, MINIMAL), METAL_CLASS))
        wait_for(lambda: "Started controller" in ccm.output() or not ccm.alive(),
                 "cloud-controller-manager to start", timeout=30)
        if not ccm.alive():
            scr.say(scr.red("cloud-controller-manager exited:\n") + ccm.output()[-3000:])
            return 1

        # 1. Nodes join in waves, and get initialised as they arrive.
        scr.step("Kubelets register %d nodes (tainted node.cloudprovider.kubernetes.io/"
                 "uninitialized)" % args.nodes)
        added = 0
        started = time.monotonic()
        while not stop["requested"]:
            if added < args.nodes:
                k = min(4, args.nodes - added)
                c.add_nodes(count=k)
                added += k
                if args.hybrid and added == args.nodes:
                    add_metal_nodes(c)
            rows, done, total, routes = table(scr, c)
            scr.panel(rows + ["", "  %s %d/%d nodes initialised, %d routes" % (
                scr.bold("⏱ %.1fs" % (time.monotonic() - started)), done, total, routes)])
            # Routes are fake-cloud's: the metal machines have none.
            want_routes = total - (len(METAL) if args.hybrid else 0)
            if added == args.nodes and done == total and routes == want_routes:
                break
            time.sleep(0.4)
        rows, done, total, routes = table(scr, c)
        scr.clear_panel()
        for r in rows:
            scr.say(r)
        scr.say(scr.green("  ✓ %d nodes initialised in %.1fs: providerID, zone/region/type labels, "
                          "addresses, a pod CIDR and a cloud route each; taint removed" %
                          (done, time.monotonic() - started)) if not args.hybrid else
                scr.green("  ✓ %d nodes initialised in %.1fs, each by its own provider: "
                          "fake-cloud's with a cloud route each, minimal's (no routes) by "
                          "their label cloud=metal" % (done, time.monotonic() - started)))

        # 2. A LoadBalancer Service.
        if not stop["requested"]:
            scr.step("kubectl apply a Service of type LoadBalancer (default/web)")
            c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "web"},
                "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                         "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
            t0 = time.monotonic()

            def ingress():
                s = c.api.get("/api/v1/namespaces/default/services/web")
                ing = s.get("status", {}).get("loadBalancer", {}).get("ingress") or []
                scr.panel(["  finalizers: %s" % ", ".join(s["metadata"].get("finalizers", [])
                                                          or ["-"]),
                           "  ingress:    %s" % (ing[0]["ip"] if ing else scr.dim("pending …"))])
                return ing[0]["ip"] if ing else None
            ip = wait_for(ingress, "the load balancer's ingress IP", timeout=60)
            lb = c.cloud_state()["loadBalancers"][0]
            scr.say(scr.green("  ✓ ingress %s after %.1fs — cloud load balancer %s, %d backend "
                              "nodes, cleanup finalizer in place" %
                              (ip, time.monotonic() - t0, lb["name"], len(lb["nodes"]))))
            if args.hybrid:
                show_class_routing(scr, c, wait_for)

        # 3. A VM disappears from the cloud.
        if not stop["requested"]:
            victim = sorted(n["metadata"]["name"] for n in c.nodes()
                            if n["metadata"]["name"] not in METAL)[4]
            scr.step("The VM behind %s is deleted in the cloud, and its kubelet goes silent" %
                     victim)
            c.update_cloud(instances=[BIG, {"name": victim, "state": "absent"}])
            c.set_ready([victim], "Unknown")
            t0 = time.monotonic()
            seen = set()

            def gone():
                out = ccm.output()
                for needle, text in [
                        ("will delete the node if this is confirmed",
                         "first NOT_FOUND from the cloud — waiting one monitor period to "
                         "confirm"),
                        ('"Deleting node because its instance does not exist',
                         "confirmed, within the zone's deletion budget: deleting")]:
                    if needle in out and needle not in seen:
                        seen.add(needle)
                        scr.say("  %s %s" % (scr.dim("%.1fs" % (time.monotonic() - t0)), text))
                return not c.node_exists(victim)
            victim_cidr = (c.node(victim)["spec"].get("podCIDRs") or [""])[0]
            wait_for(gone, "the node to be deleted", timeout=60)
            scr.say(scr.green("  ✓ %s removed after %.1fs (event DeletingNode); its route and "
                              "its place behind the load balancer go with it" %
                              (victim, time.monotonic() - t0)))
            wait_for(lambda: victim not in c.cloud_state()["loadBalancers"][0]["nodes"],
                     "the load balancer to drop the node", timeout=30)
            wait_for(lambda: victim_cidr not in {r["destinationCIDR"]
                                                 for r in c.cloud_state()["routes"]},
                     "the node's route to be removed", timeout=30)

        # 4. Where to look.
        scr.step("Where to look")
        kc = c.kubeconfig
        scr.say("  kubectl --kubeconfig %s get nodes -L topology.kubernetes.io/zone" % kc)
        scr.say("  kubectl --kubeconfig %s get svc web" % kc)
        scr.say("  kubectl --kubeconfig %s get events -A" % kc)
        scr.say("  curl -k https://127.0.0.1:%d/metrics | grep -E '^(ccm_|node_controller|"
                "service_controller|route_controller)'" % metrics_port)
        scr.say("  curl -k https://127.0.0.1:%d/healthz?verbose" % metrics_port)
        scr.say("  logs:  %s" % ccm.log_path)
        scr.say("  cloud: %s (edit it: the fake cloud re-reads it)" % c.cloud_path)
        if not args.once:
            scr.say()
            scr.say(scr.bold("Running. Press Ctrl-C to stop."))
            while not stop["requested"] and ccm.alive():
                time.sleep(0.3)
        code = ccm.stop()
        scr.say(scr.dim("cloud-controller-manager stopped (exit %d)" % code))
        return 0 if code == 0 else 1
    finally:
        for p in c.processes:
            try:
                p.stop()
            except Exception:
                pass
        c.stop_kubesim()
        shutil.rmtree(c.tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
