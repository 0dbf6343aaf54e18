#!/usr/bin/env python3
"""kubesim alone (no ccm): the steady cost of its simulated kubelets' writes.

Starts one or more kubesim binaries in turn with N nodes registered at start and the given
Lease / status periods, waits until they are registered (the ready file), lets them settle,
then reads the process's CPU from /proc over a window. Several binaries alternate, each
--rounds times, back to back, so before/after pairs see the same machine load.

  python3 bench/kubesim_alone.py --nodes 20000 --period 10s --window 30 --rounds 2 \\
      before=/path/to/main/build-release/kubesim/kubesim \\
      after=build-release/kubesim/kubesim

Prints one line per run: label, registration CPU (to ready), CPU-s per minute over the
window, RSS, load average at start and end. Figures, not a test: nothing is asserted.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        data = f.read()
    fields = data[data.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_once(label, binary, args):
    work = tempfile.mkdtemp(prefix="kubesim-alone-")
    ready = os.path.join(work, "ready.json")
    cmd = [binary, "--ready-file=" + ready, "--nodes=%d" % args.nodes,
           "--heartbeat-period=" + args.period, "--node-status-period=" + args.status_period,
           "--cert-dir=" + os.path.join(work, "certs")] + args.extra
    log = open(os.path.join(work, "kubesim.log"), "w")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        while not os.path.exists(ready):
            if proc.poll() is not None:
                raise RuntimeError("%s exited with %d (log in %s)" % (binary, proc.returncode,
                                                                      work))
            time.sleep(0.1)
        registered_s = time.monotonic() - start
        registration_cpu = cpu_seconds(proc.pid)
        time.sleep(args.settle)
        load0 = load_average()
        c0 = cpu_seconds(proc.pid)
        t0 = time.monotonic()
        time.sleep(args.window)
        c1 = cpu_seconds(proc.pid)
        t1 = time.monotonic()
        row = {
            "label": label,
            "nodes": args.nodes,
            "registered_s": round(registered_s, 2),
            "registration_cpu_s": round(registration_cpu, 2),
            "cpu_s_per_min": round((c1 - c0) * 60.0 / (t1 - t0), 2),
            "rss_mib": round(rss_mib(proc.pid), 1),
            "load_start": load0,
            "load_end": load_average(),
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    shutil.rmtree(work, ignore_errors=True)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=20000)
    p.add_argument("--period", default="10s", help="Lease renewal period")
    p.add_argument("--status-period", default="10s", help="node status post period")
    p.add_argument("--settle", type=float, default=5.0, help="seconds between ready and window")
    p.add_argument("--window", type=float, default=30.0, help="seconds of CPU measured")
    p.add_argument("--rounds", type=int, default=2, help="runs of each binary, alternated")
    p.add_argument("--extra", action="append", default=[], help="another kubesim flag")
    p.add_argument("--json", action="store_true", help="one JSON object per run")
    p.add_argument("binaries", nargs="+", help="LABEL=PATH of a kubesim binary")
    args = p.parse_args()
    pairs = []
    for b in args.binaries:
        label, _, path = b.partition("=")
        if not path:
            label, path = os.path.basename(b), b
        pairs.append((label, path))
    if not args.json:
        print("%-8s %7s %10s %12s %14s %9s %s" % ("run", "nodes", "ready in", "reg. CPU",
                                                 "CPU-s/minute", "RSS", "load start/end"))
    for _ in range(args.rounds):
        for label, path in pairs:
            row = run_once(label, path, args)
            if args.json:
                print(json.dumps(row))
            else:
                print("%-8s %7d %9.2fs %10.2f s %14.2f %7.0f M  %.2f / %.2f" % (
                    row["label"], row["nodes"], row["registered_s"], row["registration_cpu_s"],
                    row["cpu_s_per_min"], row["rss_mib"], row["load_start"], row["load_end"]))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
