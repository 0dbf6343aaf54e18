"""The benchmark scenarios. Each returns a list of result rows:

    {"scenario": ..., "case": ..., "metric": ..., "value": v, "unit": ...,
     "bound": b or None, "better": "lower"|"higher", "note": ...}

run.py turns them into the table (value / bound as a ratio) and the JSON file.
"""
import json
import os
import re
import subprocess
import tempfile
import time

import benchlib
from benchlib import Env, api_writes, api_requests, provider_calls

INITIALIZED = "Successfully initialized node"
CONTROLLER_UP = "Started cloud node controller"

ZONES = ["bench-1a", "bench-1b", "bench-1c"]


def auto_instances():
    return {"zones": ZONES, "type": "fake.medium", "internalCidr": "10.0.0.0/8",
            "externalCidr": "100.64.0.0/10", "hostnameAddress": True}


def row(scenario, case, metric, value, unit, bound=None, better="lower", note="", load=None):
    return {"scenario": scenario, "case": case, "metric": metric, "value": value, "unit": unit,
            "bound": bound, "better": better, "note": note,
            "load": load if load is not None else benchlib.load_average()}


def settled_metrics(env, quiet=1.5, timeout=300):
    """A /metrics scrape taken once the ccm has made no API write for `quiet` seconds."""
    last = env.metrics()
    stable_since = time.time()
    deadline = time.time() + timeout
    while time.time() < deadline:
        time.sleep(0.5)
        m = env.metrics()
        if api_writes(m) != api_writes(last):
            stable_since = time.time()
        last = m
        if time.time() - stable_since >= quiet:
            break
    return last


def thread_split(before, after, per=1, least=0.005):
    """"name 0.12, ..." for the threads whose counter (CPU seconds from thread_cpu(), or
    wake-ups from wakeups()) grew by at least `least` between two readings, divided by `per`
    (thread names as docs/architecture.md lists them: node-sync, inf-nodes, events, ...)."""
    diff = {k: v - before.get(k, 0) for k, v in after.items()}
    parts = sorted(((v, k) for k, v in diff.items() if v >= least), reverse=True)
    return ", ".join("%s %.2f" % (k, v / per) for v, k in parts)


# ---- 1. node initialisation burst ----------------------------------------------------------------

def provider_process(env):
    """The provider child process of a ccm started with --provider-isolation=process."""
    pids = re.findall(r'"Started the provider process" pid=(\d+)', env.ccm.output())
    if not pids:
        raise AssertionError("no provider process in the log: see %s" % env.ccm.log_path)
    return benchlib.Proc(int(pids[-1]))


