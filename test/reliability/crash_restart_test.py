#!/usr/bin/python3
"""Crash and restart: the host is killed with SIGKILL at 50 random points of a busy
scenario — nodes joining and leaving, kubelets dying, VMs vanishing, LoadBalancer Services
created, changed, flipped to ClusterIP and back, and deleted — and restarted each time, as
a kubelet or systemd would. Kill points are uniform in [0.05, 2.5] s after start, so they
land in start-up (plugin load, cache sync), in the first burst of work and in steady state.

At the end, with the host running undisturbed:
  * every Node is initialised exactly once, with the right providerID and labels: from the
    test's own watch of every Node change, providerID and the zone/region/instance-type
    labels are written once and never changed, the uninitialized taint is never removed from
    a node that lacks them, and no node has more than one "Synced" event;
  * no Node whose VM still exists was ever deleted (every DELETED event is of a node whose
    VM the test removed, or that the test itself deleted), and every node whose VM vanished
    while NotReady is gone;
  * every Service of type LoadBalancer has exactly one cloud load balancer, with its ports,
    the cluster's nodes and its ingress address; no other load balancer exists (none leaked,
    none for deleted Services or ClusterIP ones); no Service keeps a stale finalizer.

CRASH_SEED and CRASH_KILLS (default 50) override the scenario; the seed is printed.
"""
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relsupport import Cluster, wait_for  # noqa: E402
from harness import ApiError, UNINITIALIZED, taint_keys  # noqa: E402

FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
ZONES = ["zone-a", "zone-b", "zone-c"]
NS = "crash"
INIT_LABELS = ["topology.kubernetes.io/zone", "topology.kubernetes.io/region",
               "node.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/zone"]


def zone_of(name):
    return ZONES[int(name[-5:]) % len(ZONES)]


class Scenario:
    """The world changing while the host crashes: runs on its own thread."""

    def __init__(self, c, rng):
        self.c = c
        self.rng = rng
        self.lock = threading.Lock()
        self.services = {}        # name -> "lb" | "ClusterIP"
        self.deleted_services = set()
        self.vanished = set()     # nodes whose VM the test removed (and made NotReady)
        self.dead_kubelets = set()  # NotReady nodes whose VM still exists
        self.removed = set()      # nodes the test deleted from the API itself
        self.absent = []          # fake-cloud instances with state absent
        self.next_service = 0
        self.stop = threading.Event()
        self.errors = []

    def path(self, name=""):
        return "/api/v1/namespaces/%s/services%s" % (NS, "/" + name if name else "")

    def ready_nodes(self):
        out = []
        for n in self.c.nodes():
            name = n["metadata"]["name"]
            if name in self.vanished or name in self.dead_kubelets or name in self.removed:
                continue
            out.append(name)
        return sorted(out)

    def create_service(self):
        name = "svc-%03d" % self.next_service
        self.next_service += 1
        kind = "lb" if self.rng.random() < 0.8 else "ClusterIP"
        self.c.api.post(self.path(), {
            "metadata": {"name": name},
            "spec": {"type": "LoadBalancer" if kind == "lb" else "ClusterIP",
                     "selector": {"app": name},
                     "ports": [{"name": "http", "protocol": "TCP", "port": 80,
                                "targetPort": 8080}]}})
        self.services[name] = kind

    def step(self):
        r = self.rng.random()
        live = sorted(self.services)
        if r < 0.12 and len(self.c.nodes()) < 40:
            self.c.add_nodes(count=self.rng.randint(1, 2))
        elif r < 0.40 and self.next_service < 70:
            self.create_service()
        elif r < 0.52 and live:
            name = self.rng.choice(live)
            ports = [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]
            if self.rng.random() < 0.5:
                ports.append({"name": "https", "protocol": "TCP", "port": 443,
                              "targetPort": 8443})
            self.c.api.patch(self.path(name), {"spec": {"ports": ports}}, kind="merge-patch")
        elif r < 0.60 and live:
            name = self.rng.choice(live)
            new = "ClusterIP" if self.services[name] == "lb" else "lb"
            self.c.api.patch(self.path(name), {"spec": {
                "type": "LoadBalancer" if new == "lb" else "ClusterIP"}}, kind="merge-patch")
            self.services[name] = new
        elif r < 0.70 and live:
            name = self.rng.choice(live)
            try:
                self.c.api.delete(self.path(name))
            except ApiError as e:
                if e.code != 404:
                    raise
            del self.services[name]
            self.deleted_services.add(name)
        elif r < 0.80 and len(self.vanished) < 8:
            # A VM vanishes: the cloud says NOT_FOUND from now on, and its kubelet stops.
            candidates = self.ready_nodes()
            if len(candidates) > 6:
                name = self.rng.choice(candidates)
                self.vanished.add(name)
                self.absent.append({"name": name, "state": "absent"})
                self.c.update_cloud(instances=list(self.absent))
                self.c.set_ready([name], "False")
        elif r < 0.86 and len(self.dead_kubelets) < 4:
            # A kubelet dies but its VM is fine: must never be deleted.
            candidates = self.ready_nodes()
            if len(candidates) > 6:
                name = self.rng.choice(candidates)
                self.dead_kubelets.add(name)
                self.c.set_ready([name], "Unknown")
        elif r < 0.90 and len(self.removed) < 3:
            candidates = self.ready_nodes()
            if len(candidates) > 6:
                name = self.rng.choice(candidates)
                self.removed.add(name)
                self.c.admin("DELETE", "/nodes/" + name)

    def run(self):
        try:
            while not self.stop.is_set():
                with self.lock:
                    self.step()
                time.sleep(self.rng.uniform(0.05, 0.4))
        except Exception as e:  # reported by the main thread
            self.errors.append(repr(e))


