#!/usr/bin/python3
"""Provider faults through the real binary: the provider is chaos.so (chaos_plugin.cpp), a
plugin wrapping the real fake-cloud.so that, per operation and object, throws a C++
exception, answers malformed output, answers UNKNOWN, returns errors with retry-after,
hangs past its deadline ignoring cancellation, emits for a call that already returned, or
crashes the process. fake-cloud's own throttle covers throttling.

The host must keep working for the other objects, back off on the failing ones (bounded
call counts, measured from the chaos plugin's per-object call counter in the host's
/metrics), count each contract violation, never delete a Node or a load balancer on an
uncertain answer (an UNKNOWN, malformed, thrown, hung or failed exists/get call), and —
since a plugin runs in the host's process — come back cleanly after the plugin crashed it:
the restarted process takes the lease over, finishes the work the crash interrupted and
creates no duplicate load balancer.
"""
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relsupport import (BUILD, Cluster, Scraper, free_port, metric_sum,  # noqa: E402
                        secure_args, wait_for)
from harness import is_initialized  # noqa: E402

CHAOS_DIR = os.path.join(BUILD, "test", "reliability")
ZONES = ["z1", "z2", "z3"]


class Chaos:
    def __init__(self, c, **cloud):
        self.c = c
        inner = c.fake_cloud(**cloud)
        self.rules_path = os.path.join(c.tmp, "chaos-rules.json")
        self.set([])
        self.config = os.path.join(c.tmp, "chaos.json")
        with open(self.config, "w") as f:
            json.dump({"inner": os.path.join(BUILD, "plugins", "fake-cloud.so"),
                       "innerConfig": inner, "rules": self.rules_path}, f)

    def set(self, rules):
        tmp = self.rules_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"rules": rules}, f)
        time.sleep(0.02)  # a new mtime even within one clock tick
        os.rename(tmp, self.rules_path)
        # The plugin looks at the file at most every 100 ms: wait that out, so the calls the
        # test provokes next see these rules (a call right after the rename could still run
        # under the old ones, e.g. an ensure meant to throw succeeding).
        time.sleep(0.25)

    def start(self, extra, name=None):
        return self.c.start_ccm(self.config, extra, name=name, provider="chaos",
                                plugin_dir=CHAOS_DIR)


def calls(samples, op, obj, action=None):
    labels = {"op": op, "object": obj}
    if action:
        labels["action"] = action
    return metric_sum(samples, "ccm_provider_chaos_calls_total", **labels)


def ingress(c, name):
    svc = c.api.get("/api/v1/namespaces/default/services/" + name)
    return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []


def lb_service(c, name, ports=(80,)):
    c.api.post("/api/v1/namespaces/default/services", {
        "metadata": {"name": name},
        "spec": {"type": "LoadBalancer",
                 "ports": [{"name": "p%d" % p, "port": p, "protocol": "TCP"} for p in ports]}})