def node_burst(nodes, latency_ms, qps, burst=30, bound_seconds=None, bound_cpu=None,
               floor_ratio=None, isolated=False, per_node=False):
    """`nodes` kubelets register at once; time until the cloud-node controller has
    initialised the last one, with the host's CPU, API writes and provider calls. With
    `isolated`, the plugin runs in a child process (--provider-isolation=process) and the
    child's CPU is reported beside the host's. With `per_node` (the scale scenario), the
    costs per node are added: host and kubesim CPU and RSS growth, and the bytes the host's
    node cache holds per node."""
    qps_label = "unthrottled" if qps < 0 else "QPS %g/%d" % (qps, burst)
    case = "%d nodes, %d ms cloud, %s" % (nodes, latency_ms, qps_label)
    if isolated:
        case += ", isolated"
    child = None
    with Env() as env:
        world = {"autoInstances": auto_instances()}
        if latency_ms:
            world["latency"] = "%dms" % latency_ms
        cloud = env.cloud(state_file=False, **world)
        env.start_ccm(cloud, qps=qps, burst=burst,
                      extra=["--provider-isolation=process"] if isolated else [])
        env.wait_log(CONTROLLER_UP, timeout=60)
        time.sleep(0.5)  # let the start-up work settle
        if isolated:
            child = provider_process(env)
            child_cpu0 = child.cpu_seconds()
        env.log.watch(INITIALIZED)
        env.log.skip_to_end()
        ccm = env.ccm_proc()
        sim = env.kubesim_proc()
        m0 = env.metrics()
        cpu0, sim_cpu0 = ccm.cpu_seconds(), sim.cpu_seconds()
        rss0, sim_rss0 = ccm.rss_bytes(), sim.rss_bytes()
        threads0 = ccm.thread_cpu()
        wakeups0 = ccm.wakeups()
        load = benchlib.load_average()
        env.profile_start()
        t0 = time.time()
        env.add_nodes(nodes)
        t_registered = time.time()
        t_last = env.wait_log(INITIALIZED, count=nodes, timeout=max(120, nodes * 0.4),
                              interval=0.01)
        cpu_last = ccm.cpu_seconds()
        m1 = env.metrics()
        # The burst's cost includes what it leaves behind once the last node is initialised
        # (watch events still queued, Synced events still being sent): counted until the
        # host goes quiet.
        cpu1, threads1, wakeups1 = ccm.cpu_when_quiet()
        sim_cpu1 = sim.cpu_seconds()
        rss1, sim_rss1, sim_hwm = ccm.rss_bytes(), sim.rss_bytes(), sim.hwm_bytes()
        child_cpu = child.cpu_seconds() - child_cpu0 if child else 0.0
        env.profile_stop()
        # Events are sent asynchronously (and wait for tokens too): count the writes once
        # they have stopped.
        m2 = settled_metrics(env)
        elapsed = t_last - t0
        writes_window = api_writes(m1) - api_writes(m0)
        writes_total = api_writes(m2) - api_writes(m0)
        requests_window = api_requests(m1) - api_requests(m0)
        calls = provider_calls(m2) - provider_calls(m0)
        hwm = ccm.hwm_bytes()
        # Correctness: every node initialised (no uninitialized taint left).
        node_list = env.cluster.nodes()
        left = [n["metadata"]["name"] for n in node_list
                if not benchlib.harness.is_initialized(n)]
        if left:
            raise AssertionError("%d nodes still tainted, e.g. %s" % (len(left), left[:3]))
        # What a realistic Node costs on the wire (JSON as the API server serves it).
        node_bytes = sum(len(json.dumps(n, separators=(",", ":"))) for n in node_list)
        # Every initialised node should have its Synced event on the server (events are
        # asynchronous: counted once the writes have settled, above).
        names = {n["metadata"]["name"] for n in node_list}
        synced = {e.get("involvedObject", {}).get("name") for e in env.cluster.events("Synced")}
        events_written = len(names & synced)
    s = "1 node burst"
    rows = [
        row(s, case, "time to last node initialised", elapsed, "s", bound_seconds, load=load),
        row(s, case, "host CPU per 1,000 nodes", (cpu1 - cpu0) * 1000 / nodes, "CPU-s",
            None if bound_cpu is None else bound_cpu * 1000 / nodes, load=load),
        row(s, case, "host CPU total", cpu1 - cpu0, "CPU-s", bound_cpu, load=load,
            note="until the host is quiet again; %.2f CPU-s at the last node; by thread: %s"
            % (cpu_last - cpu0, thread_split(threads0, threads1))),
        row(s, case, "kubesim CPU total", sim_cpu1 - sim_cpu0, "CPU-s", load=load,
            note="the API server, same 2 cores"),
        row(s, case, "host thread wake-ups per node",
            (sum(wakeups1.values()) - sum(wakeups0.values())) / nodes, "wake-ups", load=load,
            note="voluntary context switches: " +
            thread_split(wakeups0, wakeups1, per=nodes, least=nodes / 100)),
        row(s, case, "API writes per node", writes_total / nodes, "writes", load=load,
            note="incl. events; %d requests of any verb until the last node" % requests_window),
        row(s, case, "provider calls per node", calls / nodes, "calls", load=load,
            note="by call: " + split_by_label(m0, m2, "ccm_provider_calls_total", "call")),
        row(s, case, "Synced events on the server", events_written, "of %d" % len(names),
            len(names), better="higher", load=load,
            note="nodes with their Synced event once the host's writes settled"),
        row(s, case, "host peak RSS (VmHWM)", hwm / (1024.0 * 1024.0), "MiB", load=load),
        row(s, case, "bytes per Node object", node_bytes / max(1, len(node_list)), "bytes",
            load=load, note="compact JSON as served, %d nodes" % len(node_list)),
        row(s, case, "nodes registered by kubesim in", t_registered - t0, "s", load=load),
    ]
    if per_node:
        cached = m2.sum("ccm_informer_cached_objects", resource="nodes")
        cached_bytes = m2.sum("ccm_informer_cached_bytes", resource="nodes")
        rows += [
            row(s, case, "host CPU per node", (cpu1 - cpu0) * 1e6 / nodes, "us", load=load,
                note="until quiet"),
            row(s, case, "host RSS growth per node", (rss1 - rss0) / nodes, "bytes", load=load,
                note="VmRSS after the burst %.1f MiB, before %.1f MiB"
                % (rss1 / 1048576.0, rss0 / 1048576.0)),
            row(s, case, "bytes per cached node", cached_bytes / max(1.0, cached), "bytes",
                load=load, note="ccm_informer_cached_bytes / ccm_informer_cached_objects "
                "(%d nodes cached): each Node's own heap, interned strings not counted"
                % cached),
            row(s, case, "kubesim CPU per node", (sim_cpu1 - sim_cpu0) * 1e6 / nodes, "us",
                load=load, note="registering the nodes, serving ccm's writes and the watch"),
            row(s, case, "kubesim RSS growth per node", (sim_rss1 - sim_rss0) / nodes,
                "bytes", load=load, note="kubesim VmRSS after %.0f MiB (peak %.0f MiB)"
                % (sim_rss1 / 1048576.0, sim_hwm / 1048576.0)),
        ]
    if isolated:
        rows.append(row(s, case, "provider process CPU total", child_cpu, "CPU-s", load=load,
                        note="the plugin's child process, beside the host's own CPU above; "
                        "the calls row counts the child's calls, merged into the host's "
                        "/metrics"))
        rows.append(row(s, case, "host + provider process CPU per 1,000 nodes",
                        (cpu1 - cpu0 + child_cpu) * 1000 / nodes, "CPU-s", load=load))
    if qps > 0:
        floor = writes_window / qps
        rows.append(row(s, case, "time vs QPS floor (writes until the last node / QPS = %.1f s)"
                        % floor, elapsed, "s",
                        floor * floor_ratio if floor_ratio else None, load=load,
                        note="floor %.1f s" % floor))
    return rows


