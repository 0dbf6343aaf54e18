#!/usr/bin/env python3
"""docs/ stays true: every flag the binary accepts, every metric a running process exposes and
every event reason the controllers record is documented in docs/operations.md; relative links
in docs/ point at files that exist. Also: /metrics through the real binary needs a token the
API server approves (TokenReview + SubjectAccessReview)."""
import os
import re
import subprocess
import sys
import unittest

SOURCE = os.environ["CCM_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "test", "support"))
from harness import Cluster, wait_for, is_initialized, free_port, https_get  # noqa: E402

BINARY = os.path.join(os.environ["CCM_BUILD_DIR"], "host", "cloud-controller-manager")
def read(path):
    with open(path) as f:
        return f.read()


OPERATIONS = read(os.path.join(SOURCE, "docs", "operations.md"))

# A backticked word is taken for a path in the repository when it has a slash and names a file
# by one of these endings (or is a folder of the tree, ending in "/").
PATH_ENDINGS = (".md", ".cpp", ".hpp", ".h", ".c", ".py", ".build", ".txt", ".yaml", ".yml",
                ".json", ".in", ".sh", ".rs", ".toml", ".cmake", ".pc", ".conf")
TOP_LEVEL = sorted(e for e in os.listdir(SOURCE) if not e.startswith((".", "build")))
# Written by a run, not kept in the tree; "./x" is a path relative to where a command runs.
NOT_IN_TREE = ("build", "bench/out/", "./", "/", "~", "http")


def paths_in_text(doc, text):
    """(doc, path) for every backticked word of text that reads as a repository path."""
    for word in re.findall(r"`([^`\n]+)`", text):
        word = word.strip().rstrip(":,.")
        if (" " in word or "/" not in word or word.startswith(NOT_IN_TREE) or
                any(c in word for c in "<>*{}$=%?|&;()[]\\") or ":" in word):
            continue
        if word.endswith(".hpp/.cpp"):  # a header and its source: both must be there
            yield doc, word[:-len("/.cpp")]
            yield doc, word[:-len(".hpp/.cpp")] + ".cpp"
        elif word.endswith(PATH_ENDINGS) or (word.endswith("/") and word.split("/")[0] in TOP_LEVEL):
            yield doc, word


def backticked_paths():
    """Every repository path written in backticks in the project's Markdown files."""
    for root, dirs, files in os.walk(SOURCE):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d != "out"]
        for f in files:
            if f.endswith(".md"):
                doc = os.path.relpath(os.path.join(root, f), SOURCE)
                yield from paths_in_text(doc, read(os.path.join(root, f)))


def path_exists(doc, path):
    """A path resolves from the repository root, from the document's folder, (for the SDK's
    headers, as they are included) from plugin-sdk/include, or (a file the build generates,
    such as host/runtime/version.hpp) from the build directory."""
    bases = [SOURCE, os.path.join(SOURCE, os.path.dirname(doc)),
             os.path.join(SOURCE, "plugin-sdk", "include"), os.environ["CCM_BUILD_DIR"]]
    return any(os.path.exists(os.path.normpath(os.path.join(b, path))) for b in bases)