def node_history_problems(recorder, scenario, c):
    out = []
    history = {}
    for n in recorder.initial:
        history.setdefault(n["metadata"]["name"], []).append(("ADDED", n))
    for typ, obj in recorder.snapshot():
        history.setdefault(obj["metadata"]["name"], []).append((typ, obj))
    allowed_deletions = scenario.vanished | scenario.removed
    for name, events in sorted(history.items()):
        seen = {}
        for typ, obj in events:
            if typ == "DELETED":
                if name not in allowed_deletions:
                    out.append("node %s was deleted although its VM exists" % name)
                continue
            labels = obj["metadata"].get("labels") or {}
            pid = obj["spec"].get("providerID", "")
            values = {"providerID": pid}
            values.update({k: labels.get(k, "") for k in INIT_LABELS})
            for k, v in values.items():
                if not v:
                    continue
                if k in seen and seen[k] != v:
                    out.append("node %s: %s changed from %r to %r" % (name, k, seen[k], v))
                seen.setdefault(k, v)
            if UNINITIALIZED not in taint_keys(obj) and not all(values.values()):
                out.append("node %s: the uninitialized taint is gone but %s" % (
                    name, sorted(k for k, v in values.items() if not v)))
        if seen.get("providerID") and seen["providerID"] != "fake://" + name:
            out.append("node %s: providerID %s" % (name, seen["providerID"]))
        if seen.get("topology.kubernetes.io/zone") and \
                seen["topology.kubernetes.io/zone"] != zone_of(name):
            out.append("node %s: zone %s, want %s" % (name, seen["topology.kubernetes.io/zone"],
                                                      zone_of(name)))
    synced = {}
    for e in c.events("Synced"):
        n = e["involvedObject"]["name"]
        synced[n] = synced.get(n, 0) + e.get("count", 1)
    for n, count in sorted(synced.items()):
        if count > 1:
            out.append("node %s: %d Synced events (initialised more than once)" % (n, count))
    return out


def final_problems(c, scenario):
    out = []
    nodes = {n["metadata"]["name"]: n for n in c.nodes()}
    for name, n in nodes.items():
        if UNINITIALIZED in taint_keys(n):
            out.append("node %s: not initialised" % name)
    for name in scenario.vanished:
        if name in nodes:
            out.append("node %s: its VM vanished but it is still there" % name)
    for name in scenario.dead_kubelets:
        if name not in nodes and name not in scenario.removed:
            out.append("node %s: deleted although its VM exists" % name)
    state = c.cloud_state()
    by_uid = {}
    for lb in state.get("loadBalancers", []):
        by_uid.setdefault(lb["uid"], []).append(lb)
    hosts = sorted(nodes)
    want = set()
    for svc in c.api.get(scenario.path())["items"]:
        name = svc["metadata"]["name"]
        uid = svc["metadata"]["uid"]
        fin = svc["metadata"].get("finalizers") or []
        ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if svc["metadata"].get("deletionTimestamp"):
            out.append("service %s: still being deleted" % name)
            continue
        if scenario.services.get(name) != ("lb" if svc["spec"]["type"] == "LoadBalancer"
                                           else "ClusterIP"):
            out.append("service %s: unexpected type %s" % (name, svc["spec"]["type"]))
        if svc["spec"]["type"] == "LoadBalancer":
            want.add(uid)
            lbs = by_uid.get(uid, [])
            if len(lbs) != 1:
                out.append("service %s: %d load balancers" % (name, len(lbs)))
                continue
            lb = lbs[0]
            if FINALIZER not in fin:
                out.append("service %s: no finalizer" % name)
            if [i.get("ip") for i in ingress] != [lb["ip"]]:
                out.append("service %s: ingress %s, cloud %s" % (name, ingress, lb["ip"]))
            if sorted(p["port"] for p in lb["ports"]) != sorted(
                    p["port"] for p in svc["spec"]["ports"]):
                out.append("service %s: cloud ports %s" % (name, lb["ports"]))
            if lb["nodes"] != hosts:
                out.append("service %s: cloud hosts %s, nodes %s" % (name, lb["nodes"], hosts))
        else:
            if FINALIZER in fin or ingress:
                out.append("service %s: ClusterIP with finalizer/ingress left" % name)
    for uid, lbs in by_uid.items():
        if uid not in want:
            for lb in lbs:
                out.append("leaked load balancer %s of %s/%s" % (lb["name"], lb["namespace"],
                                                                 lb["service"]))
    for name in scenario.deleted_services:
        if name not in scenario.services:
            try:
                c.api.get(scenario.path(name))
                out.append("service %s: should be gone" % name)
            except ApiError as e:
                if e.code != 404:
                    raise
    return out