def split_by_label(m0, m1, name, label):
    """How a counter grew between two scrapes, per value of one label, largest first."""
    before, after = m0.by_label(name, label), m1.by_label(name, label)
    grown = {k: v - before.get(k, 0.0) for k, v in after.items()}
    parts = ["%s %d" % (k or "-", v) for k, v in sorted(grown.items(), key=lambda kv: -kv[1])
             if v > 0]
    return ", ".join(parts) or "none"


def loopback_floor(nodes, round_trips_per_node=2):
    """What the kernel alone charges a client for the burst's synchronous writes: the client
    CPU of bare loopback TCP round trips (a PATCH-sized request, a Node-sized answer; no TLS,
    HTTP, JSON or server work), measured now on this machine, times the writes per node."""
    tool = os.path.join(benchlib.harness.BUILD, "test", "host", "kube", "kube-client-bench")
    load = benchlib.load_average()
    out = subprocess.run([tool, "--loopback-floor", "20000"], check=True, capture_output=True,
                         text=True).stdout
    us = float(out.split("client CPU ")[1].split(" us")[0])
    return [row("1 node burst", "%d nodes, 0 ms cloud, unthrottled" % nodes,
                "floor: %d bare loopback round trips per node, client CPU" % round_trips_per_node,
                us * round_trips_per_node * nodes / 1e6, "CPU-s", load=load,
                note="%.1f us per round trip (kube-client-bench --loopback-floor), no TLS, "
                     "HTTP or JSON" % us)]


# ---- 2. steady state at 5,000 nodes ----------------------------------------------------------------

SYNCED = "Caches synced"
LEADER = "Successfully acquired lease"


def cluster_ip_services(count, namespace="default", prefix="svc"):
    return [("POST", "/api/v1/namespaces/%s/services" % namespace, {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "%s-%04d" % (prefix, i), "labels": {"app": "%s-%04d" % (prefix, i),
                                                                 "tier": "bench"}},
        "spec": {"type": "ClusterIP", "selector": {"app": "%s-%04d" % (prefix, i)},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                           {"name": "https", "port": 443, "targetPort": 8443,
                            "protocol": "TCP"}]}}) for i in range(count)]


