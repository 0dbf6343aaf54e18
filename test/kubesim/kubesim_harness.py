"""Test harness for kubesim integration tests: starts a kubesim process on 127.0.0.1:0, waits
for its ready file, and offers helpers for raw HTTPS requests, the admin API, kubectl (with a
private --cache-dir) and waiting for conditions (generous timeouts, never fixed sleeps for
correctness).

Environment: KUBESIM (path of the kubesim binary), KUBECTL (optional, default: kubectl on PATH).
"""

import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import unittest

KUBESIM = os.environ.get("KUBESIM", "kubesim")
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl")
MANIFESTS = os.environ.get("KUBESIM_TEST_MANIFESTS", "")


def wait_for(predicate, timeout=30.0, interval=0.05, message="condition"):
    """Polls predicate until it returns a truthy value; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - keep polling, report the last error
            last = e
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (message, last))


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def header(self, name):
        return self.headers.get(name)

    def __repr__(self):
        return "Response(%d, %s)" % (self.status, self.body[:300])


class Kubesim:
    """One kubesim process."""

    def __init__(self, *args, workdir=None):
        self.workdir = workdir or tempfile.mkdtemp(prefix="kubesim-test-")
        self.args = list(args)
        self.proc = None
        self.port = None

    # --- life cycle ---
    def start(self, extra_args=(), timeout=60):
        ready = os.path.join(self.workdir, "ready.json")
        if os.path.exists(ready):
            os.unlink(ready)
        self.kubeconfig = os.path.join(self.workdir, "admin.kubeconfig")
        self.cert_kubeconfig = os.path.join(self.workdir, "admin-cert.kubeconfig")
        cmd = [KUBESIM, "--port=0", "--cert-dir=" + os.path.join(self.workdir, "certs"),
               "--ready-file=" + ready, "--kubeconfig-out=" + self.kubeconfig,
               "--cert-kubeconfig-out=" + self.cert_kubeconfig] + self.args + list(extra_args)
        self.log = open(os.path.join(self.workdir, "kubesim.log"), "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        wait_for(lambda: os.path.exists(ready) or self.proc.poll() is not None, timeout,
                 message="kubesim ready file")
        if self.proc.poll() is not None:
            raise AssertionError("kubesim exited with %s:\n%s" % (self.proc.returncode,
                                                                    self.read_log()))
        with open(ready) as f:
            info = json.load(f)
        self.port = info["port"]
        with open(os.path.join(self.workdir, "certs", "admin.token")) as f:
            self.admin_token = f.read().strip()
        self.ca_file = os.path.join(self.workdir, "certs", "ca.crt")
        self.ssl = ssl.create_default_context(cafile=self.ca_file)
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "log", None):
            self.log.close()
            self.log = None

    def cleanup(self):
        self.stop()
        report = self.sanitizer_findings()
        shutil.rmtree(self.workdir, ignore_errors=True)
        if report:
            raise AssertionError("kubesim sanitizer findings:\n" + report)

    def sanitizer_findings(self):
        """ASan/UBSan/LSan reports in the log (builds with -Db_sanitize=...)."""
        log = self.read_log(tail=1 << 30)
        markers = ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "WARNING: ThreadSanitizer")
        if any(m in log for m in markers):
            return log
        return ""

    def read_log(self, tail=5000):
        try:
            with open(os.path.join(self.workdir, "kubesim.log"), "rb") as f:
                return f.read().decode(errors="replace")[-tail:]
        except OSError:
            return ""

    # --- HTTP ---
    def connection(self, timeout=30):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ssl,
                                           timeout=timeout)

    def request(self, method, path, body=None, token=None, headers=None, content_type=None,
                anonymous=False, timeout=30):
        conn = self.connection(timeout)
        h = dict(headers or {})
        if not anonymous:
            h["Authorization"] = "Bearer " + (token or self.admin_token)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h.setdefault("Content-Type", content_type or "application/json")
        elif body is not None:
            h.setdefault("Content-Type", content_type or "application/json")
        conn.request(method, path, body=body, headers=h)
        resp = conn.getresponse()
        data = resp.read().decode(errors="replace")
        headers_map = {}
        for k, v in resp.getheaders():
            if k in headers_map:
                headers_map[k] += ", " + v
            else:
                headers_map[k] = v
        conn.close()
        return Response(resp.status, headers_map, data)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def admin(self, method, path, body=None):
        r = self.request(method, "/admin/" + path.lstrip("/"), body=body if body is not None else {})
        if r.status >= 300:
            raise AssertionError("admin %s %s failed: %r" % (method, path, r))
        return r.json() if r.body else {}

    def watch(self, path, token=None, timeout=30, headers=None):
        """Opens a watch; returns a WatchStream reading newline-delimited events."""
        return WatchStream(self, path, token, timeout, headers)

    # --- kubectl ---
    def kubectl(self, *args, kubeconfig=None, check=True, timeout=60, input=None):
        cache = os.path.join(self.workdir, "kubectl-cache")
        cmd = [KUBECTL, "--kubeconfig=" + (kubeconfig or self.kubeconfig), "--cache-dir=" + cache]
        cmd += list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
        if check and p.returncode != 0:
            raise AssertionError("kubectl %s failed (%d):\nstdout: %s\nstderr: %s" %
                                 (" ".join(args), p.returncode, p.stdout, p.stderr))
        return p

    def wait_restart(self, before, timeout=60):
        wait_for(lambda: self.admin("GET", "status")["restarts"] > before, timeout,
                 message="restart")


class WatchStream:
    """A raw watch over HTTPS: yields parsed events; also exposes the HTTP status."""

    def __init__(self, sim, path, token, timeout, headers=None):
        self.conn = sim.connection(timeout)
        h = dict(headers or {})
        h["Authorization"] = "Bearer " + (token or sim.admin_token)
        self.conn.request("GET", path, headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.buf = b""
        self.cut = False

    def next(self):
        """The next event (dict), or None when the stream ended."""
        while b"\n" not in self.buf:
            try:
                chunk = self.resp.read1(65536)
            except (http.client.HTTPException, ConnectionError, ssl.SSLError, OSError):
                self.cut = True  # the server went away mid-stream
                return None
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def events_until(self, predicate, limit=100000):
        seen = []
        for _ in range(limit):
            ev = self.next()
            if ev is None:
                break
            seen.append(ev)
            if predicate(ev):
                return seen
        raise AssertionError("watch ended before the expected event; saw %s" %
                             [(e["type"], e["object"].get("metadata", {}).get("name")) for e in seen])

    def close(self):
        self.conn.close()


def kubectl_minor():
    if not KUBECTL:
        return None
    try:
        out = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], capture_output=True,
                             text=True, timeout=30).stdout
        v = json.loads(out)["clientVersion"]
        return int("".join(ch for ch in v["minor"] if ch.isdigit()))
    except Exception:  # noqa: BLE001
        return None


class KubesimTestCase(unittest.TestCase):
    """Starts one kubesim for the whole class (args in KUBESIM_ARGS)."""

    KUBESIM_ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.sim = Kubesim(*cls.KUBESIM_ARGS).start()

    @classmethod
    def tearDownClass(cls):
        cls.sim.cleanup()

    def assertStatus(self, resp, code, reason=None):
        self.assertEqual(resp.status, code, resp)
        if reason is not None:
            body = resp.json()
            self.assertEqual(body.get("kind"), "Status", resp)
            self.assertEqual(body.get("reason"), reason, resp)
            self.assertEqual(body.get("code"), code, resp)
