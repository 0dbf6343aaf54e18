#!/usr/bin/python3
"""Leader election under faults, with proof that two replicas never lead at once.

Each replica talks to kubesim through its own recording proxy (relsupport.Proxy) with its
own user, so every request is attributed to a replica with the time it reached the API
server. While nodes keep joining, the leader writes (node initialisation PATCHes, status
patches, events). The proof, for every test:

  * the controller writes (every mutating request but the replica's own Lease and Events)
    of all replicas, in arrival order, form runs of one replica each; there are never more
    runs than leadership acquisitions ("Became leader" lines), each run starts after its
    replica acquired the lease, and
  * where a replica stops leading on its own (not frozen or killed), its "leaderelection
    lost" / "Released the leader lease" line comes before the next leader's "Became leader"
    line (klog wall-clock timestamps of processes on the same machine).

Faults: an API server partition of the leader (its proxy stops forwarding), wall-clock
jumps of the leader and of a follower (libfaketime), three replicas started at once, and the
leader frozen with SIGSTOP past its lease and then resumed.
"""
import glob
import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relsupport import (LEASE, Cluster, Proxy, ccm_kubeconfig, controller_writes,  # noqa: E402
                        log_lines, wait_for)
from harness import is_initialized  # noqa: E402

ELECTION = ["--leader-elect=true", "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms"]
BECAME = "Became leader: starting controllers"
ENDED = ("leaderelection lost", "Released the leader lease")


def faketime_library():
    found = glob.glob("/usr/lib/*/faketime/libfaketime.so.1") + \
        glob.glob("/usr/lib/faketime/libfaketime.so.1")
    if not found:
        raise AssertionError("libfaketime is not installed (Debian package libfaketime; "
                             "./dev installs it)")
    return found[0]


class Replica:
    def __init__(self, c, cloud, name, env=None, extra=()):
        self.name = name
        self.proxy = Proxy(c, name)
        self.kubeconfig = os.path.join(c.tmp, name + ".kubeconfig")
        ccm_kubeconfig(c, self.kubeconfig, "replica-" + name, server=self.proxy.url)
        args = [a for a in c.ccm_args(cloud, list(ELECTION) + list(extra))
                if not a.startswith("--kubeconfig=")] + ["--kubeconfig=" + self.kubeconfig]
        from harness import Ccm
        self.ccm = Ccm(args, os.path.join(c.tmp, name + ".log"), env)
        c.processes.append(self.ccm)
        self.ended_at = None  # wall time the test killed or froze it for good

    def output(self):
        return self.ccm.output()

    def acquisitions(self):
        return [ts.timestamp() for ts, _, msg, _ in log_lines(self.output()) if msg == BECAME]

    def endings(self):
        return [ts.timestamp() for ts, _, msg, _ in log_lines(self.output()) if msg in ENDED]

    def leading(self):
        return len(self.acquisitions()) > len(self.endings()) and self.ccm.alive()

    def kill(self):
        self.ended_at = time.time()
        self.ccm.stop(signal.SIGKILL)


def leaders(replicas):
    return [r for r in replicas if r.leading()]