def steady_state(nodes=5000, services=1000, idle_seconds=60, bound_rss_mib=None,
                 lb_services_count=0, heartbeat_args=(), bound_peak_mib=None,
                 bound_cpu_minute=None, per_object=False, isolated=False):
    """A cluster of `nodes` realistic nodes (already initialised, kubelets heartbeating)
    and `services` Services: time from start to caches synced and leader, RSS, and CPU while
    idle. With `lb_services_count`, that many of the Services are LoadBalancers (given their
    load balancers by the first ccm); `heartbeat_args` are kubesim's flags for the kubelets'
    periods. With `per_object` (the scale suite), the bytes per cached node and Service and
    the cost of each periodic pass (ccm_controller_pass_*) are added. With `isolated`, the
    measured ccm runs its provider in a child process, so that the host's RSS and CPU do not
    include the fake cloud's own state (every load balancer's list of hosts); the child's
    are reported beside them."""
    s = "2 steady state"
    case = "%d nodes, %d services" % (nodes, services)
    if lb_services_count:
        case += " (%d LoadBalancer)" % lb_services_count
    with Env(nodes=nodes, kubesim_args=heartbeat_args) as env:
        world = {"autoInstances": auto_instances()}
        if lb_services_count:
            world["loadBalancer"] = {"ipPool": "10.200.0.0/16"}
        # With load balancers, the cloud keeps its state across the restart below, as a real
        # cloud does: otherwise the measured ccm finds every balancer gone and re-creates
        # them all during the "idle" minute.
        cloud = env.cloud(state_file=bool(lb_services_count), **world)
        api = benchlib.KeepAliveApi(env.cluster.url, env.cluster.ca_file, env.api.token)
        api.run(cluster_ip_services(services - lb_services_count))
        api.run(lb_services(lb_services_count))
        # A first ccm initialises every node (scenario 1's work) and creates the load
        # balancers, then stops.
        env.start_ccm(cloud, qps=-1, burst=30)
        env.wait_log(INITIALIZED, count=nodes, timeout=max(300, nodes * 0.01))
        if lb_services_count:
            wait_ingresses(env, lb_services_count, timeout=max(300, lb_services_count * 0.1))
        env.ccm.stop()
        # The measured process: a fresh start with leader election, as deployed.
        load = benchlib.load_average()
        t_start = time.time()
        env.start_ccm(cloud, qps=20, burst=30,
                      extra=["--leader-elect=true"] +
                      (["--provider-isolation=process"] if isolated else []))
        t_leader = env.wait_log(LEADER, timeout=120)
        t_synced = env.wait_log(SYNCED, timeout=120)
        env.wait_log(CONTROLLER_UP, timeout=120)
        proc = env.ccm_proc()
        child = provider_process(env) if isolated else None
        wave = None
        if lb_services_count:
            # A restarted service controller ensures every LoadBalancer Service once (its
            # cache of what each balancer was given is empty, as upstream's is): that wave is
            # start-up work, reported on its own, and the idle minute begins after it.
            wave = reensure_wave(env, proc, child, lb_services_count, t_start)
        time.sleep(10)  # settle (first monitor passes, resyncs)
        child_cpu0 = child.cpu_seconds() if child else 0.0
        rss_settled = proc.rss_bytes()
        cpu0 = proc.cpu_seconds()
        threads0 = proc.thread_cpu()
        m0 = env.metrics()
        t0 = time.time()
        env.profile_start()  # BENCH_PERF: where the idle minute's CPU goes (not for figures)
        time.sleep(idle_seconds)
        env.profile_stop()
        cpu1 = proc.cpu_seconds()
        threads1 = proc.thread_cpu()
        t1 = time.time()
        rss_end = proc.rss_bytes()
        hwm = proc.hwm_bytes()
        if child:
            child_cpu = child.cpu_seconds() - child_cpu0
            child_rss = child.rss_bytes()
        m = env.metrics()
        writes = api_writes(m)
    mib = 1024.0 * 1024.0
    per_minute = (cpu1 - cpu0) * 60.0 / (t1 - t0)
    rows = [
        row(s, case, "RSS after start-up", max(rss_settled, rss_end) / mib, "MiB",
            bound_rss_mib,
            note="peak (VmHWM) %.1f MiB" % (hwm / mib), load=load),
        row(s, case, "CPU per minute while idle (kubelet heartbeats running)", per_minute,
            "CPU-s", bound_cpu_minute,
            note="measured over %.0f s; %d API writes since start; kubesim %s; per thread "
            "(CPU-s per minute): %s" %
            (t1 - t0, writes, " ".join(heartbeat_args) or "defaults",
             thread_split(threads0, threads1, per=(t1 - t0) / 60.0)), load=load),
        row(s, case, "start to leader", t_leader - t_start, "s", load=load),
        row(s, case, "start to caches synced", t_synced - t_start, "s", load=load,
            note="node and service informers"),
    ]
    if wave:
        rows.append(row(s, case, "re-ensure wave after the restart", wave["seconds"], "s",
                        load=load, note="every LoadBalancer Service ensured once: %d provider "
                        "calls; host %.2f CPU-s from start to the wave's end%s" %
                        (wave["calls"], wave["cpu"], "; provider process %.2f CPU-s" %
                         wave["child_cpu"] if child else "")))
    if per_object:
        rows.append(row(s, case, "peak RSS (VmHWM)", hwm / mib, "MiB", bound_peak_mib, load=load,
                        note="from start, including the initial list of every object"))
        rows += cached_bytes_rows(s, case, m, load)
        rows += pass_cost_rows(s, case, m0, m, load)
    if isolated:
        rows += [
            row(s, case, "provider process RSS (fake cloud's state)", child_rss / mib, "MiB",
                load=load, note="--provider-isolation=process: the host's figures above "
                "leave the fake cloud out; its %d load balancers keep every host" %
                lb_services_count),
            row(s, case, "provider process CPU per minute while idle",
                child_cpu * 60.0 / (t1 - t0), "CPU-s", load=load),
        ]
    return rows


def reensure_wave(env, proc, child, count, t_start, timeout=600.0):
    """Waits until the service controller has made `count` ensure calls and its queue is
    empty; returns the wave's length from the process start, the calls and the CPU spent."""
    deadline = time.time() + timeout
    while True:
        m = env.metrics()
        calls = m.sum("ccm_provider_calls_total", call="ensure_load_balancer")
        busy = (m.sum("workqueue_depth", name="service") +
                m.sum("ccm_provider_calls_in_flight"))
        if calls >= count and busy == 0:
            return {"seconds": time.time() - t_start, "calls": calls,
                    "cpu": proc.cpu_seconds(),
                    "child_cpu": child.cpu_seconds() if child else 0.0}
        if time.time() > deadline:
            raise AssertionError("re-ensure wave: %d of %d ensure calls after %.0f s" %
                                 (calls, count, timeout))
        time.sleep(0.5)


def wait_ingresses(env, count, timeout):
    """Waits until `count` LoadBalancer Services have an ingress (polled by listing)."""
    deadline = time.time() + timeout
    while True:
        items = env.api.get("/api/v1/namespaces/default/services")["items"]
        done = sum(1 for i in items if i["spec"].get("type") == "LoadBalancer" and
                   (i.get("status", {}).get("loadBalancer", {}) or {}).get("ingress"))
        if done >= count:
            return
        if time.time() > deadline:
            raise AssertionError("only %d of %d services got an ingress" % (done, count))
        time.sleep(1.0)