def main():
    seed = int(os.environ.get("CRASH_SEED", str(int(time.time()))))
    kills = int(os.environ.get("CRASH_KILLS", "50"))
    rng = random.Random(seed)
    print("seed", seed, "kills", kills, flush=True)
    with Cluster(nodes=9, kubesim_args=["--node-status-period=10s"]) as c:
        c.api.post("/api/v1/namespaces", {"metadata": {"name": NS}})
        cloud = c.fake_cloud(
            autoInstances={"zones": ZONES, "type": "m1.crash"}, region="crash-1",
            loadBalancer={"ipPool": "10.77.0.0/16"},
            latency={"ensureLoadBalancer": "20ms", "metadata": "5ms",
                     "updateLoadBalancer": "10ms", "deleteLoadBalancer": "10ms"},
            faults=[{"op": "ensureLoadBalancer", "code": "UNAVAILABLE", "message": "injected",
                     "probability": 0.05, "retryAfter": "200ms"}])
        extra = ["--node-monitor-period=1s", "--node-eviction-rate=100",
                 "--unhealthy-zone-threshold=0.99", "--kube-api-qps=500",
                 "--kube-api-burst=1000", "--node-status-update-frequency=3s"]
        from relsupport import WatchRecorder
        recorder = WatchRecorder(c, "/api/v1/nodes")
        scenario = Scenario(c, rng)
        for _ in range(10):
            scenario.create_service()
        worker = threading.Thread(target=scenario.run, daemon=True)
        worker.start()
        exit_codes = []
        for i in range(kills):
            ccm = c.start_ccm(cloud, extra, name="ccm-%02d" % i)
            time.sleep(rng.uniform(0.05, 2.5))
            if not ccm.alive():
                raise AssertionError("run %d exited on its own (%s):\n%s" % (
                    i, ccm.proc.returncode, ccm.output()[-3000:]))
            exit_codes.append(ccm.stop(signal.SIGKILL))
        scenario.stop.set()
        worker.join()
        assert not scenario.errors, scenario.errors
        assert exit_codes == [-signal.SIGKILL] * kills, exit_codes
        print("killed %d times; %d services (%d deleted), %d vanished VMs, %d dead kubelets" % (
            kills, len(scenario.services), len(scenario.deleted_services),
            len(scenario.vanished), len(scenario.dead_kubelets)), flush=True)

        c.update_cloud(faults=[])
        ccm = c.start_ccm(cloud, extra, name="ccm-final")
        # The world may already be settled by the killed runs; the final run must still have
        # started its controllers (and so be past installing its signal handling) before its
        # clean stop below is judged.
        wait_for(lambda: "Started controller" in ccm.output(), "ccm-final to start its controllers",
                 timeout=120)
        last = []

        def settled():
            last[:] = final_problems(c, scenario)
            return not last

        try:
            wait_for(settled, "convergence after %d kills" % kills, timeout=300, interval=0.5)
        except AssertionError:
            for p in last[:80]:
                print("  " + p)
            raise
        history = node_history_problems(recorder, scenario, c)
        for p in history:
            print("  " + p)
        assert not history, "%d problems in the nodes' history" % len(history)
        assert ccm.alive()
        state = c.cloud_state()
        print("nodes %d, load balancers %d (created %d, deleted %d), node events seen %d" % (
            len(c.nodes()), len(state["loadBalancers"]), state["stats"].get("lbCreates", 0),
            state["stats"].get("lbDeletes", 0), len(recorder.snapshot())), flush=True)
        recorder.stop()
        assert ccm.stop() == 0
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
