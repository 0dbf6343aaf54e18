"""Shared helpers of the reliability and security tests (test/reliability/, test/security/):
scraping the host's /metrics, reading klog timestamps, a TLS-terminating recording proxy
between one replica and kubesim (to partition that replica and to attribute its requests),
kubesim fault rules and request counting.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import datetime
import os
import re
import select
import socket
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get("CCM_SOURCE_DIR", ""), "test", "support"))
from harness import BUILD, Cluster, free_port, https_get, wait_for  # noqa: E402,F401

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cloud-controller-manager"
MUTATING = ("POST", "PUT", "PATCH", "DELETE")


# ---- metrics ---------------------------------------------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Prometheus text -> list of (name, {labels}, value)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = dict(LABEL.findall(m.group(2) or ""))
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out.append((m.group(1), labels, value))
    return out


def metric_sum(samples, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    return sum(v for n, l, v in samples
               if n == name and all(l.get(k) == str(w) for k, w in labels.items()))


class Scraper:
    """GETs the host's /metrics and health endpoints with the admin token (system:masters)."""

    def __init__(self, cluster, port):
        self.cluster = cluster
        self.port = port

    def url(self, path):
        return "https://127.0.0.1:%d%s" % (self.port, path)

    def metrics(self):
        status, body = https_get(self.url("/metrics"), token=self.cluster.api.token)
        if status != 200:
            raise AssertionError("GET /metrics: %d %s" % (status, body[:300]))
        return parse_metrics(body)

    def health(self, path):
        return https_get(self.url(path))


def secure_args(port):
    return ["--secure-port=%d" % port, "--bind-address=127.0.0.1"]


# ---- logs ------------------------------------------------------------------------------------

KLOG = re.compile(r'^([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})\s+\d+ [^\]]+\] "(.*?)"(.*)$')


def log_lines(text):
    """klog text lines -> list of (datetime, level, message, rest)."""
    year = datetime.datetime.now().year
    out = []
    for line in text.splitlines():
        m = KLOG.match(line)
        if not m:
            continue
        lvl, mo, d, hh, mm, ss, us, msg, rest = m.groups()
        ts = datetime.datetime(year, int(mo), int(d), int(hh), int(mm), int(ss), int(us))
        out.append((ts, lvl, msg, rest))
    return out


def first_time(text, message):
    for ts, _, msg, _ in log_lines(text):
        if msg == message:
            return ts
    return None


def times_of(text, message):
    return [ts for ts, _, msg, _ in log_lines(text) if msg == message]


# ---- kubesim ---------------------------------------------------------------------------------

def add_fault(cluster, **rule):
    return cluster.admin("POST", "/faults", rule)["id"]


def fault_fired(cluster, fault_id):
    for f in cluster.admin("GET", "/faults").get("faults", []):
        if f.get("id") == fault_id:
            return f.get("fired", 0)
    return 0


def clear_faults(cluster):
    cluster.admin("DELETE", "/faults")


def ccm_kubeconfig(cluster, path, user, server=None, token_file=None, ca_pem=True,
                   groups=("system:masters",)):
    """Writes a kubeconfig for a new token of `user` and returns the token. `server`
    replaces kubesim's URL (a proxy); with `token_file` the token is written there and the
    kubeconfig names the file (tokenFile); `ca_pem` is the CA bundle to trust (True:
    kubesim's; None: none, so the system trust store applies)."""
    out = cluster.admin("POST", "/credentials", {"user": user, "groups": list(groups),
                                                 "type": "token"})
    token = out["token"]
    if ca_pem is True:
        with open(cluster.ca_file) as f:
            ca_pem = f.read()
    import base64
    ca_line = ""
    if ca_pem:
        ca_line = "    certificate-authority-data: %s\n" % base64.b64encode(
            ca_pem.encode()).decode()
    user_entry = ("    tokenFile: %s\n" % token_file) if token_file else ("    token: %s\n" % token)
    if token_file:
        with open(token_file, "w") as f:
            f.write(token)
    with open(path, "w") as f:
        f.write("""apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster:
    server: %s
%scontexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
%s""" % (server or cluster.url, ca_line, user_entry))
    os.chmod(path, 0o600)
    return token