def cached_bytes_rows(s, case, m, load):
    """Bytes per cached node and per cached Service, from the host's informer gauges."""
    out = []
    for resource, label in (("nodes", "node"), ("services", "Service")):
        objects = m.sum("ccm_informer_cached_objects", resource=resource)
        held = m.sum("ccm_informer_cached_bytes", resource=resource)
        out.append(row(s, case, "bytes per cached %s" % label, held / max(1.0, objects),
                       "bytes", load=load,
                       note="ccm_informer_cached_bytes / _objects{resource=\"%s\"}: %.1f MiB "
                       "for %d" % (resource, held / 1048576.0, objects)))
    set_nodes = m.sum("ccm_service_host_set_nodes")
    if set_nodes > 0:  # the load balancers' host set (a build from before the gauge: none)
        text = m.sum("ccm_service_host_set_bytes", part="text")
        refs = m.sum("ccm_service_host_set_bytes", part="refs")
        if text + refs > 0:
            note = ("ccm_service_host_set_bytes / _nodes: text %.0f + refs %.0f bytes per node, "
                    "%.1f MiB for %d" % (text / set_nodes, refs / set_nodes,
                                         (text + refs) / 1048576.0, set_nodes))
        else:
            note = ("none held at the end of the minute: the set (%d nodes) is built for a "
                    "wave of load-balancer calls and dropped when the service queue drains"
                    % set_nodes)
        out.append(row(s, case, "bytes per node of the host set", (text + refs) / set_nodes,
                       "bytes", load=load, note=note))
    return out


PASS_CONTROLLERS = (("cloud-node", "address refresh"),
                    ("cloud-node-lifecycle", "lifecycle monitor"),
                    ("route", "route reconcile (full pass)"))


def pass_cost_rows(s, case, m0, m1, load, controllers=PASS_CONTROLLERS, bounds=None):
    """The cost of the controllers' periodic passes between two scrapes, from
    ccm_controller_pass_*{controller}: CPU and wall time per pass, CPU per node. A
    controller that made no pass in the window is measured over every pass since start
    (m0 = None does that too)."""
    out = []
    for controller, label in controllers:
        def delta(name, m0=m0):
            v1 = m1.sum(name, controller=controller)
            return v1 - (m0.sum(name, controller=controller) if m0 else 0.0)
        passes = delta("ccm_controller_pass_duration_seconds_count")
        window = "in the window"
        if passes <= 0 and m0 is not None:
            passes = m1.sum("ccm_controller_pass_duration_seconds_count", controller=controller)
            delta = lambda name: m1.sum(name, controller=controller)  # noqa: E731
            window = "since start"
        if passes <= 0:
            continue
        cpu = delta("ccm_controller_pass_cpu_seconds_total") / passes
        wall = delta("ccm_controller_pass_duration_seconds_sum") / passes
        objects = m1.sum("ccm_controller_pass_objects", controller=controller)
        bound = (bounds or {}).get(controller)
        out.append(row(s, case, "%s: CPU per pass" % label, cpu, "CPU-s", bound, load=load,
                       note="%d passes %s, %.3f s wall each, %d nodes" %
                       (passes, window, wall, objects)))
        out.append(row(s, case, "%s: CPU per node per pass" % label,
                       cpu * 1e6 / max(1.0, objects), "us", load=load))
    return out


# ---- 3. load balancers ---------------------------------------------------------------------------

LB_SYNC = "service_controller_loadbalancer_sync_total"


def lb_services(count, prefix="lb"):
    return [("POST", "/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "%s-%04d" % (prefix, i)},
        "spec": {"type": "LoadBalancer", "selector": {"app": "%s-%04d" % (prefix, i)},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                            "protocol": "TCP"}]}}) for i in range(count)]


def _wait_syncs(env, since, want, timeout=300):
    """Waits until the service controller has made `want` host updates since `since`
    (service_controller_loadbalancer_sync_total); returns the time it saw them."""
    deadline = time.time() + timeout
    while True:
        got = env.metrics().sum(LB_SYNC) - since
        if got >= want:
            return time.time()
        if time.time() > deadline:
            raise AssertionError("only %d of %d load balancers updated" % (got, want))
        time.sleep(0.05)