def prove_single_leader(test, replicas, check_handover_logs=True, clock_offsets=None):
    """The proof described in the module docstring; returns the runs for printing.
    clock_offsets: seconds a replica's (faked) log clock was ahead when it logged."""
    offsets = clock_offsets or {}
    writes = []
    for r in replicas:
        for t, method, path in controller_writes(r.proxy.records()):
            writes.append((t, r.name, method, path))
    writes.sort()
    runs = []  # [replica, first, last]
    for t, name, _, _ in writes:
        if runs and runs[-1][0] == name:
            runs[-1][2] = t
        else:
            runs.append([name, t, t])
    by_name = {r.name: r for r in replicas}
    used = {r.name: 0 for r in replicas}
    for name, first, last in runs:
        acq = [t - offsets.get(name, 0) for t in by_name[name].acquisitions()]
        # The run belongs to this replica's next unused acquisition, made before it began.
        idx = used[name]
        test.assertLess(idx, len(acq), "replica %s wrote in %d separate runs but acquired the "
                        "lease %d times: runs %s" % (name, idx + 1, len(acq), runs))
        test.assertLessEqual(acq[idx], first + 0.001,
                             "replica %s wrote at %.3f before it became leader at %.3f" % (
                                 name, first, acq[idx]))
        used[name] = idx + 1
    if check_handover_logs:
        # Every "Became leader" after the first comes after the previous leader said it
        # stopped (or was killed by the test).
        events = []
        for r in replicas:
            for t in r.acquisitions():
                events.append((t, "start", r.name))
            for t in r.endings():
                events.append((t, "end", r.name))
            if r.ended_at is not None:
                events.append((r.ended_at, "end", r.name))
        events.sort()
        active = set()
        for t, kind, name in events:
            if kind == "start":
                test.assertEqual(active, set(), "%s became leader at %.3f while %s led" % (
                    name, t, active))
                active.add(name)
            else:
                active.discard(name)
    return runs


class Activity:
    """Nodes keep joining (`count` every 0.7 s) so a leader always has writes to make."""

    def __init__(self, c, count=1):
        self.c = c
        self.count = count
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(0.7):
            try:
                self.c.add_nodes(count=self.count)
            except Exception:
                pass

    def finish(self):
        self.stop.set()
        self.thread.join()


def setup(c):
    cloud = c.fake_cloud(autoInstances={"zones": ["z1", "z2"]},
                         latency={"metadata": "300ms"})
    return cloud


def wait_initialised_all(c, what):
    """Waits until every node is initialised; on a timeout, names the nodes still tainted."""
    try:
        wait_for(lambda: all(is_initialized(n) for n in c.nodes()), what)
    except AssertionError as e:
        pending = sorted(n["metadata"]["name"] for n in c.nodes() if not is_initialized(n))
        raise AssertionError("%s; not initialised: %s" % (e, ", ".join(pending))) from None


