#!/usr/bin/env python3
"""--provider-isolation=process: the plugin runs in a child process the host supervises.
A crash or hang there never stops the host: calls fail UNAVAILABLE while the child is
restarted, /healthz keeps answering, and work resumes once the provider behaves."""
import os
import re
import signal
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from harness import Cluster, free_port, https_get, wait_for, is_initialized, labels  # noqa: E402
from secret_volume import SecretVolume  # noqa: E402

BUILD = os.environ["CCM_BUILD_DIR"]
KIT = os.path.join(BUILD, "test", "abi", "plugins")
ISOLATED = ["--provider-isolation=process"]


def child_pids(p):
    return [int(x) for x in re.findall(r'"Started the provider process" pid=(\d+)', p.output())]


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def parent_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def node_view(node):
    """What the cloud node controller wrote, without what differs between runs."""
    meta = node["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items()}
    return {"providerID": node["spec"].get("providerID"),
            "labels": labels,
            "addresses": sorted((a["type"], a["address"])
                                for a in node.get("status", {}).get("addresses", [])),
            "initialized": is_initialized(node)}


class IsolationTest(unittest.TestCase):

    def run_fake_cloud(self, extra):
        with Cluster(nodes=3) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["zone-a", "zone-b"]})
            p = c.start_ccm(cloud, extra=extra)
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            views = {n["metadata"]["name"]: node_view(n) for n in c.nodes()}
            pids = child_pids(p)
            if extra:
                self.assertEqual(len(pids), 1, p.output())
                self.assertEqual(parent_of(pids[0]), p.proc.pid)
            self.assertEqual(p.stop(), 0)
            for pid in pids:
                self.assertFalse(alive(pid), "the provider process outlives the host")
            return views, p.output()

    def test_fake_cloud_initialises_nodes_as_in_process(self):
        in_process, _ = self.run_fake_cloud([])
        isolated, output = self.run_fake_cloud(ISOLATED)
        self.assertEqual(isolated, in_process)
        self.assertIn('"The provider process stopped"', output)

    def test_crash_is_contained_and_the_child_restarted(self):
        with Cluster(nodes=1) as c:
            marker = os.path.join(c.tmp, "crash-now")
            open(marker, "w").close()
            cloud = c.fake_cloud()
            port = free_port()
            p = c.start_ccm(cloud, provider="crashes-while-marked", plugin_dir=KIT,
                            extra=ISOLATED + ["--secure-port=%d" % port,
                                              "--bind-address=127.0.0.1",
                                              "--authorization-always-allow-paths="
                                              "/healthz,/readyz,/metrics"],
                            env={"CCM_KIT_CRASH_MARKER": marker})
            base = "https://127.0.0.1:%d" % port
            wait_for(lambda: 'provider "crashes-while-marked" crashed in ccm.instances/1 '
                     'instance_metadata' in p.output(), "the crash line", timeout=60)
            wait_for(lambda: '"The provider process exited"' in p.output(), "the exit line")
            wait_for(lambda: '"Restarting the provider process after a back-off"' in p.output(),
                     "a restart")
            self.assertTrue(p.alive())
            status, body = https_get(base + "/healthz")
            self.assertEqual(status, 200, body)
            check = "provider-crashes-while-marked"
            wait_for(lambda: "[-]%s failed" % check in https_get(base + "/readyz?verbose")[1],
                     "the provider check to report the dead child")
            self.assertNotIn("[+]%s ok" % check, https_get(base + "/readyz?verbose")[1])
            self.assertFalse(is_initialized(c.nodes()[0]))
            # The provider behaves again: the next child serves and the node is initialised.
            os.unlink(marker)
            wait_for(lambda: is_initialized(c.nodes()[0]), "initialisation after recovery",
                     timeout=120)
            self.assertEqual(c.nodes()[0]["spec"].get("providerID"), "broken://vm-1")
            wait_for(lambda: "[+]%s ok" % check in https_get(base + "/readyz?verbose")[1],
                     "the provider check to pass again")
            pids = child_pids(p)
            self.assertGreaterEqual(len(pids), 2)
            # The host's metrics, then the child's (the adapter's, fetched on the scrape).
            status, metrics = https_get(base + "/metrics")
            self.assertEqual(status, 200, metrics)
            self.assertIn('ccm_provider_process_up{provider="crashes-while-marked"} 1', metrics)
            restarts = re.search(r'^ccm_provider_process_restarts_total'
                                 r'\{provider="crashes-while-marked"\} (\S+)$', metrics, re.M)
            self.assertGreaterEqual(float(restarts.group(1)), 1)
            self.assertRegex(metrics, r'ccm_provider_calls_total\{provider="crashes-while-marked",'
                             r'[^}]*call="instance_metadata[^}]*code="OK"\} [1-9]')
            # The child's families are described once, merged with the host's.
            self.assertEqual(metrics.count("# TYPE ccm_provider_calls_total "), 1)
            self.assertEqual(p.stop(), 0)
            for pid in pids:
                self.assertFalse(alive(pid))

    def test_stopped_child_is_killed_and_restarted(self):
        """A child that stops answering (here: SIGSTOP) is killed after its calls' bound."""
        with Cluster(nodes=1) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            p = c.start_ccm(cloud, extra=ISOLATED + ["--cloud-provider-call-timeout=1s"])
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            first = child_pids(p)[0]
            os.kill(first, signal.SIGSTOP)
            new = c.add_nodes(count=1)[0]
            wait_for(lambda: '"Killing the provider process"' in p.output(), "the hang kill",
                     timeout=90)
            self.assertIn("did not answer", p.output())
            wait_for(lambda: is_initialized(c.node(new)), "initialisation by the new child",
                     timeout=90)
            self.assertGreaterEqual(len(child_pids(p)), 2)
            self.assertFalse(alive(first))
            self.assertEqual(p.stop(), 0)

    def test_reconfigure_reaches_the_child_and_a_restart_keeps_it(self):
        """A changed --cloud-config is applied in the child; a child restarted later is
        created with the last configuration the provider accepted, not a refused one."""
        region = "topology.kubernetes.io/region"
        with Cluster(nodes=1) as c:
            vol = SecretVolume(c.tmp)
            vol.publish({"region": "r1", "autoInstances": {"zones": ["z"]}})
            p = c.start_ccm(vol.path, extra=ISOLATED + ["--cloud-config-reload-period=100ms"])
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            self.assertEqual(labels(c.nodes()[0])[region], "r1")
            vol.publish({"region": "r2", "autoInstances": {"zones": ["z"]}})
            wait_for(lambda: '"Provider reconfigured from the changed cloud config"' in
                     p.output(), "the reconfigure")
            vol.publish({"regoin": "r3", "autoInstances": {"zones": ["z"]}})
            wait_for(lambda: "Provider refused the changed cloud config" in p.output(),
                     "the refusal")
            os.kill(child_pids(p)[0], signal.SIGKILL)
            wait_for(lambda: p.output().count('"The provider process serves calls"') >= 2,
                     "the restarted child", timeout=60)
            new = c.add_nodes(count=1)[0]
            wait_for(lambda: is_initialized(c.node(new)), "the node after the restart")
            self.assertEqual(labels(c.node(new))[region], "r2")
            self.assertEqual(p.stop(), 0)

    def test_host_killed_takes_the_child_with_it(self):
        with Cluster(nodes=1) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            p = c.start_ccm(cloud, extra=ISOLATED)
            wait_for(lambda: child_pids(p), "the child")
            child = child_pids(p)[0]
            p.kill()
            wait_for(lambda: not alive(child), "the child to die with its parent", timeout=30)

    def test_start_up_failure_reported_as_in_process(self):
        with Cluster(nodes=0) as c:
            cloud = c.fake_cloud()
            outputs = []
            for extra in ([], ISOLATED):
                p = c.start_ccm(cloud, provider="refuses-config", plugin_dir=KIT, extra=extra)
                self.assertEqual(p.proc.wait(timeout=60), 1)
                line = [x for x in p.output().splitlines()
                        if '"Cannot create the cloud provider"' in x]
                self.assertEqual(len(line), 1, p.output())
                outputs.append(re.sub(r"^\S+ \S+ +\d+ ", "", line[0]))
            self.assertEqual(outputs[0].split('"Cannot create')[1],
                             outputs[1].split('"Cannot create')[1])


if __name__ == "__main__":
    unittest.main(verbosity=2)