def load_balancers(services=1000, nodes=100, latency_ms=20, bound_ingress=None,
                   bound_update=None, node_leaves=False):
    """`services` LoadBalancer Services created at once over `nodes` nodes: time until every
    one has its ingress; then a node joins (and, with `node_leaves`, one is deleted): time
    until every load balancer has the new node set and the provider calls per balancer."""
    s = "3 load balancers"
    case = "%d services, %d nodes, %d ms cloud" % (services, nodes, latency_ms)
    with Env(nodes=nodes) as env:
        cloud = env.cloud(state_file=False, autoInstances=auto_instances(),
                          latency="%dms" % latency_ms,
                          loadBalancer={"ipPool": "10.200.0.0/16"})
        env.start_ccm(cloud, qps=-1, burst=30)
        env.wait_log(INITIALIZED, count=nodes, timeout=max(120, nodes * 0.01))
        env.wait_log("Started the service controller", timeout=60)
        time.sleep(1.0)
        with_ingress = set()
        import threading
        lock = threading.Lock()
        done = threading.Event()
        last = [None]

        def on_event(kind, obj):
            key = obj["metadata"]["name"]
            ing = (obj.get("status", {}).get("loadBalancer", {}) or {}).get("ingress")
            with lock:
                if kind != "DELETED" and ing and obj["spec"].get("type") == "LoadBalancer":
                    if key not in with_ingress:
                        with_ingress.add(key)
                        if len(with_ingress) == services:
                            last[0] = time.time()
                            done.set()

        watch = benchlib.WatchCounter(env, "/api/v1/namespaces/default/services", on_event)
        api = benchlib.KeepAliveApi(env.cluster.url, env.cluster.ca_file, env.api.token)
        proc = env.ccm_proc()
        m0 = env.metrics()
        cpu0 = proc.cpu_seconds()
        load = benchlib.load_average()
        t0 = time.time()
        api.run(lb_services(services))
        t_created = time.time()
        if not done.wait(timeout=300):
            raise AssertionError("only %d of %d services got an ingress" %
                                 (len(with_ingress), services))
        t_all = last[0]
        cpu1 = proc.cpu_seconds()
        m1 = env.metrics()
        lb_calls_ensure = (provider_calls(m1, "ccm.loadbalancer/1") -
                           provider_calls(m0, "ccm.loadbalancer/1"))
        # A node joins: every load balancer must get it.
        syncs0 = m1.sum(LB_SYNC)
        t_join = time.time()
        env.add_nodes(1)
        t_hosts = _wait_syncs(env, syncs0, services)
        time.sleep(1.0)
        m3 = env.metrics()
        errors = m3.sum("service_controller_nodesync_error_total")
        host_calls = (provider_calls(m3, "ccm.loadbalancer/1") -
                      provider_calls(m1, "ccm.loadbalancer/1"))
        leave = None
        if node_leaves:
            # A node leaves (deleted, as the lifecycle controller or an operator would).
            victim = sorted(n["metadata"]["name"] for n in env.cluster.nodes())[0]
            syncs1 = m3.sum(LB_SYNC)
            t_leave = time.time()
            env.api.delete("/api/v1/nodes/" + victim)
            t_gone = _wait_syncs(env, syncs1, services)
            time.sleep(1.0)
            m4 = env.metrics()
            leave = (t_gone - t_leave, provider_calls(m4, "ccm.loadbalancer/1") -
                     provider_calls(m3, "ccm.loadbalancer/1"))
        watch.stop()
    rows = []
    if node_leaves:
        rows += [
            row(s, case, "node joins: provider calls per load balancer", host_calls / services,
                "calls", 1.0, load=load),
            row(s, case, "node leaves: time until every load balancer is updated", leave[0],
                "s", bound_update, load=load),
            row(s, case, "node leaves: provider calls per load balancer", leave[1] / services,
                "calls", 1.0, load=load),
        ]
    return rows + [
        row(s, case, "create to every ingress", t_all - t0, "s", bound_ingress, load=load,
            note="the bench created the %d Services in %.2f s" % (services, t_created - t0)),
        row(s, case, "provider calls per service (ensure)", lb_calls_ensure / services, "calls",
            load=load),
        row(s, case, "host CPU for the %d load balancers" % services, cpu1 - cpu0, "CPU-s",
            load=load),
        row(s, case, "node joins: time until every load balancer has it", t_hosts - t_join, "s",
            bound_update, load=load,
            note="incl. the node's initialisation; %d host-update errors" % errors),
        row(s, case, "node joins: provider calls", host_calls, "calls", load=load,
            note="for %d load balancers" % services),
    ]


# ---- 4. routes -------------------------------------------------------------------------------------

ROUTE_CREATED = "Created route"
CIDR_ALLOCATED = "Allocated pod CIDRs to node"


