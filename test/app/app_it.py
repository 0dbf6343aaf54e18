#!/usr/bin/env python3
"""cloud-controller-manager as a process: two replicas with leader election (one leader,
takeover after a kill and after SIGTERM), orderly shutdown, lost leadership, bad kubeconfig."""
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from harness import Cluster, free_port, https_get, wait_for, is_initialized  # noqa: E402

ELECTION = ["--leader-elect=true", "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms"]
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cloud-controller-manager"


def holder(c):
    return c.api.get(LEASE)["spec"].get("holderIdentity", "")


class LeaderElectionTest(unittest.TestCase):

    def start_pair(self, c, cloud):
        a = c.start_ccm(cloud, extra=ELECTION, name="replica-a")
        b = c.start_ccm(cloud, extra=ELECTION, name="replica-b")
        return a, b

    def leaders(self, *procs):
        return [p for p in procs if "Became leader: starting controllers" in p.output()]

    def test_one_leader_takeover_after_kill_and_after_sigterm(self):
        with Cluster(nodes=2) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            a, b = self.start_pair(c, cloud)
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            time.sleep(2)
            self.assertEqual(len(self.leaders(a, b)), 1, "exactly one replica leads")
            first = self.leaders(a, b)[0]
            other = b if first is a else a
            self.assertIn(holder(c).split("_")[0], os.uname().nodename)
            # Kill the leader: the other takes over after the lease expires and does the work.
            first.kill()
            wait_for(lambda: self.leaders(other), "takeover after the leader was killed",
                     timeout=30)
            new = c.add_nodes(count=1)[0]
            wait_for(lambda: is_initialized(c.node(new)), "the new leader initialises nodes")
            # A third replica; SIGTERM to the leader releases the lease at once.
            third = c.start_ccm(cloud, extra=ELECTION, name="replica-c")
            time.sleep(1)
            self.assertEqual(self.leaders(third), [])
            self.assertEqual(other.stop(signal.SIGTERM), 0)
            # Released on the way out (not left to expire), so the next replica can take it
            # at its next retry.
            self.assertIn('"Released the leader lease"', other.output())
            wait_for(lambda: self.leaders(third), "takeover after SIGTERM", timeout=30)
            self.assertEqual(third.stop(), 0)

    def test_losing_the_lease_exits_non_zero(self):
        with Cluster(nodes=1) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            p = c.start_ccm(cloud, extra=ELECTION)
            wait_for(lambda: "Became leader" in p.output(), "leadership")
            c.admin("POST", "/faults", {"verb": "update", "path": LEASE, "status": 500,
                                        "count": -1})
            self.assertEqual(p.proc.wait(timeout=30), 1)
            self.assertIn("leaderelection lost", p.output())


class ProcessTest(unittest.TestCase):

    def test_sigterm_and_sigint_stop_in_order(self):
        with Cluster(nodes=1) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            for sig in (signal.SIGTERM, signal.SIGINT):
                p = c.start_ccm(cloud)
                wait_for(lambda: "Started controller" in p.output(), "controllers running")
                self.assertEqual(p.stop(sig), 0)
                self.assertIn("Received signal: shutting down", p.output())
                self.assertIn('"Stopped" exitCode=0', p.output())

    def test_one_health_check_per_running_controller(self):
        """upstream has one health check per controller: /healthz?verbose lists one per
        running controller beside ping, and /healthz/<controller-name> answers alone."""
        with Cluster(nodes=1) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            port = free_port()
            p = c.start_ccm(cloud, extra=["--secure-port=%d" % port, "--bind-address=127.0.0.1",
                                          "--allocate-node-cidrs=true",
                                          "--cluster-cidr=10.244.0.0/16"])
            wait_for(lambda: p.output().count("Started controller") >= 4, "controllers running")
            base = "https://127.0.0.1:%d" % port
            status, body = https_get(base + "/healthz?verbose")
            self.assertEqual(status, 200, body)
            lines = body.splitlines()
            self.assertEqual(lines[0], "[+]ping ok")
            for name in ("node-ipam-controller", "cloud-node-controller",
                         "cloud-node-lifecycle-controller", "service-lb-controller"):
                self.assertIn("[+]%s ok" % name, lines)
            self.assertEqual(lines[-1], "healthz check passed")
            status, body = https_get(base + "/readyz?verbose")
            self.assertIn("[+]cloud-node-controller ok", body.splitlines())
            # One check alone needs authorization (not an always-allowed path).
            status, _ = https_get(base + "/healthz/cloud-node-controller")
            self.assertEqual(status, 403)
            admin = c.admin("POST", "/credentials", {"user": "health-admin",
                                                     "groups": ["system:masters"],
                                                     "type": "token"})["token"]
            status, body = https_get(base + "/healthz/cloud-node-controller", token=admin)
            self.assertEqual((status, body), (200, "ok"))
            status, _ = https_get(base + "/healthz/no-such-controller", token=admin)
            self.assertEqual(status, 404)
            self.assertEqual(p.stop(), 0)

    def test_bad_kubeconfig_is_one_clear_error(self):
        with Cluster() as c:
            cloud = c.fake_cloud()
            args = c.ccm_args(cloud)
            args = [a for a in args if not a.startswith("--kubeconfig")]
            bad = os.path.join(c.tmp, "bad.kubeconfig")
            with open(bad, "w") as f:
                f.write("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n")
            import subprocess
            r = subprocess.run(args + ["--kubeconfig=" + bad], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(r.returncode, 1)
            errors = [l for l in r.stderr.splitlines() if l.startswith("E")]
            self.assertEqual(len(errors), 1, r.stderr)
            self.assertIn(bad, errors[0])
            self.assertIn("nowhere", errors[0])
            r = subprocess.run(args + ["--kubeconfig=/no/such/kubeconfig"], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 1)
            self.assertIn("/no/such/kubeconfig", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