# ---- a recording, partitionable proxy --------------------------------------------------------

class Proxy:
    """A TLS-terminating proxy on 127.0.0.1 in front of kubesim for one client. It serves
    kubesim's own certificate (so the client's kubeconfig keeps kubesim's CA), opens its own
    TLS connection to kubesim per client connection, and records the request line of every
    HTTP/1.1 request with the (wall) time it arrived.

    partition(): from then on nothing is forwarded in either direction and new connections
    are accepted but never answered (a black hole, as a network partition looks to the
    client); heal() resumes forwarding for new connections (held ones are closed)."""

    def __init__(self, cluster, name="proxy"):
        self.cluster = cluster
        self.name = name
        certs = os.path.dirname(cluster.ca_file)
        self.server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_ctx.load_cert_chain(os.path.join(certs, "server.crt"),
                                        os.path.join(certs, "server.key"))
        self.server_ctx.set_alpn_protocols(["http/1.1"])
        self.client_ctx = ssl.create_default_context(cafile=cluster.ca_file)
        self.client_ctx.set_alpn_protocols(["http/1.1"])
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = "https://127.0.0.1:%d" % self.port
        self.lock = threading.Lock()
        self.requests = []  # (wall time, method, path)
        self.partitioned = False
        self.held = []
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def partition(self):
        with self.lock:
            self.partitioned = True

    def heal(self):
        with self.lock:
            self.partitioned = False
            held, self.held = self.held, []
        for s in held:
            try:
                s.close()
            except OSError:
                pass

    def stop(self):
        self.stopped = True
        self.sock.close()
        self.heal()

    def records(self, since=0.0):
        """(wall time, method, path) of every request that reached kubesim through here,
        oldest first (wall time: comparable with the host's klog timestamps)."""
        with self.lock:
            return [r for r in self.requests if r[0] >= since]

    def _accept(self):
        while not self.stopped:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _hold(self, s):
        with self.lock:
            if self.partitioned:
                self.held.append(s)
                return True
        return False

    def _serve(self, raw):
        if self._hold(raw):
            return
        try:
            down = self.server_ctx.wrap_socket(raw, server_side=True)
            up = self.client_ctx.wrap_socket(
                socket.create_connection(("127.0.0.1", self.cluster.port), timeout=30),
                server_hostname="127.0.0.1")
        except (OSError, ssl.SSLError):
            raw.close()
            return
        down.settimeout(None)
        up.settimeout(None)
        parser = _RequestParser(self)
        socks = [down, up]
        try:
            while not self.stopped:
                with self.lock:
                    cut = self.partitioned
                if cut:
                    # Hold the connection open but silent until heal() closes it.
                    with self.lock:
                        self.held.extend([down, up])
                    return
                readable, _, _ = select.select(socks, [], [], 0.2)
                for s in readable:
                    # Everything TLS has decrypted: it may hold more than select saw, or
                    # nothing at all (below).
                    data = _read_available(s)
                    if not data:
                        continue
                    with self.lock:
                        if self.partitioned:
                            continue  # dropped on the floor, as a partition would
                    if s is down:
                        parser.feed(data)
                        up.sendall(data)
                    else:
                        down.sendall(data)
        except (OSError, ssl.SSLError, EOFError):
            pass
        for s in socks:
            try:
                s.close()
            except OSError:
                pass


def _read_available(s):
    """The application data TLS socket `s` has now, b"" when a readable socket carried only
    TLS records without any (a TLS 1.3 server sends its session tickets after the handshake).
    A blocking read there would wait for data that only comes once this proxy has forwarded
    the request it is not reading: the proxy once stalled connections that way for the whole
    request timeout, seen as a replica stuck in a list or a node initialisation. Raises
    EOFError when the peer closed."""
    s.settimeout(0.0)
    chunks = []
    try:
        while True:
            try:
                data = s.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError):
                break
            if not data:
                if chunks:
                    break
                raise EOFError
            chunks.append(data)
    finally:
        s.settimeout(None)
    return b"".join(chunks)