class ProviderFaultsTest(unittest.TestCase):

    def test_misbehaving_provider_never_stops_the_rest_and_never_deletes_on_doubt(self):
        with Cluster() as c:
            chaos = Chaos(c, autoInstances={"zones": ZONES},
                          instances=[{"name": "gone-00011", "state": "absent"}],
                          loadBalancer={"ipPool": "10.66.0.0/16"})
            chaos.set([
                {"op": "metadata", "object": "throw-00002", "action": "throw"},
                {"op": "metadata", "object": "bad-00003", "action": "malformed"},
                {"op": "metadata", "object": "hang-00004", "action": "hang", "hangMs": 6000},
                {"op": "metadata", "object": "err-00005", "action": "error", "code": 14,
                 "retryAfterMs": 500},
                {"op": "metadata", "object": "stray-00006", "action": "stray"},
                {"op": "ensureLoadBalancer", "object": "default/lb-throw", "action": "throw"},
                {"op": "ensureLoadBalancer", "object": "default/lb-bad", "action": "malformed"},
                {"op": "ensureLoadBalancer", "object": "default/lb-hang", "action": "hang",
                 "hangMs": 6000},
                {"op": "ensureLoadBalancer", "object": "default/lb-busy", "action": "error",
                 "code": 8, "retryAfterMs": 1000},
                {"op": "loadBalancerName", "object": "default/lb-bad", "action": "malformed"},
            ])
            port = free_port()
            ccm = chaos.start(secure_args(port) + [
                "--cloud-provider-call-timeout=2s", "--node-monitor-period=1s",
                "--node-eviction-rate=100", "--unhealthy-zone-threshold=0.99", "-v=2"])
            scraper = Scraper(c, port)
            good = ["good-00001", "good-00007", "stray-00006", "m-00008", "e-00009", "h-00010",
                    "u-00012"]
            bad = ["throw-00002", "bad-00003", "hang-00004", "err-00005"]
            # gone-00011 has no VM from the start (it is never initialised either).
            c.add_nodes(names=good + bad + ["gone-00011"])
            for name in ["lb-ok", "lb-throw", "lb-bad", "lb-hang", "lb-busy", "lb-keep"]:
                lb_service(c, name)

            # The rest keeps working.
            wait_for(lambda: all(is_initialized(c.node(n)) for n in good),
                     "the well-answered nodes initialised", timeout=90)
            wait_for(lambda: ingress(c, "lb-ok") and ingress(c, "lb-keep"),
                     "the well-answered load balancers", timeout=90)
            # Each failing object has been tried more than once (the failures were seen).
            wait_for(lambda: all(calls(scraper.metrics(), "metadata", n) >= 2 for n in bad)
                     and all(calls(scraper.metrics(), "ensureLoadBalancer", "default/" + s) >= 2
                             for s in ["lb-throw", "lb-bad", "lb-busy"]),
                     "retries of the failing objects", timeout=90)
            for n in bad:
                self.assertFalse(is_initialized(c.node(n)), n)
            for s in ["lb-throw", "lb-bad", "lb-hang", "lb-busy"]:
                self.assertEqual(ingress(c, s), [], s)
            samples = scraper.metrics()
            violations = {k: metric_sum(samples, "ccm_provider_contract_violations_total",
                                        kind=k)
                          for k in ("exception", "invalid_output", "stale_call_id",
                                    "ignored_deadline")}
            print("violations %s" % violations, flush=True)
            self.assertGreater(violations["exception"], 0)
            self.assertGreater(violations["invalid_output"], 0)
            wait_for(lambda: metric_sum(scraper.metrics(),
                                        "ccm_provider_contract_violations_total",
                                        kind="stale_call_id") > 0,
                     "the stray emit counted")
            self.assertIn("did not return within", ccm.output())

            # Back-off: in a 20 s window the failing node is asked about at most 15 times
            # (5 ms doubling per item: about log2(20 s / 5 ms) + 1 = 13, plus kubelet
            # status updates); the failing load balancer at most 4 times (5 s doubling:
            # 0, 5, 15 s). A hot loop would be thousands.
            before = scraper.metrics()
            time.sleep(20)
            after = scraper.metrics()
            node_calls = calls(after, "metadata", "throw-00002") - \
                calls(before, "metadata", "throw-00002")
            lb_calls = calls(after, "ensureLoadBalancer", "default/lb-throw") - \
                calls(before, "ensureLoadBalancer", "default/lb-throw")
            print("calls in 20 s: node %d, load balancer %d" % (node_calls, lb_calls))
            self.assertLessEqual(node_calls, 15)
            self.assertLessEqual(lb_calls, 4)

            # Uncertain existence never deletes: NotReady nodes whose exists call answers
            # UNKNOWN, throws, is malformed, fails or hangs stay; the control node whose VM
            # is really gone (NOT_FOUND) is deleted.
            chaos.set([
                {"op": "exists", "object": "u-00012", "action": "unknown"},
                {"op": "exists", "object": "stray-00006", "action": "throw"},
                {"op": "exists", "object": "m-00008", "action": "malformed"},
                {"op": "exists", "object": "e-00009", "action": "error", "code": 14},
                {"op": "exists", "object": "h-00010", "action": "hang", "hangMs": 4000},
                {"op": "exists", "object": "good-00007", "action": "error", "code": 5},
            ])
            doubtful = ["u-00012", "stray-00006", "m-00008", "e-00009", "h-00010",
                        "good-00007"]
            c.set_ready(doubtful + ["gone-00011"], "False")
            wait_for(lambda: not c.node_exists("gone-00011"), "the gone VM's node deleted",
                     timeout=60)
            wait_for(lambda: all(calls(scraper.metrics(), "exists", n) >= 4 for n in doubtful),
                     "several monitor passes over the doubtful nodes", timeout=90)
            for n in doubtful:
                self.assertTrue(c.node_exists(n), "%s deleted on an uncertain answer" % n)

            # Load balancers: an existing one whose get/ensure/delete answers are uncertain
            # is neither deleted nor duplicated, and converges once the provider recovers.
            chaos.set([
                {"op": "getLoadBalancer", "object": "default/lb-keep", "action": "malformed"},
                {"op": "ensureLoadBalancer", "object": "default/lb-keep", "action": "throw"},
                {"op": "deleteLoadBalancer", "object": "default/lb-keep", "action": "error"},
            ])
            c.api.patch("/api/v1/namespaces/default/services/lb-keep",
                        {"spec": {"ports": [{"name": "p80", "port": 80, "protocol": "TCP"},
                                            {"name": "p81", "port": 81, "protocol": "TCP"}]}},
                        kind="merge-patch")
            wait_for(lambda: calls(scraper.metrics(), "ensureLoadBalancer", "default/lb-keep",
                                   "throw") >= 2, "the failed ensures", timeout=60)
            keep = [lb for lb in c.cloud_state()["loadBalancers"] if lb["service"] == "lb-keep"]
            self.assertEqual(len(keep), 1)
            self.assertEqual(c.cloud_state()["stats"].get("lbDeletes", 0), 0)
            chaos.set([])
            wait_for(lambda: [sorted(p["port"] for p in lb["ports"])
                              for lb in c.cloud_state()["loadBalancers"]
                              if lb["service"] == "lb-keep"] == [[80, 81]],
                     "lb-keep updated once the provider recovered", timeout=60)
            wait_for(lambda: all(ingress(c, s) for s in ["lb-throw", "lb-bad", "lb-busy",
                                                           "lb-hang"]),
                     "the other load balancers once the provider recovered", timeout=120)
            wait_for(lambda: all(is_initialized(c.node(n)) for n in bad),
                     "the other nodes once the provider recovered", timeout=120)
            state = c.cloud_state()
            self.assertEqual(len(state["loadBalancers"]), 6)
            self.assertEqual(state["stats"].get("lbDeletes", 0), 0)
            self.assertTrue(ccm.alive())
            self.assertEqual(ccm.stop(), 0)

    def test_a_crash_in_the_plugin_is_survived_by_a_clean_restart(self):
        with Cluster(nodes=3) as c:
            once = os.path.join(c.tmp, "crashed-once")
            chaos = Chaos(c, autoInstances={"zones": ZONES},
                          loadBalancer={"ipPool": "10.67.0.0/16"})
            # The cloud creates the load balancer, then the plugin kills the process before
            # the host hears about it.
            chaos.set([{"op": "ensureLoadBalancer", "object": "default/crashy",
                        "action": "crashAfter", "onceFile": once}])
            election = ["--leader-elect=true", "--leader-elect-lease-duration=4s",
                        "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"]
            first = chaos.start(election, name="first")
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            lb_service(c, "crashy")
            self.assertEqual(first.proc.wait(timeout=60), -signal.SIGABRT)
            first.stop()
            self.assertTrue(os.path.exists(once))
            self.assertEqual(len(c.cloud_state()["loadBalancers"]), 1, "created before the crash")
            self.assertEqual(ingress(c, "crashy"), [])
            # The restarted process (a new identity) waits for the dead leader's lease,
            # takes over and finishes the job without a second load balancer.
            second = chaos.start(election, name="second")
            wait_for(lambda: ingress(c, "crashy"), "the load balancer after the restart",
                     timeout=90)
            new = c.add_nodes(count=1)[0]
            wait_for(lambda: is_initialized(c.node(new)), "the restarted host initialises nodes")
            state = c.cloud_state()
            self.assertEqual(len(state["loadBalancers"]), 1)
            self.assertEqual(state["stats"]["lbCreates"], 1)
            self.assertEqual(ingress(c, "crashy")[0]["ip"], state["loadBalancers"][0]["ip"])
            self.assertIn("Became leader: starting controllers", second.output())
            self.assertEqual(second.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
