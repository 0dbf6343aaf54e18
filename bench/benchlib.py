"""Shared machinery of the scale benchmarks: a kubesim + cloud-controller-manager +
fake-cloud environment (built on test/support/harness.py), /metrics scraping, process CPU
and memory from /proc, and a log follower that timestamps what the controllers did.

Nothing here knows a scenario; bench/scenarios.py does.
"""
import calendar
import os
import re
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "support"))

import harness  # noqa: E402  (needs CCM_BUILD_DIR, set by configure())

CLK_TCK = os.sysconf("SC_CLK_TCK")


def configure(build_dir):
    """Points the harness at a build directory (it reads the binaries from there)."""
    harness.BUILD = os.path.abspath(build_dir)
    harness.SOURCE = ROOT


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# ---- processes -------------------------------------------------------------------------------


class WrappedCcm(harness.Ccm):
    """A ccm started under a wrapper (BENCH_CCM_WRAPPER). heaptrack, for one, runs the host as
    its child and does not pass signals on: stopping only the wrapper left the host running,
    an orphan still retrying against the next run's ports. The host (the wrapper's child
    running `program`) gets the signal first; the wrapper's other children (heaptrack's
    interpreter) are left to finish their output."""

    def __init__(self, args, log_path, program):
        # BENCH_CCM_STOP_SIGNAL=KILL: the host is killed where it stands, so a heap profiler
        # records what it held at rest as never freed (stopped by SIGTERM, it frees its
        # caches first). The wrapper is then left to finish its output and exit.
        self.stop_signal = stop_signal_from_env()
        super().__init__(args, log_path)
        self.program = program

    def stop(self, sig=signal.SIGTERM, timeout=30):
        host_sig = self.stop_signal or sig
        if self.proc.poll() is None:
            for pid in children_of(self.proc.pid, self.program):
                try:
                    os.kill(pid, host_sig)
                except ProcessLookupError:
                    pass
            if host_sig != sig:
                try:
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    pass
        return super().stop(sig, timeout)


def stop_signal_from_env():
    """BENCH_CCM_STOP_SIGNAL as a signal (KILL, SIGKILL, 9), or None when it is not set."""
    name = os.environ.get("BENCH_CCM_STOP_SIGNAL", "").strip()
    if not name:
        return None
    try:
        if name.isdigit():
            return signal.Signals(int(name))
        return signal.Signals["SIG" + name.upper().removeprefix("SIG")]
    except (KeyError, ValueError):
        raise SystemExit("bench: BENCH_CCM_STOP_SIGNAL=%r is not a signal (KILL, TERM, 9, ...)"
                         % name) from None