class _RequestParser:
    """Splits a client's HTTP/1.1 byte stream into requests (Content-Length or chunked
    bodies) and records each request line."""

    def __init__(self, proxy):
        self.proxy = proxy
        self.buf = b""
        self.body_left = 0
        self.chunked = False

    def feed(self, data):
        self.buf += data
        while True:
            if self.body_left:
                n = min(self.body_left, len(self.buf))
                self.buf = self.buf[n:]
                self.body_left -= n
                if self.body_left:
                    return
            if self.chunked:
                # Skip chunks until the terminating 0-size chunk.
                end = self.buf.find(b"\r\n0\r\n\r\n")
                if self.buf.startswith(b"0\r\n\r\n"):
                    self.buf = self.buf[5:]
                    self.chunked = False
                elif end >= 0:
                    self.buf = self.buf[end + 7:]
                    self.chunked = False
                else:
                    return
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].decode("latin-1")
            self.buf = self.buf[head_end + 4:]
            lines = head.split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) >= 2:
                with self.proxy.lock:
                    self.proxy.requests.append((time.time(), parts[0], parts[1]))
            for h in lines[1:]:
                k, _, v = h.partition(":")
                k = k.strip().lower()
                if k == "content-length":
                    self.body_left = int(v.strip() or 0)
                elif k == "transfer-encoding" and "chunked" in v.lower():
                    self.chunked = True


def controller_writes(records):
    """The mutating requests of a replica that only a leader makes: everything but its own
    Lease (candidates write it too) and Events (a stopping leader records that it stopped)."""
    return [r for r in records if r[1] in MUTATING and "/leases/" not in r[2] and
            "/leases?" not in r[2] and not r[2].endswith("/leases") and "/events" not in r[2]]


# ---- watching what happened ------------------------------------------------------------------

class WatchRecorder:
    """Records every watch event of a collection (e.g. /api/v1/nodes) from the test's own
    connection, resuming from the last resourceVersion when the stream ends, so the test sees
    every intermediate state the host wrote (not only the final one). The test must not
    inject faults into its own watch: kubesim's fault rules match every client, so use this
    only in tests whose faults do not cover `path` watches (or the admin API)."""

    def __init__(self, cluster, path):
        self.cluster = cluster
        self.path = path
        self.events = []  # (type, object)
        self.error = None
        self.lock = threading.Lock()
        self.stopped = False
        items = cluster.api.get(path)
        self.initial = items["items"]
        self.rv = items["metadata"]["resourceVersion"]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        import json
        import urllib.request
        while not self.stopped:
            url = "%s%s?watch=true&allowWatchBookmarks=true&resourceVersion=%s" % (
                self.cluster.url, self.path, self.rv)
            req = urllib.request.Request(url)
            req.add_header("Authorization", "Bearer " + self.cluster.api.token)
            try:
                with urllib.request.urlopen(req, context=self.cluster.api.ctx, timeout=3600) as r:
                    for line in r:
                        if self.stopped:
                            return
                        ev = json.loads(line)
                        if ev["type"] == "ERROR":
                            self.error = "the test's own watch of %s failed: %s" % (
                                self.path, ev["object"])
                            return
                        self.rv = ev["object"]["metadata"]["resourceVersion"]
                        if ev["type"] != "BOOKMARK":
                            with self.lock:
                                self.events.append((ev["type"], ev["object"]))
            except (OSError, ValueError):
                time.sleep(0.2)

    def snapshot(self):
        if self.error:
            raise AssertionError(self.error)
        with self.lock:
            return list(self.events)

    def stop(self):
        self.stopped = True
