"""The scale suite (`./dev bench scale`, issue #29): every scenario of bench/scenarios.py run
at each of --sizes, its targets printed beside their bounds, then the growth table.

The targets are set at 100,000 nodes. For a smaller size N, the bounds on time and CPU are
scaled linearly (bound x N / 100,000: the work is linear in N, so a run that keeps the scaled
bound is on course for the full one); memory bounds are not scaled (a base RSS does not
shrink with N), the growth table's bytes per node tell how memory extrapolates. Each scaled
row says so in its note.
"""
import benchlib
import scenarios
from scenarios import row

FULL = 100000

# Growth: the costs per node compared between sizes, as (scenario, metric, label in the
# growth table, unit in the table, factor). A row already per node has factor None; a total
# is multiplied by the factor and divided by its objects (the nodes, or the N/10 Services
# for the load-balancer rows: "per Service").
GROWTH = [
    ("1 node burst", "host CPU per node", "join: host CPU", "us", None),
    ("1 node burst", "time to last node initialised", "join: time", "us", 1e6),
    ("1 node burst", "host RSS growth per node", "join: host RSS growth", "bytes", None),
    ("1 node burst", "kubesim CPU per node", "join: kubesim CPU", "us", None),
    ("2 steady state", "bytes per cached node", "memory: cached node", "bytes", None),
    ("2 steady state", "bytes per cached Service", "memory: cached Service", "bytes", None),
    ("2 steady state", "bytes per node of the host set", "memory: LB host set", "bytes", None),
    ("2 steady state", "RSS after start-up", "memory: steady RSS", "bytes", 1048576.0),
    ("2 steady state", "CPU per minute while idle (kubelet heartbeats running)",
     "steady: CPU per minute", "us", 1e6),
    ("2 steady state", "address refresh: CPU per node per pass", "steady: address refresh pass",
     "us", None),
    ("2 steady state", "lifecycle monitor: CPU per node per pass",
     "steady: lifecycle monitor pass", "us", None),
    ("3 load balancers", "create to every ingress", "lb: time to every ingress, per Service",
     "us", 1e6),
    ("3 load balancers", "node joins: time until every load balancer has it",
     "lb: node join update, per Service", "us", 1e6),
    ("4 routes", "start to every route created", "routes: time to create", "us", 1e6),
    ("4 routes", "quiet reconcile pass: CPU per node per pass", "routes: quiet pass", "us",
     None),
]
# The load-balancer rows are per Service (N/10 of them), the others per node.
PER_SERVICE = ("3 load balancers",)
# A step whose cost per node grows by more than this from the smallest size to the largest
# is flagged as growing faster than linearly.
SUPERLINEAR = 1.25


def scaled(bound_at_full, n):
    return bound_at_full * n / FULL


def _note_scaled(rows, n):
    """Says on each row whose bound (time or CPU) was scaled down from 100,000 nodes that it
    was."""
    for r in rows:
        if r.get("bound") and r["unit"] in ("s", "CPU-s"):
            r["note"] = ((r["note"] + "; " if r["note"] else "") +
                         "bound scaled linearly: the 100,000-node target x %d/100,000" % n)
    return rows


def join(n):
    rows = scenarios.node_burst(n, 0, -1, per_node=True, bound_seconds=scaled(30.0, n),
                                bound_cpu=scaled(8.0, n))
    return _note_scaled(rows, n)


def memory_and_steady(n, idle_seconds):
    # Kubelets as the issue has them: status and Lease every 10 s (kubesim's flags today).
    heartbeat = ["--heartbeat-period=10s", "--node-status-period=10s"]
    rows = scenarios.steady_state(n, n // 10, idle_seconds=idle_seconds, bound_rss_mib=128.0,
                                  lb_services_count=n // 10, heartbeat_args=heartbeat,
                                  bound_peak_mib=160.0, bound_cpu_minute=scaled(3.0, n),
                                  per_object=True, isolated=True)
    for r in rows:
        if r.get("bound") is not None and r["unit"] == "MiB":
            r["note"] += "; the 100,000-node bound, not scaled (memory has a base)"
    return _note_scaled(rows, n)


def load_balancers(n):
    return _note_scaled(scenarios.load_balancers(n // 10, nodes=n, latency_ms=20,
                                                 bound_ingress=scaled(30.0, n),
                                                 bound_update=scaled(30.0, n),
                                                 node_leaves=True), n)


def routes(n):
    return _note_scaled(scenarios.routes(n, bound_seconds=scaled(30.0, n), quiet_pass=True,
                                         bound_pass_cpu=scaled(0.5, n)), n)


def lifecycle(n):
    per_zone = n // len(scenarios.ZONES)
    vanish = n // 10
    # Fast enough that each zone's share is deleted in about 20 s at any size.
    rate = max(10.0, vanish / len(scenarios.ZONES) / 20.0)
    return scenarios.lifecycle(per_zone=per_zone, vanish=vanish, rate=rate, across_zones=True)


STEPS = ("join", "steady", "lb", "routes", "lifecycle")


def run(sizes, idle_seconds=60, steps=STEPS):
    """The scenarios named in `steps` (all by default) at every size, then the growth rows.
    Returns the rows; each growth row carries "sizes" ({N: cost per node}) for run.py's
    growth table."""
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise SystemExit("--steps: unknown %s (known: %s)" % (", ".join(unknown),
                                                               ", ".join(STEPS)))
    runners = {"join": join, "steady": lambda n: memory_and_steady(n, idle_seconds),
               "lb": load_balancers, "routes": routes, "lifecycle": lifecycle}
    rows, by_size = [], {}
    for n in sizes:
        got = []
        for step in steps:
            got += runners[step](n)
        for r in got:
            r["size"] = n
        rows += got
        by_size[n] = got
    return rows + growth_rows(by_size)


def per_node_costs(rows, n):
    """{growth label: cost per node} from one size's rows."""
    out = {}
    for scenario, metric, label, _, factor in GROWTH:
        for r in rows:
            if r["scenario"] == scenario and r["metric"] == metric:
                objects = n // 10 if scenario in PER_SERVICE else n
                out[label] = r["value"] * factor / objects if factor else r["value"]
                break
    return out


def growth_rows(by_size, threshold=SUPERLINEAR):
    """One row per cost: its value per node at each size (in "sizes"), the value being the
    ratio largest / smallest size, bound `threshold` (a miss: faster than linear)."""
    sizes = sorted(by_size)
    if len(sizes) < 2:
        return []
    costs = {n: per_node_costs(by_size[n], n) for n in sizes}
    load = benchlib.load_average()
    out = []
    for _, _, label, unit, _ in GROWTH:
        values = {n: costs[n][label] for n in sizes if label in costs[n]}
        lo, hi = sizes[0], sizes[-1]
        if lo not in values or hi not in values or values[lo] <= 0:
            continue
        steps = ["%d->%d %.2fx" % (a, b, values[b] / values[a])
                 for a, b in zip(sizes, sizes[1:])
                 if a in values and b in values and values[a] > 0]
        r = row("growth", "%d -> %d nodes" % (lo, hi),
                label + " per node, largest / smallest size", values[hi] / values[lo], "x",
                threshold, load=load, note="steps " + ", ".join(steps))
        r["sizes"] = values
        r["per_node_unit"] = unit
        out.append(r)
    return out