def children_of(parent, program):
    """The pids whose parent is `parent` and whose argv[0] is `program` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = _read_stat("/proc/%s/stat" % entry)
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) != parent:
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if argv0 == program:
            out.append(int(entry))
    return out

class Proc:
    """CPU and memory of one running process, read from /proc."""

    def __init__(self, pid):
        self.pid = pid

    def cpu_seconds(self):
        """User + system CPU of every thread so far (clock-tick resolution)."""
        return _stat_cpu(_read_stat("/proc/%d/stat" % self.pid))

    def thread_cpu(self):
        """CPU seconds so far by thread name (threads that exited are not counted). Read from
        each thread's schedstat (the scheduler's nanosecond run time): the tick-based times
        in a thread's stat file come out 10-15 % below the process total for the node
        workers, which sleep and wake thousands of times a second."""
        out = {}
        task = "/proc/%d/task" % self.pid
        for tid in os.listdir(task):
            try:
                data = _read_stat("%s/%s/stat" % (task, tid))
                cpu = _schedstat_cpu("%s/%s/schedstat" % (task, tid))
            except OSError:
                continue
            if cpu is None:
                cpu = _stat_cpu(data)
            name = data[data.index("(") + 1:data.rindex(")")]
            out[name] = out.get(name, 0.0) + cpu
        return out

    def cpu_when_quiet(self, quiet=0.5, below=0.015, timeout=60.0, step=0.05):
        """The process's CPU seconds once it has gone `quiet` seconds using less than
        `below` CPU-s (at most one clock tick), read from /proc so that measuring costs the
        process nothing. Work a burst leaves behind (a watch backlog, queued events) is
        counted, the idle time spent waiting is not. Returns (cpu, thread_cpu, wakeups) as
        they were at the start of the quiet stretch."""
        deadline = time.time() + timeout
        samples = [(time.time(), self.cpu_seconds(), self.thread_cpu(), self.wakeups())]
        while time.time() < deadline:
            time.sleep(step)
            samples.append((time.time(), self.cpu_seconds(), self.thread_cpu(), self.wakeups()))
            # the newest sample at least `quiet` seconds old
            old = [x for x in samples if samples[-1][0] - x[0] >= quiet]
            if old and samples[-1][1] - old[-1][1] < below:
                return old[-1][1], old[-1][2], old[-1][3]
        raise AssertionError("the cloud-controller-manager did not go quiet within %gs" % timeout)

    def wakeups(self):
        """Voluntary context switches so far by thread name: how often each thread slept
        and was woken (a figure the machine's load does not change much, unlike CPU)."""
        out = {}
        task = "/proc/%d/task" % self.pid
        for tid in os.listdir(task):
            try:
                with open("%s/%s/status" % (task, tid)) as f:
                    fields = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:
                continue
            name = fields.get("Name", "?").strip()
            out[name] = out.get(name, 0) + int(fields.get("voluntary_ctxt_switches", "0"))
        return out

    def _status_bytes(self, key):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
        return 0

    def rss_bytes(self):
        return self._status_bytes("VmRSS:")

    def hwm_bytes(self):
        """Peak RSS."""
        return self._status_bytes("VmHWM:")


def _read_stat(path):
    with open(path) as f:
        return f.read()


def _schedstat_cpu(path):
    """Run time in seconds from a schedstat file, or None where the kernel has none."""
    try:
        with open(path) as f:
            return int(f.read().split()[0]) / 1e9
    except FileNotFoundError:
        return None


def _stat_cpu(data):
    """utime + stime of a /proc stat line, in seconds."""
    # After the command: state is field 3, utime 14, stime 15 (1-based in proc(5)).
    fields = data.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


# ---- metrics ---------------------------------------------------------------------------------

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Metrics:
    """One /metrics scrape: sum(name, **labels) adds every sample matching the labels."""

    def __init__(self, text):
        self.samples = []
        for line in text.splitlines():
            if not line or line[0] == "#":
                continue
            m = _SAMPLE.match(line)
            if not m:
                continue
            labels = dict(_LABEL.findall(m.group(3) or ""))
            try:
                value = float(m.group(4))
            except ValueError:
                continue
            self.samples.append((m.group(1), labels, value))

    def sum(self, metric, /, **labels):
        total = 0.0
        for n, l, v in self.samples:
            if n == metric and all(l.get(k) == want for k, want in labels.items()):
                total += v
        return total

    def by_label(self, name, label):
        out = {}
        for n, l, v in self.samples:
            if n == name:
                out[l.get(label, "")] = out.get(l.get(label, ""), 0.0) + v
        return out


WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def api_writes(m):
    return sum(m.sum("rest_client_requests_total", method=v) for v in WRITE_METHODS)


def api_requests(m):
    return m.sum("rest_client_requests_total")


def provider_calls(m, capability=None):
    if capability is None:
        return m.sum("ccm_provider_calls_total")
    return m.sum("ccm_provider_calls_total", capability=capability)


# ---- the log -----------------------------------------------------------------------------------

_KLOG_TIME = re.compile(r'^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ')


def klog_time(line, year=None):
    """Unix time of a klog text line ("I1121 07:30:19.400123 ..."; UTC), or None."""
    m = _KLOG_TIME.match(line)
    if not m:
        return None
    mo, d, h, mi, s, us = (int(x) for x in m.groups())
    year = year or time.gmtime().tm_year
    return calendar.timegm((year, mo, d, h, mi, s, 0, 0, 0)) + us / 1e6


class LogFollower:
    """Reads a growing log file incrementally; counts lines containing a message and keeps
    the timestamps of the first and last one."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.base = 0  # where counting starts (skip_to_end)
        self.partial = b""
        self.counts = {}
        self.first = {}
        self.last = {}
        self.lines = {}  # message -> matching lines, when asked to keep them
        self.keep = set()

    def watch(self, message, keep=False):
        """Starts counting `message`, including the lines read since the last
        skip_to_end()."""
        if keep:
            self.keep.add(message)
            self.lines.setdefault(message, [])
        if message in self.counts:
            return
        self.counts[message] = 0
        if self.offset > self.base:
            with open(self.path, "rb") as f:
                f.seek(self.base)
                data = f.read(self.offset - self.base)
            lines = data.split(b"\n")
            if not data.endswith(b"\n"):
                lines.pop()  # the partial line is counted when it completes
            for raw in lines:
                self._match(raw.decode(errors="replace"), (message,))

    def skip_to_end(self):
        """Ignores everything logged so far."""
        self.poll()
        self.base = self.offset - len(self.partial)
        for k in self.counts:
            self.counts[k] = 0
            self.first.pop(k, None)
            self.last.pop(k, None)
            if k in self.lines:
                self.lines[k] = []

    def poll(self):
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        if not data:
            return
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        for raw in lines:
            self._match(raw.decode(errors="replace"), self.counts)

    def _match(self, line, messages):
        for msg in messages:
            if msg in line:
                self.counts[msg] += 1
                t = klog_time(line)
                if t is not None:
                    self.first.setdefault(msg, t)
                    self.last[msg] = t
                if msg in self.keep:
                    self.lines[msg].append(line)

    def count(self, message):
        return self.counts.get(message, 0)


# ---- bulk API requests -------------------------------------------------------------------------

class KeepAliveApi:
    """JSON requests over kept-alive HTTPS connections, from several threads at once (for
    creating many objects quickly; urllib would pay a TLS handshake per request)."""

    def __init__(self, url, ca_file, token, connections=8):
        import http.client
        import ssl
        import urllib.parse
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self.token = token
        self.connections = connections
        self._http = http.client

    def _conn(self):
        return self._http.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)

    def run(self, requests):
        """requests: list of (method, path, body or None). Returns the decoded answers in
        order; raises on any non-2xx answer."""
        import json
        import threading
        results = [None] * len(requests)
        errors = []
        lock = threading.Lock()
        next_index = [0]

        def worker():
            conn = self._conn()
            while True:
                with lock:
                    i = next_index[0]
                    next_index[0] += 1
                if i >= len(requests) or errors:
                    break
                method, path, body = requests[i]
                data = None if body is None else json.dumps(body).encode()
                headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
                if data is not None:
                    headers["Content-Type"] = "application/json"
                try:
                    conn.request(method, path, body=data, headers=headers)
                    r = conn.getresponse()
                    text = r.read()
                except Exception as e:  # a dropped connection: reconnect once
                    conn.close()
                    conn = self._conn()
                    conn.request(method, path, body=data, headers=headers)
                    r = conn.getresponse()
                    text = r.read()
                if r.status >= 300:
                    errors.append("%s %s: HTTP %d %s" % (method, path, r.status, text[:300]))
                    break
                results[i] = json.loads(text) if text else None
            conn.close()

        threads = [threading.Thread(target=worker) for _ in range(self.connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise AssertionError(errors[0])
        return results


class WatchCounter:
    """Watches a collection from a background thread and calls on_event(type, object) for
    every event (the bench's own view of the API, independent of the ccm's logs)."""

    def __init__(self, env, path, on_event):
        import threading
        self.env = env
        self.path = path
        self.on_event = on_event
        self.stop_flag = False
        listing = env.api.get(path)
        self.rv = listing["metadata"]["resourceVersion"]
        for item in listing.get("items", []):
            on_event("ADDED", item)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        import http.client
        import json
        import ssl
        import urllib.parse
        u = urllib.parse.urlparse(self.env.cluster.url)
        ctx = ssl.create_default_context(cafile=self.env.cluster.ca_file)
        while not self.stop_flag:
            conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=600)
            conn.request("GET", "%s?watch=true&allowWatchBookmarks=true&resourceVersion=%s" %
                         (self.path, self.rv),
                         headers={"Authorization": "Bearer " + self.env.api.token})
            r = conn.getresponse()
            if r.status != 200:
                return
            while not self.stop_flag:
                line = r.readline()
                if not line:
                    break
                ev = json.loads(line)
                obj = ev.get("object", {})
                rv = obj.get("metadata", {}).get("resourceVersion")
                if rv:
                    self.rv = rv
                if ev.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    self.on_event(ev["type"], obj)
            conn.close()

    def stop(self):
        self.stop_flag = True


# ---- the environment ---------------------------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Env:
    """kubesim, a fake cloud and one cloud-controller-manager with /metrics open on
    127.0.0.1 (no token needed: --authorization-always-allow-paths)."""

    def __init__(self, nodes=0, kubesim_args=()):
        # CCM_KUBESIM_ARGS (read by the harness) adds kubesim flags to every scenario, e.g.
        # the steady heartbeat mode of issue 29: CCM_KUBESIM_ARGS=--node-status-period=10s.
        self.cluster = harness.Cluster(nodes=nodes, kubesim_args=list(kubesim_args))
        self.ccm = None
        self.metrics_port = None

    def __enter__(self):
        self.cluster.__enter__()
        return self

    def __exit__(self, *exc):
        return self.cluster.__exit__(*exc)

    @property
    def api(self):
        return self.cluster.api

    def kubesim_proc(self):
        return Proc(self.cluster.kubesim.pid)

    def cloud(self, **world):
        return self.cluster.fake_cloud(**world)

    def start_ccm(self, cloud_path, qps=20, burst=30, extra=(), verbosity=2):
        self.metrics_port = free_port()
        args = ["--secure-port=%d" % self.metrics_port, "--bind-address=127.0.0.1",
                "--authorization-always-allow-paths=/healthz,/metrics",
                "--kube-api-qps=%s" % qps, "--kube-api-burst=%d" % burst,
                "-v=%d" % verbosity] + list(extra)
        wrapper = os.environ.get("BENCH_CCM_WRAPPER", "").split()
        if wrapper:
            # e.g. BENCH_CCM_WRAPPER="heaptrack -o /tmp/ccm" (profiling runs only)
            own = self.cluster.ccm_args(cloud_path, extra=args)
            self.ccm = WrappedCcm(wrapper + own, os.path.join(self.cluster.tmp, "ccm-%d.log" %
                                                              len(self.cluster.processes)),
                                  program=own[0])
            self.cluster.processes.append(self.ccm)
        else:
            self.ccm = self.cluster.start_ccm(cloud_path, extra=args)
        self.log = LogFollower(self.ccm.log_path)
        return self.ccm

    def ccm_proc(self):
        if isinstance(self.ccm, WrappedCcm):
            # the host itself, not its wrapper (its figures then include the wrapper's cost)
            for _ in range(100):
                pids = children_of(self.ccm.proc.pid, self.ccm.program)
                if pids:
                    return Proc(pids[0])
                time.sleep(0.05)
        return Proc(self.ccm.proc.pid)

    def metrics(self):
        status, body = harness.https_get("https://127.0.0.1:%d/metrics" % self.metrics_port)
        if status != 200:
            raise AssertionError("GET /metrics: HTTP %d: %s" % (status, body[:200]))
        return Metrics(body)

    def wait_log(self, message, count=1, timeout=120.0, interval=0.02):
        """Waits until the ccm has logged `message` at least `count` times; returns the
        time of the last matching line."""
        self.log.watch(message)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.log.poll()
            if self.log.count(message) >= count:
                return self.log.last.get(message)
            if not self.ccm.alive():
                raise AssertionError("cloud-controller-manager exited: see %s" % self.ccm.log_path)
            time.sleep(interval)
        raise AssertionError("timed out after %.0fs waiting for %d x %r (saw %d)" %
                             (timeout, count, message, self.log.count(message)))

    def profile_start(self):
        """With BENCH_PERF=<file>, samples the ccm with `perf record` (cpu-clock, call
        graphs; BENCH_PERF_EVENT=context-switches shows where threads sleep) until
        profile_stop(); for finding where host CPU goes, not for figures."""
        out = os.environ.get("BENCH_PERF")
        self.perf = None
        if os.environ.get("BENCH_STRACE"):
            self.perf = subprocess.Popen(
                ["strace", "-f", "-c", "-o", os.environ["BENCH_STRACE"], "-p",
                 str(self.ccm.proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        elif out:
            self.perf = subprocess.Popen(
                ["perf", "record", "-q", "-e", os.environ.get("BENCH_PERF_EVENT", "cpu-clock"),
                 "-F", "4000", "--call-graph",
                 os.environ.get("BENCH_PERF_CALLGRAPH", "dwarf,16384"), "-o", out, "-p",
                 str(self.ccm.proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        # BENCH_KUBESIM_PERF=<file> samples kubesim the same way (both may run at once).
        sim_out = os.environ.get("BENCH_KUBESIM_PERF")
        self.sim_perf = None
        if sim_out:
            self.sim_perf = subprocess.Popen(
                ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "--call-graph",
                 os.environ.get("BENCH_PERF_CALLGRAPH", "dwarf,16384"), "-o", sim_out, "-p",
                 str(self.cluster.kubesim.pid)], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            time.sleep(0.5)

    def profile_stop(self):
        for name in ("perf", "sim_perf"):
            proc = getattr(self, name, None)
            if proc is not None:
                proc.send_signal(signal.SIGINT)
                proc.wait()
                setattr(self, name, None)

    def add_nodes(self, count, ready=None):
        return self.cluster.add_nodes(count=count, ready=ready)