def routes(nodes=5000, bound_seconds=None, quiet_pass=False, bound_pass_cpu=None):
    """A ccm starting with --configure-cloud-routes over `nodes` nodes with pod CIDRs: time
    until every route is created, with no duplicate creates. With `quiet_pass`, the cost of
    the next full reconcile pass once every route exists (one that changes nothing)."""
    s = "4 routes"
    case = "%d nodes with pod CIDRs" % nodes
    with Env(nodes=nodes) as env:
        cloud = env.cloud(state_file=False, autoInstances=auto_instances())
        ipam = ["--allocate-node-cidrs=true", "--cluster-cidr=10.128.0.0/9"]
        # Set-up: a first ccm initialises the nodes and gives them pod CIDRs, then stops.
        env.start_ccm(cloud, qps=-1, burst=30, extra=ipam)
        env.wait_log(CIDR_ALLOCATED, count=nodes, timeout=max(300, nodes * 0.01))
        env.wait_log(INITIALIZED, count=nodes, timeout=max(300, nodes * 0.01))
        env.ccm.stop()
        load = benchlib.load_average()
        t_start = time.time()
        env.start_ccm(cloud, qps=-1, burst=30,
                      extra=ipam + ["--configure-cloud-routes=true"])
        t_controller = env.wait_log("Started the route controller", timeout=120)
        t_last = env.wait_log(ROUTE_CREATED, count=nodes, timeout=max(300, nodes * 0.01),
                              interval=0.01)
        proc = env.ccm_proc()
        cpu = proc.cpu_seconds()
        time.sleep(2.0)
        m = env.metrics()
        creates = m.sum("ccm_provider_calls_total", call="create_route")
        duplicates = m.sum("ccm_provider_calls_total", call="create_route", code="ALREADY_EXISTS")
        calls = provider_calls(m, "ccm.routes/1")
        left = [n["metadata"]["name"] for n in env.cluster.nodes()
                if not any(c["type"] == "NetworkUnavailable" and c["status"] == "False"
                           for c in n["status"].get("conditions", []))]
        quiet = []
        if quiet_pass:
            # The next full pass after this scrape lists every route and finds nothing to do
            # (--route-reconciliation-period, 10 s by default).
            count = "ccm_controller_pass_duration_seconds_count"
            deadline = time.time() + 120
            m_end = env.metrics()
            while m_end.sum(count, controller="route") <= m.sum(count, controller="route"):
                if time.time() > deadline:
                    raise AssertionError("no full route pass within 120 s")
                time.sleep(0.5)
                m_end = env.metrics()
            quiet = pass_cost_rows(s, case + ", quiet pass", m, m_end, load,
                                   controllers=(("route", "quiet reconcile pass"),),
                                   bounds={"route": bound_pass_cpu})
    return quiet + [
        row(s, case, "start to every route created", t_last - t_start, "s", bound_seconds,
            load=load, note="%.2f s after the route controller started; %d nodes without "
            "NetworkUnavailable=False" % (t_last - t_controller, len(left))),
        row(s, case, "provider calls", calls, "calls", load=load,
            note="%d route creates" % creates),
        row(s, case, "duplicate route creates", duplicates, "creates", 0, load=load),
        row(s, case, "host CPU from start", cpu, "CPU-s", load=load),
    ]


# ---- 5. lifecycle ------------------------------------------------------------------------------------

DELETING = "Deleting node because its instance does not exist"


def _zone_nodes(names, zone_index):
    return [n for n in names if int(n.rsplit("-", 1)[1]) % len(ZONES) == zone_index]


def busiest_window(times, rate, span=200):
    """The largest ratio, over every window of consecutive deletion times [t_i, t_j], of the
    deletions in it to what a token bucket (rate r, burst 1) allows: 1 + r * (t_j - t_i),
    with 10 ms of timestamp slack. 1.0 or less: the rate was kept."""
    worst = 0.0
    for i in range(len(times)):
        for j in range(i, min(len(times), i + span)):
            allowed = 1 + rate * (times[j] - times[i] + 0.01)
            worst = max(worst, (j - i + 1) / allowed)
    return worst


_LOG_ZONE = re.compile(r'zone="([^"]*)"')