class LeaderFaultsTest(unittest.TestCase):

    def test_partitioned_leader_steps_down_before_anyone_takes_over(self):
        with Cluster(nodes=2) as c:
            cloud = setup(c)
            a = Replica(c, cloud, "a")
            wait_for(lambda: leaders([a]), "a leads")
            b = Replica(c, cloud, "b")
            activity = Activity(c)
            time.sleep(2)
            a.proxy.partition()
            # a cannot renew: it gives up within the renew deadline and exits 1; b takes
            # over once the lease has not changed for its duration.
            self.assertEqual(a.ccm.proc.wait(timeout=30), 1)
            wait_for(lambda: leaders([b]), "b takes over")
            a.proxy.heal()
            time.sleep(3)
            activity.finish()
            wait_initialised_all(c, "b initialises every node")
            self.assertIn("leaderelection lost", a.output())
            runs = prove_single_leader(self, [a, b])
            print("runs %s" % [(n, round(l - f, 1)) for n, f, l in runs])
            self.assertEqual([r[0] for r in runs], ["a", "b"])

    def test_wall_clock_jumps_change_nothing(self):
        lib = faketime_library()
        with Cluster(nodes=2) as c:
            cloud = setup(c)
            clocks = {}
            replicas = []
            for name in ("a", "b"):
                clocks[name] = os.path.join(c.tmp, "faketime-" + name)
                with open(clocks[name], "w") as f:
                    f.write("+0\n")
                env = {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": clocks[name],
                       "FAKETIME_NO_CACHE": "1", "DONT_FAKE_MONOTONIC": "1",
                       "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
                       ":verify_asan_link_order=0"}
                replicas.append(Replica(c, cloud, name, env=env))
                if name == "a":
                    wait_for(lambda: leaders(replicas), "a leads")
            a, b = replicas
            activity = Activity(c)

            def jump(name, offset):
                with open(clocks[name], "w") as f:
                    f.write(offset + "\n")
                time.sleep(2.5)  # most of a lease duration at the new time

            # The leader's clock jumps forward and back; a follower's jumps a day ahead,
            # where every lease it has seen looks long expired by wall-clock arithmetic.
            for who, offset in [("a", "+3600"), ("b", "+86400"), ("a", "-1800"),
                                ("b", "-1800"), ("a", "+0"), ("b", "+7200")]:
                jump(who, offset)
                self.assertEqual(leaders(replicas), [a], "after %s jumped %s" % (who, offset))
            self.assertEqual(len(b.acquisitions()), 0)
            lease = c.api.get(LEASE)["spec"]
            self.assertEqual(lease.get("leaseTransitions", 0), 0, lease)
            # The follower still takes over properly when the leader dies.
            a.kill()
            wait_for(lambda: leaders([b]), "b takes over with its clock 2 h ahead")
            time.sleep(2)
            activity.finish()
            wait_initialised_all(c, "b initialises every node")
            # Log timestamps are faked: b logged its acquisition 2 h ahead; a is dead (killed).
            runs = prove_single_leader(self, replicas, check_handover_logs=False,
                                       clock_offsets={"b": 7200})
            self.assertEqual([r[0] for r in runs], ["a", "b"])

    def test_replicas_started_at_once_elect_one_leader(self):
        with Cluster(nodes=3) as c:
            cloud = setup(c)
            replicas = [Replica(c, cloud, n) for n in ("a", "b", "c")]
            activity = Activity(c)
            wait_for(lambda: leaders(replicas), "a leader")
            time.sleep(5)
            current = leaders(replicas)
            self.assertEqual(len(current), 1)
            self.assertEqual(sum(len(r.acquisitions()) for r in replicas), 1)
            first = current[0]
            first.kill()
            rest = [r for r in replicas if r is not first]
            wait_for(lambda: leaders(rest), "a new leader")
            time.sleep(4)
            activity.finish()
            self.assertEqual(len(leaders(rest)), 1)
            self.assertEqual(sum(len(r.acquisitions()) for r in replicas), 2)
            wait_initialised_all(c, "every node initialised")
            prove_single_leader(self, replicas)

    def test_frozen_leader_resumes_without_acting(self):
        with Cluster(nodes=2) as c:
            cloud = setup(c)
            a = Replica(c, cloud, "a")
            wait_for(lambda: leaders([a]), "a leads")
            b = Replica(c, cloud, "b")
            activity = Activity(c, count=3)
            # Freeze the leader while it is busy (node metadata calls take 300 ms).
            wait_for(lambda: len(controller_writes(a.proxy.records())) >= 3, "a at work")
            a.ccm.proc.send_signal(signal.SIGSTOP)
            frozen = time.time()
            wait_for(lambda: b.acquisitions(), "b takes over from the frozen leader")
            time.sleep(1)
            resumed = time.time()
            a.ccm.proc.send_signal(signal.SIGCONT)
            # a notices at once that its last renewal is too old, stops its controllers
            # and exits 1 — without a single controller write after it woke up.
            self.assertEqual(a.ccm.proc.wait(timeout=30), 1)
            time.sleep(1)
            activity.finish()
            late = [w for w in controller_writes(a.proxy.records()) if w[0] >= resumed]
            self.assertEqual(late, [], "writes of the frozen leader after it resumed")
            self.assertIn("leaderelection lost", a.output())
            wait_initialised_all(c, "b initialises every node")
            # a's own stop line is later than b's start (it was frozen, not leading):
            # its end is the moment it was frozen.
            a.ended_at = frozen
            runs = prove_single_leader(self, [a, b], check_handover_logs=False)
            self.assertEqual([r[0] for r in runs], ["a", "b"])
            self.assertTrue(leaders([b]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