class DocsTest(unittest.TestCase):

    def test_every_flag_is_documented(self):
        out = subprocess.run([BINARY, "--help"], capture_output=True, text=True).stdout
        flags = sorted(set(re.findall(r"--([a-z0-9-]+)", out)))
        self.assertGreater(len(flags), 60)
        missing = [f for f in flags if "`--%s`" % f not in OPERATIONS and
                   "--%s`" % f not in OPERATIONS and "`--%s " % f not in OPERATIONS]
        self.assertEqual(missing, [], "flags missing from docs/operations.md")

    def test_every_event_reason_is_documented(self):
        reasons = set()
        for root, _, files in os.walk(os.path.join(SOURCE, "host")):
            for f in files:
                if f.endswith(".cpp"):
                    text = read(os.path.join(root, f))
                    reasons |= set(re.findall(r'EventType::(?:Normal|Warning),\s*"(\w+)"', text))
        self.assertGreater(len(reasons), 10)
        missing = sorted(r for r in reasons if "`%s`" % r not in OPERATIONS)
        self.assertEqual(missing, [], "event reasons missing from docs/operations.md")

    def test_relative_links_resolve(self):
        broken = []
        for root, _, files in os.walk(os.path.join(SOURCE, "docs")):
            for f in files:
                if not f.endswith(".md"):
                    continue
                path = os.path.join(root, f)
                text = re.sub(r"```.*?```", "", read(path), flags=re.S)  # code is not prose
                text = re.sub(r"`[^`]*`", "", text)
                for link in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
                    if not os.path.exists(os.path.normpath(os.path.join(root, link))):
                        broken.append("%s -> %s" % (os.path.relpath(path, SOURCE), link))
        self.assertEqual(broken, [])

    def test_backticked_paths_exist(self):
        broken = [f"{doc} -> {path}" for doc, path in backticked_paths() if not path_exists(doc, path)]
        self.assertEqual(broken, [], "paths written in backticks that are not in the repository")

    def test_the_path_check_can_fail(self):
        # The check above must notice a path that is not there, and accept one that is.
        self.assertFalse(path_exists("docs/architecture.md", "design/abi-rules.md"))
        self.assertTrue(path_exists("docs/architecture.md", "host/kube/api/kube_api.hpp"))
        self.assertTrue(path_exists("docs/architecture.md", "ccm/provider_abi.h"))
        self.assertIn(("x.md", "design/abi-rules.md"),
                      list(paths_in_text("x.md", "see `design/abi-rules.md` and `a b/c.md`")))

    def test_metrics_need_an_approved_token_and_are_all_documented(self):
        port = free_port()
        with Cluster(nodes=3) as c:
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            ccm = c.start_ccm(cloud, extra=[
                "--secure-port=%d" % port, "--bind-address=127.0.0.1",
                "--allocate-node-cidrs", "--cluster-cidr=10.244.0.0/16",
                "--configure-cloud-routes=true", "--leader-elect=true",
                "--node-monitor-period=1s"])
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            c.api.post("/api/v1/namespaces/default/services", {
                "metadata": {"name": "web"},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})
            # A VM vanishes so the lifecycle metrics appear too.
            victim = c.nodes()[0]["metadata"]["name"]
            c.update_cloud(instances=[{"name": victim, "state": "absent"}])
            c.set_ready([victim], "False")
            wait_for(lambda: not c.node_exists(victim), "the vanished node deleted")
            url = "https://127.0.0.1:%d/metrics" % port
            # Health is open; metrics are not.
            self.assertEqual(https_get("https://127.0.0.1:%d/healthz" % port)[0], 200)
            self.assertEqual(https_get(url)[0], 403)                       # anonymous
            self.assertEqual(https_get(url, token="not-a-token")[0], 401)  # rejected token
            nosy = c.user_token("nosy")
            self.assertEqual(https_get(url, token=nosy)[0], 403)           # not allowed
            c.api.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
                "metadata": {"name": "metrics-reader"},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
            c.api.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                "metadata": {"name": "prometheus-metrics"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "metrics-reader"},
                "subjects": [{"kind": "User", "name": "prometheus",
                              "apiGroup": "rbac.authorization.k8s.io"}]})
            scraper = c.user_token("prometheus")
            status, body = wait_for(
                lambda: (lambda r: r if r[0] == 200 else None)(https_get(url, token=scraper)),
                "an approved scrape")
            families = sorted(set(re.findall(r"^# TYPE (\S+)", body, re.M)))
            self.assertIn("node_controller_initial_node_sync_delay_seconds", families)
            self.assertIn("ccm_node_deletions_total", families)
            self.assertIn('leader_election_master_status{name="cloud-controller-manager"} 1', body)
            missing = [f for f in families
                       if not f.startswith("ccm_provider_fake_cloud_") and
                       "`%s`" % f not in OPERATIONS]
            self.assertEqual(missing, [], "metrics missing from docs/operations.md")
            self.assertEqual(ccm.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