def lifecycle(per_zone=500, vanish=500, rate=10.0, across_zones=False):
    """`vanish` nodes of zone 0 (with `across_zones`, spread over every zone) go NotReady and
    their VMs disappear; with --node-eviction-rate = rate, the deletion timestamps must
    respect each zone's token bucket (rate, burst 1). Then two protections: a small zone
    partially disrupted deletes nothing, and when every zone is fully disrupted nothing is
    deleted."""
    s = "5 lifecycle"
    rows = []
    total = per_zone * len(ZONES)
    with Env(nodes=total) as env:
        world = {"autoInstances": auto_instances(), "instances": []}
        cloud = env.cloud(state_file=False, **world)
        env.start_ccm(cloud, qps=-1, burst=30,
                      extra=["--node-eviction-rate=%g" % rate,
                             "--secondary-node-eviction-rate=0.01"])
        env.wait_log(INITIALIZED, count=total, timeout=max(300, total * 0.01))
        names = sorted(n["metadata"]["name"] for n in env.cluster.nodes())
        zones = range(len(ZONES)) if across_zones else range(1)
        share = vanish // len(zones)
        victims = {z: _zone_nodes(names, z)[:share] for z in zones}
        everyone = [n for z in zones for n in victims[z]]
        env.log.watch(DELETING, keep=True)
        load = benchlib.load_average()
        t0 = time.time()
        env.cluster.set_ready(everyone, "False")
        env.cluster.update_cloud(instances=[
            {"name": n, "zone": ZONES[z], "type": "fake.medium", "state": "absent"}
            for z in zones for n in victims[z]])
        t_last = env.wait_log(DELETING, count=len(everyone),
                              timeout=max(120, share / rate * 3 + 60), interval=0.05)
        lines = env.log.lines[DELETING]
        times = sorted(benchlib.klog_time(l) for l in lines)
        # Each zone has its own bucket: check each zone's deletions on their own.
        by_zone = {}
        for line in lines:
            z = _LOG_ZONE.search(line)
            by_zone.setdefault(z.group(1) if z else "", []).append(benchlib.klog_time(line))
        worst = max(busiest_window(sorted(t), rate) for t in by_zone.values())
        if across_zones:
            case = "%d of %d nodes vanish across %d zones, rate %g/s" % (
                len(everyone), total, len(zones), rate)
        else:
            case = "%d of %d nodes in a zone vanish, rate %g/s" % (len(everyone), per_zone, rate)
        expected = (share - 1) / rate
        rows += [
            row(s, case, "time until deleted", t_last - t0, "s",
                bound=expected * 1.1 + 10, load=load,
                note="the rate allows %.0f s; first deletion after %.1f s (two NOT_FOUND a "
                "monitor period apart)" % (expected, times[0] - t0)),
            row(s, case, "busiest window / allowed by rate + burst", worst, "ratio", 1.0,
                load=load, note="%d deletions checked over every window of each zone (%s)" % (
                    len(times), ", ".join("%s %d" % (z, len(t))
                                         for z, t in sorted(by_zone.items())))),
        ]
        # Partial disruption: 60 % of zone 1 NotReady with their VMs gone. The zone has more
        # than --large-cluster-size-threshold (50) nodes, so the secondary rate (0.01/s)
        # applies: over 20 s at most 1 deletion (the burst) may happen.
        z1 = _zone_nodes(sorted(n["metadata"]["name"] for n in env.cluster.nodes()), 1)
        part = z1[:int(len(z1) * 0.6) + 1]
        env.log.skip_to_end()
        env.cluster.set_ready(part, "False")
        env.cluster.update_cloud(instances=[
            {"name": n, "zone": ZONES[1], "type": "fake.medium", "state": "absent"}
            for n in part])
        time.sleep(20)
        env.log.poll()
        partial_deleted = env.log.count(DELETING)
        rows.append(row(s, "zone of %d: %d NotReady and gone (partial disruption)" %
                        (len(z1), len(part)), "deletions in 20 s", partial_deleted, "nodes",
                        1 + 0.01 * 20, load=load,
                        note="secondary rate 0.01/s + burst 1 allows %.1f" % (1 + 0.01 * 20)))
        # Partition: every remaining node NotReady and every VM gone: nothing may be deleted.
        rest = sorted(n["metadata"]["name"] for n in env.cluster.nodes())
        env.log.skip_to_end()
        env.cluster.set_ready(rest, "False")
        env.cluster.update_cloud(instances=[
            {"name": n, "zone": ZONES[int(n.rsplit("-", 1)[1]) % 3], "type": "fake.medium",
             "state": "absent"} for n in rest])
        time.sleep(15)
        env.log.poll()
        rows.append(row(s, "every zone fully disrupted (%d nodes NotReady and gone)" % len(rest),
                        "deletions in 15 s", env.log.count(DELETING), "nodes", 0, load=load,
                        note="a partition: nothing may be deleted"))
    return rows


# ---- 6. kubesim's own figures ------------------------------------------------------------------------

def kubesim_bench(build_dir, seconds=10):
    s = "6 kubesim"
    out = os.path.join(build_dir, "bench-kubesim.json")
    load = benchlib.load_average()
    subprocess.run([os.path.join(build_dir, "kubesim", "kubesim-bench"),
                    "--kubesim=" + os.path.join(build_dir, "kubesim", "kubesim"),
                    "--seconds=%d" % seconds, "--clients=16", "--watchers=10",
                    "--memory-nodes=5000", "--json-out=" + out],
                   check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        results = json.load(f)["results"]
    rows = []
    for r in results:
        better = "lower" if r["unit"] == "MiB" else "higher"
        rows.append(row(s, "kubesim-bench", r["scenario"], r["value"], r["unit"], better=better,
                        note=r["details"], load=load))
    return rows


# ---- 7. provider isolation ------------------------------------------------------------------

def isolation(build_dir, nodes=5000, calls=5000):
    """--provider-isolation=process against in-process: the round trip of one trivial call
    (fake-cloud's instance_exists, one caller), then the node burst both ways."""
    s = "7 provider isolation"
    with tempfile.TemporaryDirectory(prefix="ccm-bench-iso-") as tmp:
        config = os.path.join(tmp, "cloud.json")
        with open(config, "w") as f:
            json.dump({"autoInstances": auto_instances()}, f)
        load = benchlib.load_average()
        out = subprocess.run([os.path.join(build_dir, "bench", "isolation-roundtrip"),
                              os.path.join(build_dir, "host", "cloud-controller-manager"),
                              os.path.join(build_dir, "plugins"), config, str(calls)],
                             check=True, capture_output=True, text=True, timeout=300)
        t = json.loads(out.stdout.strip().splitlines()[-1])
    case = "instance_exists round trip, %d calls, one caller" % calls
    rows = [
        row(s, case, "in-process median", t["in_process_median_us"], "us", load=load,
            note="p99 %.1f us" % t["in_process_p99_us"]),
        row(s, case, "isolated median", t["isolated_median_us"], "us", load=load,
            note="p99 %.1f us" % t["isolated_p99_us"]),
        row(s, case, "isolation overhead per call",
            t["isolated_median_us"] - t["in_process_median_us"], "us", load=load),
    ]
    rows += node_burst(nodes, 0, -1)
    rows += node_burst(nodes, 0, -1, isolated=True)
    return rows
