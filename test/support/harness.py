"""Integration test harness: a kubesim API server, the real cloud-controller-manager binary
and a fake-cloud description, all on 127.0.0.1, started and stopped by the test.

    with Cluster(nodes=5) as c:                 # kubesim with 5 simulated kubelets
        cloud = c.fake_cloud(auto_instances={"zones": ["a", "b"]})
        ccm = c.start_ccm(cloud)
        c.wait_for(lambda: all_initialized(c.nodes()), "nodes initialised")

Another provider (default: fake-cloud) is chosen per process:

    ccm = c.start_ccm("/path/cloud.conf", provider="openstack",
                      env={"OS_CCM_REGIONAL": "true"})   # env: added to the test's own

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import json
import os
import shlex
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

BUILD = os.environ.get("CCM_BUILD_DIR", "")
SOURCE = os.environ.get("CCM_SOURCE_DIR", "")
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
SHUTDOWN_TAINT = "node.cloudprovider.kubernetes.io/shutdown"


def free_port():
    """A TCP port free on 127.0.0.1 right now (the caller binds it soon after)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def https_get(url, token=None, ca_pem=None):
    """GET over TLS without verifying (test servers use self-signed certificates unless
    ca_pem is given). Returns (status, body)."""
    ctx = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl._create_unverified_context()
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def wait_for(predicate, what, timeout=60.0, interval=0.1):
    """Polls predicate until it returns a truthy value; fails the test with `what`."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except AssertionError:
            raise
        except Exception as e:  # a transient API error while the system settles
            last_error = e
        time.sleep(interval)
    raise AssertionError("timed out after %.0fs waiting for %s%s" %
                         (timeout, what, "" if last_error is None else " (last error: %r)" % last_error))


class ApiError(Exception):
    def __init__(self, code, body):
        super().__init__("HTTP %d: %s" % (code, body[:500]))
        self.code = code
        self.body = body


class Api:
    """A small HTTPS JSON client for the Kubernetes API (kubesim)."""

    def __init__(self, url, ca_file, token):
        self.url = url
        self.token = token
        self.ctx = ssl.create_default_context(cafile=ca_file)

    def request(self, method, path, body=None, content_type="application/json", token=None):
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        tok = self.token if token is None else token
        if tok:
            req.add_header("Authorization", "Bearer " + tok)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
                text = r.read().decode()
                return json.loads(text) if text and text[0] in "{[" else text
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, e.read().decode(errors="replace")) from None

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        return self.request("POST", path, body)

    def delete(self, path):
        return self.request("DELETE", path)

    def patch(self, path, body, kind="strategic-merge-patch"):
        return self.request("PATCH", path, body, content_type="application/%s+json" % kind)


class Ccm:
    """One cloud-controller-manager process."""

    def __init__(self, args, log_path, env=None):
        self.args = args
        self.log_path = log_path
        self.log = open(log_path, "ab")
        full_env = None if env is None else dict(os.environ, **env)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=full_env)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("cloud-controller-manager did not exit %ds after %s" %
                                     (timeout, signal.Signals(sig).name))
        self.log.close()
        return self.proc.returncode

    def kill(self):
        return self.stop(signal.SIGKILL)

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")


class Cluster:
    """kubesim plus helpers to run cloud-controller-manager against it."""

    def __init__(self, nodes=0, kubesim_args=(), keep=False):
        self.tmp = tempfile.mkdtemp(prefix="ccm-it-")
        os.chmod(self.tmp, 0o755)
        self.keep = keep or os.environ.get("CCM_KEEP_TEST_DIRS") == "1"
        self.nodes_at_start = nodes
        # CCM_KUBESIM_ARGS (shell words) is added to every kubesim, e.g.
        # --server-version=v1.26.0 to run a test against the oldest emulated version.
        self.kubesim_args = list(kubesim_args) + shlex.split(
            os.environ.get("CCM_KUBESIM_ARGS", ""))
        self.processes = []
        self.kubesim = None

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self):
        self.start_kubesim()
        return self

    def __exit__(self, *exc):
        for p in reversed(self.processes):
            try:
                p.stop(signal.SIGKILL)
            except Exception:
                pass
        self.stop_kubesim()
        if exc[0] is not None:
            for p in self.processes:
                print("---- %s (%s) ----" % (os.path.basename(p.log_path), " ".join(p.args[:2])))
                print(p.output()[-6000:])
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def start_kubesim(self):
        ready = os.path.join(self.tmp, "kubesim.ready")
        if os.path.exists(ready):
            os.unlink(ready)
        args = [os.path.join(BUILD, "kubesim", "kubesim"),
                "--cert-dir=" + os.path.join(self.tmp, "certs"),
                "--ready-file=" + ready,
                "--kubeconfig-out=" + os.path.join(self.tmp, "admin.kubeconfig"),
                "--nodes=%d" % self.nodes_at_start] + self.kubesim_args
        self.kubesim_log = open(os.path.join(self.tmp, "kubesim.log"), "ab")
        self.kubesim = subprocess.Popen(args, stdout=self.kubesim_log, stderr=subprocess.STDOUT)
        wait_for(lambda: os.path.exists(ready) or self.kubesim.poll() is not None,
                 "kubesim to start", timeout=30)
        if self.kubesim.poll() is not None:
            raise AssertionError("kubesim exited: see %s" % self.kubesim_log.name)
        with open(ready) as f:
            info = json.load(f)
        self.url = info["url"]
        self.port = info["port"]
        self.kubeconfig = info["kubeconfig"]
        certs = info["certDir"]
        self.ca_file = os.path.join(certs, "ca.crt")
        with open(os.path.join(certs, "admin.token")) as f:
            self.api = Api(self.url, self.ca_file, f.read().strip())

    def stop_kubesim(self):
        if self.kubesim and self.kubesim.poll() is None:
            self.kubesim.terminate()
            try:
                self.kubesim.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kubesim.kill()
                self.kubesim.wait()
        if self.kubesim:
            self.kubesim_log.close()

    # -- fake cloud ---------------------------------------------------------------------------

    def fake_cloud(self, state_file=True, **world):
        """Writes a fake-cloud config (a cloudFile re-read on change) and returns its path.
        Keyword arguments become top-level keys (camelCase is kept as given)."""
        path = os.path.join(self.tmp, "cloud.json")
        config = dict(world)
        config["cloudFile"] = path
        if state_file:
            config["stateFile"] = os.path.join(self.tmp, "cloud-state.json")
        self.write_cloud(config, path)
        self.cloud_path = path
        self.cloud_config = config
        return path

    def write_cloud(self, config, path=None):
        path = path or self.cloud_path
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(config, f)
        os.rename(tmp, path)

    def update_cloud(self, **changes):
        """Changes the running fake cloud (it re-reads the file within ~100 ms)."""
        self.cloud_config.update(changes)
        # Different mtime even within the same clock tick.
        time.sleep(0.02)
        self.write_cloud(self.cloud_config)

    def cloud_state(self):
        """The fake cloud's state file; each load balancer's "nodes" filled in from the
        shared "nodeSets" the file writes each distinct list of backends in once."""
        path = self.cloud_config.get("stateFile")
        if not path or not os.path.exists(path):
            return {"loadBalancers": [], "routes": [], "stats": {}}
        with open(path) as f:
            state = json.load(f)
        sets = state.get("nodeSets", [])
        for lb in state.get("loadBalancers", []):
            if "nodes" not in lb:
                i = lb.get("nodeSet", -1)
                lb["nodes"] = list(sets[i]) if 0 <= i < len(sets) else []
        return state

    # -- cloud-controller-manager ---------------------------------------------------------------

    def ccm_args(self, cloud_config, extra=(), provider="fake-cloud", plugin_dir=None):
        """The command line; `provider` names the plugin (<plugin_dir>/<provider>.so, the
        build's plugins/ folder by default). Flags in `extra` come last, so they override
        the defaults here (e.g. --configure-cloud-routes=true)."""
        return [os.path.join(BUILD, "host", "cloud-controller-manager"),
                "--cloud-provider=" + provider,
                "--cloud-provider-plugin-dir=" + (plugin_dir or os.path.join(BUILD, "plugins")),
                "--cloud-config=" + cloud_config,
                "--kubeconfig=" + self.kubeconfig,
                "--secure-port=0",
                "--leader-elect=false",
                "--configure-cloud-routes=false",
                "-v=2"] + list(extra)

    def start_ccm(self, cloud_config, extra=(), name=None, provider="fake-cloud",
                  plugin_dir=None, env=None):
        """Starts a cloud-controller-manager; `env` entries are added to this process's
        environment."""
        name = name or "ccm-%d" % len(self.processes)
        p = Ccm(self.ccm_args(cloud_config, extra, provider, plugin_dir),
                os.path.join(self.tmp, name + ".log"), env)
        self.processes.append(p)
        return p

    # -- API shortcuts ----------------------------------------------------------------------------

    def nodes(self):
        return self.api.get("/api/v1/nodes")["items"]

    def node(self, name):
        return self.api.get("/api/v1/nodes/" + name)

    def node_exists(self, name):
        try:
            self.node(name)
            return True
        except ApiError as e:
            if e.code == 404:
                return False
            raise

    def admin(self, method, path, body=None):
        return self.api.request(method, "/admin" + path, body)

    # Nodes per admin request: registering 100,000 at once takes kubesim longer than one
    # request's 30 s timeout on a loaded machine; each chunk stays well within it.
    ADD_NODES_CHUNK = 5000

    def add_nodes(self, count=None, names=None, ready=None, labels=None):
        """Registers kubelets' Nodes; named ones may carry `labels` from creation (a kubelet's
        --node-labels)."""
        added = []
        while True:
            if names is None:
                n = min(count, self.ADD_NODES_CHUNK)
                body = {"count": n}
                count -= n
            else:
                body = {"names": names[:self.ADD_NODES_CHUNK]}
                names = names[self.ADD_NODES_CHUNK:]
                if labels:
                    body["labels"] = labels
            if ready is not None:
                body["ready"] = ready
            added += self.admin("POST", "/nodes", body)["names"]
            if (names is None and count <= 0) or (names is not None and not names):
                return added

    def set_ready(self, names, status):
        return self.admin("POST", "/nodes/ready", {"names": list(names), "status": status})

    def user_token(self, user, groups=()):
        """Mints a bearer token for a plain user (not system:masters)."""
        return self.admin("POST", "/credentials", {"user": user, "groups": list(groups),
                                                   "type": "token"})["token"]

    def events(self, reason=None, namespace="default"):
        items = self.api.get("/api/v1/namespaces/%s/events" % namespace)["items"]
        return [e for e in items if reason is None or e.get("reason") == reason]


def taint_keys(node):
    return [t["key"] for t in node.get("spec", {}).get("taints", []) or []]


def is_initialized(node):
    return UNINITIALIZED not in taint_keys(node)


def labels(node):
    return node["metadata"].get("labels", {}) or {}
