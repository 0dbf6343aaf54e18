#!/usr/bin/env python3
"""ccm scale benchmarks: kubesim + the real cloud-controller-manager + fake-cloud.so.

    ./dev bench                       # everything (about 7 minutes on 2 cores)
    ./dev bench --quick               # smaller runs (about 4 minutes)
    ./dev bench burst lifecycle       # only these scenarios
    ./dev bench scale                 # every scenario at 10,000, 25,000 and 100,000 nodes
    ./dev bench scale --sizes 5000    # ... at these sizes (or BENCH_SIZES=5000,10000)
    ./dev bench scale --steps steady  # ... only these of its steps (join, steady, lb, routes,
                                      # lifecycle)
    python3 bench/run.py --build-dir build-release [--repeat N] [--out FILE] [scenario...]

Scenarios: burst (1), steady (2), lb (3), routes (4), lifecycle (5), kubesim (6),
isolation (7); `scale` (bench/scale.py: join, memory, steady state, load balancers, routes and
lifecycle at each of --sizes against the issue's 100,000-node targets, then a growth table of
the cost per node at each size) runs only when named.
Every figure is printed beside its bound (a target the project set itself) as a ratio measured in the
same run, with the machine's load average when it was taken. No upstream figure is printed:
these runs are against kubesim, and upstream's figures were measured against a real
kube-apiserver, which is not the same work (the README's side-by-side table is).
Results go to bench/out/results.json. Profiling (not for figures): BENCH_PERF=<file> samples
the ccm with perf during the node bursts, BENCH_STRACE=<file> counts its system calls there
instead, and BENCH_CCM_WRAPPER="heaptrack -o /tmp/ccm" starts the ccm under a wrapper;
with BENCH_CCM_STOP_SIGNAL=KILL as well, the wrapped ccm is killed instead of stopped at the
end of each step, so heaptrack reports what it held at rest as leaked (heaptrack_print).
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import benchlib  # noqa: E402
import scale  # noqa: E402
import scenarios  # noqa: E402

ALL = ["burst", "steady", "lb", "routes", "lifecycle", "kubesim", "isolation"]
# Run only when named: 100,000 nodes take long and need several GiB (kubesim and the check).
EXTRA = ["scale"]
DEFAULT_SIZES = "10000,25000,100000"


def parse_sizes(text):
    try:
        sizes = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit("--sizes: %r is not a comma-separated list of node counts" % text)
    if not sizes or any(n <= 0 for n in sizes):
        raise SystemExit("--sizes: %r: give one or more positive node counts" % text)
    return sizes

def median_rows(runs):
    """Merges repeated runs of one case: the median value, the range in the note. The other
    fields (the note's thread split, for one) are those of the run nearest the median, so
    they describe the value printed."""
    out = []
    for i in range(len(runs[0])):
        values = [r[i]["value"] for r in runs]
        median = statistics.median(values)
        merged = dict(min((r[i] for r in runs), key=lambda row: abs(row["value"] - median)))
        merged["value"] = median
        merged["runs"] = values
        merged["load"] = statistics.median(r[i]["load"] for r in runs)
        if len(values) > 1:
            rng = "runs %s" % ", ".join("%.3g" % v for v in values)
            merged["note"] = (merged["note"] + "; " if merged["note"] else "") + rng
        out.append(merged)
    return out


def repeat(n, fn, *args, **kwargs):
    return median_rows([fn(*args, **kwargs) for _ in range(n)])


def burst_cases(quick, repeats):
    rows = []
    # Unthrottled (client-side limit off: only the host and kubesim limit the rate).
    rows += repeat(repeats, scenarios.node_burst, 1000, 0, -1)
    rows += repeat(repeats, scenarios.node_burst, 1000, 10, -1, bound_seconds=1.5)
    rows += repeat(repeats, scenarios.node_burst, 1000, 20, -1)
    rows += repeat(repeats, scenarios.node_burst, 5000, 0, -1, bound_seconds=5.0,
                   bound_cpu=0.6)
    rows += scenarios.loopback_floor(5000)
    if not quick:
        rows += scenarios.node_burst(5000, 20, -1)
    # Upstream's default client QPS: the QPS budget is the floor.
    n = 200 if quick else 1000
    rows += scenarios.node_burst(n, 0, 20, 30, floor_ratio=1.02)
    return rows


def run_scenario(name, args):
    quick = args.quick
    if name == "burst":
        return burst_cases(quick, args.repeat)
    if name == "steady":
        return scenarios.steady_state(5000, 1000, idle_seconds=20 if quick else 60,
                                      bound_rss_mib=32.0)
    if name == "lb":
        return scenarios.load_balancers(1000, nodes=100, latency_ms=20, bound_ingress=5.0)
    if name == "routes":
        return scenarios.routes(5000, bound_seconds=5.0)
    if name == "lifecycle":
        if quick:
            return scenarios.lifecycle(per_zone=100, vanish=100, rate=10.0)
        return scenarios.lifecycle(per_zone=500, vanish=500, rate=10.0)
    if name == "kubesim":
        return scenarios.kubesim_bench(args.build_dir, seconds=3 if quick else 10)
    if name == "scale":
        return scale.run(args.sizes, idle_seconds=20 if quick else 60,
                         steps=[x for x in args.steps.split(",") if x])
    if name == "isolation":
        return scenarios.isolation(args.build_dir, nodes=1000 if quick else 5000,
                                   calls=1000 if quick else 5000)
    raise SystemExit("unknown scenario %r (known: %s)" % (name, ", ".join(ALL + EXTRA)))


def verdict(r):
    b = r.get("bound")
    if b is None:
        return "", ""
    v = r["value"]
    if r["better"] == "lower":
        ratio = v / b if b else (0.0 if v == 0 else float("inf"))
        ok = v <= b
    else:
        ratio = v / b if b else float("inf")
        ok = v >= b
    return ("%.2f" % ratio if ratio != float("inf") else "inf"), ("ok" if ok else "MISS")


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        if abs(v) >= 100:
            return "%.0f" % v
        if abs(v) >= 10:
            return "%.1f" % v
        return "%.3g" % v
    return str(v)


def print_growth(rows, out=sys.stdout):
    """The growth table: each cost per node at every size, its ratio from the smallest size to
    the largest, and a flag where that ratio passes the bound (faster than linear)."""
    growth = [r for r in rows if r.get("sizes")]
    if not growth:
        return
    sizes = sorted({n for r in growth for n in r["sizes"]})
    header = ["cost per node", "unit"] + ["%d" % n for n in sizes] + ["largest/smallest", ""]
    table = [header]
    for r in growth:
        flag = "faster than linear" if verdict(r)[1] == "MISS" else ""
        table.append([r["metric"].split(" per node, largest")[0], r["per_node_unit"]] +
                     [fmt(r["sizes"].get(n)) for n in sizes] + ["%.2fx" % r["value"], flag])
    widths = [max(len(str(t[i])) for t in table) for i in range(len(header))]
    print("Growth (bound %.2fx per node from the smallest size to the largest):" %
          growth[0]["bound"], file=out)
    for t in table:
        print("  ".join(str(c).ljust(w) if i in (0, 1, len(t) - 1) else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(t, widths))).rstrip(), file=out)
    print(file=out)


def print_table(rows, out=sys.stdout):
    print("Measured against kubesim on this machine (%d CPUs); load = the 1-minute load "
          "average when the figure was taken." % os.cpu_count(), file=out)
    header = ["scenario", "case", "metric", "value", "unit", "bound", "ratio", "", "load"]
    table = [header]
    for r in rows:
        ratio, ok = verdict(r)
        table.append([r["scenario"], r["case"], r["metric"], fmt(r["value"]), r["unit"],
                      fmt(r["bound"]), ratio, ok, "%.1f" % r.get("load", 0)])
    widths = [max(len(str(t[i])) for t in table) for i in range(len(header))]
    widths[2] = min(widths[2], 58)
    for t in table:
        cells = []
        for i, c in enumerate(t):
            c = str(c)
            if i == 2 and len(c) > widths[2]:
                c = c[:widths[2] - 1] + "~"
            cells.append(c.rjust(widths[i]) if i in (3, 5, 6, 8) else c.ljust(widths[i]))
        print("  ".join(cells).rstrip(), file=out)
    print(file=out)
    for r in rows:
        if r.get("note"):
            print("  [%s | %s | %s] %s" % (r["scenario"], r["case"], r["metric"], r["note"]),
                  file=out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default="build-release")
    p.add_argument("--quick", action="store_true", help="smaller runs")
    p.add_argument("--repeat", type=int, default=None,
                   help="runs per short node burst (median reported; default 3, quick 1)")
    p.add_argument("--out", default=os.path.join(benchlib.ROOT, "bench", "out",
                                                  "results.json"))
    p.add_argument("--sizes", default=os.environ.get("BENCH_SIZES", DEFAULT_SIZES),
                   help="node counts of the scale scenario, comma-separated (default "
                   "$BENCH_SIZES or %s)" % DEFAULT_SIZES)
    p.add_argument("--steps", default=",".join(scale.STEPS),
                   help="the scale scenario's steps, comma-separated (default: all of %s)" %
                   ",".join(scale.STEPS))
    p.add_argument("scenarios", nargs="*", help=", ".join(ALL + EXTRA))
    args = p.parse_args()
    args.sizes = parse_sizes(args.sizes)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    benchlib.configure(args.build_dir)
    names = args.scenarios or ALL
    for n in names:
        if n not in ALL + EXTRA:
            raise SystemExit("unknown scenario %r (known: %s)" % (n, ", ".join(ALL + EXTRA)))
    rows = []
    failures = []
    started = time.time()
    for n in names:
        t = time.time()
        print("==> %s (load %.1f)" % (n, benchlib.load_average()), file=sys.stderr, flush=True)
        try:
            got = run_scenario(n, args)
        except Exception as e:  # a scenario that breaks is reported, the others still run
            traceback.print_exc()
            failures.append("%s: %s" % (n, e))
            continue
        rows += got
        print("    %s took %.0f s" % (n, time.time() - t), file=sys.stderr, flush=True)
    print()
    print_table(rows)
    print()
    print_growth(rows)
    misses = [r for r in rows if verdict(r)[1] == "MISS"]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"started": started, "seconds": time.time() - started,
                   "quick": args.quick, "cpus": os.cpu_count(),
                   "commit": os.popen("git -C %s rev-parse --short HEAD 2>/dev/null" %
                                      benchlib.ROOT).read().strip(),
                   "rows": rows, "failures": failures}, f, indent=1)
    print()
    print("%d figures, %d with bounds, %d missed; %d scenario failures; %.0f s; %s" %
          (len(rows), sum(1 for r in rows if r.get("bound") is not None), len(misses),
           len(failures), time.time() - started, args.out))
    for fl in failures:
        print("FAILED: " + fl)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
