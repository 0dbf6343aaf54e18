#!/usr/bin/env python3
"""Fidelity: kubesim's transport against what a real kube-apiserver (v1.26+) does.

Reference row: "HTTP/2 over TLS (ALPN `h2`) is offered and is what libcurl and Go clients use;
responses are gzip-compressed above ~128 KiB when the client accepts gzip; protobuf and YAML
responses are served."

HTTP/2 is driven with Debian's python3-h2 (frames, settings, resets and GOAWAY are visible
there) and with the curl CLI; ALPN selection with Python's ssl module; protobuf answers are
read with a small wire-format reader here (field numbers of k8s.io/api's generated.proto).
"""
import gzip
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
import h2.settings  # noqa: E402
import yaml  # noqa: E402

from kubesim_harness import KubesimTestCase, wait_for  # noqa: E402

GZIP_THRESHOLD = 128 * 1024
INTERNAL_ERROR = 2


def read_varint(b, i):
    v, shift = 0, 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """A protobuf message as {field number: [values]} (varints as ints, the rest as bytes)."""
    out, i = {}, 0
    while i < len(b):
        key, i = read_varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v, i = read_varint(b, i)
        elif wire == 2:
            n, i = read_varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise AssertionError("bad wire type %d" % wire)
        out.setdefault(number, []).append(v)
    return out


def first(msg, number):
    return msg.get(number, [None])[0]


def unwrap(raw):
    """The k8s\\0 envelope: (apiVersion, kind, the object's fields)."""
    assert raw[:4] == b"k8s\x00", raw[:16]
    unknown = fields(raw[4:])
    type_meta = fields(first(unknown, 1))
    return (first(type_meta, 1).decode(), first(type_meta, 2).decode(),
            fields(first(unknown, 2)))


def alpn_selected(sim, protocols):
    ctx = ssl.create_default_context(cafile=sim.ca_file)
    if protocols is not None:
        ctx.set_alpn_protocols(protocols)
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return s.selected_alpn_protocol()


class H2Client:
    """One HTTP/2 connection (ALPN h2) with the frames it received, per stream."""

    def __init__(self, sim, window=65535):
        ctx = ssl.create_default_context(cafile=sim.ca_file)
        ctx.set_alpn_protocols(["h2"])
        raw = socket.create_connection(("127.0.0.1", sim.port), timeout=30)
        self.sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        assert self.sock.selected_alpn_protocol() == "h2"
        self.sim = sim
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.streams = {}
        self.remote_settings = {}
        self.terminated = None  # ConnectionTerminated event
        self.closed = False
        self.raw = b""

    def request(self, path, method="GET", headers=None, body=None):
        sid = self.conn.get_next_available_stream_id()
        h = [(":method", method), (":path", path), (":scheme", "https"),
             (":authority", "127.0.0.1:%d" % self.sim.port),
             ("authorization", "Bearer " + self.sim.admin_token)]
        h += [(k.lower(), v) for k, v in (headers or {}).items()]
        self.conn.send_headers(sid, h, end_stream=body is None)
        if body is not None:
            self.conn.send_data(sid, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        self.streams[sid] = {"headers": None, "data": b"", "ended": False, "reset": None}
        return sid

    def post_large(self, path, body, timeout=60):
        """POSTs body under the server's flow control (windows opened by WINDOW_UPDATE)."""
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [
            (":method", "POST"), (":path", path), (":scheme", "https"),
            (":authority", "127.0.0.1:%d" % self.sim.port),
            ("authorization", "Bearer " + self.sim.admin_token),
            ("content-type", "application/json")])
        self.streams[sid] = {"headers": None, "data": b"", "ended": False, "reset": None}
        deadline = time.monotonic() + timeout
        sent = 0
        while sent < len(body):
            window = min(self.conn.local_flow_control_window(sid),
                         self.conn.max_outbound_frame_size, len(body) - sent)
            if window <= 0:
                if time.monotonic() > deadline or self.closed:
                    raise AssertionError("HTTP/2: the server's window never opened")
                self.pump(1)
                continue
            self.conn.send_data(sid, body[sent:sent + window],
                                end_stream=sent + window == len(body))
            self.sock.sendall(self.conn.data_to_send())
            sent += window
        self.until(lambda: self.streams[sid]["ended"], timeout, "answer to the large POST")
        return self.streams[sid]

    def pump(self, timeout=30):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 16)
        except (ssl.SSLError, OSError):
            data = b""
        if not data:
            self.closed = True
            return
        # Frame by frame: python3-h2 refuses every frame after a GOAWAY, even DATA on streams
        # the GOAWAY lets finish, so those are read here directly.
        self.raw += data
        while len(self.raw) >= 9:
            length = int.from_bytes(self.raw[:3], "big")
            if len(self.raw) < 9 + length:
                break
            frame, self.raw = self.raw[:9 + length], self.raw[9 + length:]
            if self.terminated is None:
                self.handle(self.conn.receive_data(frame))
            else:
                self.after_goaway(frame)
        out = self.conn.data_to_send()
        if out:
            try:
                self.sock.sendall(out)
            except OSError:
                self.closed = True

    def handle(self, events):
        for ev in events:
            st = self.streams.get(getattr(ev, "stream_id", None))
            if isinstance(ev, h2.events.ResponseReceived):
                st["headers"] = dict(ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                st["data"] += ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                st["ended"] = True
            elif isinstance(ev, h2.events.StreamReset):
                if st is not None:
                    st["reset"] = ev.error_code
            elif isinstance(ev, h2.events.RemoteSettingsChanged):
                for code, change in ev.changed_settings.items():
                    self.remote_settings[int(code)] = change.new_value
            elif isinstance(ev, h2.events.ConnectionTerminated):
                self.terminated = ev

    def after_goaway(self, frame):
        kind, flags = frame[3], frame[4]
        st = self.streams.get(int.from_bytes(frame[5:9], "big") & 0x7FFFFFFF)
        if st is None:
            return
        if kind == 0:  # DATA (kubesim never pads)
            st["data"] += frame[9:]
            if flags & 0x1:
                st["ended"] = True
        elif kind == 3:  # RST_STREAM
            st["reset"] = int.from_bytes(frame[9:13], "big")

    def until(self, predicate, timeout=30, message="condition"):
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.closed or time.monotonic() > deadline:
                raise AssertionError("HTTP/2: %s did not happen (closed=%s)" %
                                     (message, self.closed))
            self.pump(max(0.05, deadline - time.monotonic()))
        return True

    def get(self, path, headers=None, timeout=30):
        sid = self.request(path, headers=headers)
        self.until(lambda: self.streams[sid]["ended"] or self.streams[sid]["reset"] is not None,
                   timeout, "answer to " + path)
        return self.streams[sid]

    def events(self, sid):
        return [json.loads(line) for line in self.streams[sid]["data"].split(b"\n") if line]

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class TransportTest(KubesimTestCase):
    KUBESIM_ARGS = ("--nodes=60",)

    def status(self):
        return self.sim.admin("GET", "status")

    def list_rv(self):
        return self.sim.get("/api/v1/namespaces/default/configmaps").json()["metadata"][
            "resourceVersion"]

    def make_configmap(self, name):
        r = self.sim.request("POST", "/api/v1/namespaces/default/configmaps",
                             body={"metadata": {"name": name}, "data": {"k": "v"}})
        self.assertStatus(r, 201)

    # --- HTTP/2 and ALPN ---

    def test_alpn_offers_h2_beside_http11(self):
        """HTTP/2 over TLS (ALPN `h2`) is offered: h2 when the client offers it, http/1.1 or
        no protocol otherwise."""
        self.assertEqual(alpn_selected(self.sim, ["h2", "http/1.1"]), "h2")
        self.assertEqual(alpn_selected(self.sim, ["http/1.1"]), "http/1.1")
        self.assertIsNone(alpn_selected(self.sim, None))
        # Without ALPN the HTTP/1.1 path answers as before.
        self.assertStatus(self.sim.get("/api/v1/nodes?limit=1"), 200)

    def test_h2_settings_are_the_api_servers(self):
        """HTTP/2 (ALPN `h2`): SETTINGS as kube-apiserver sends them (250 concurrent streams,
        256 KiB stream window and frame size)."""
        c = H2Client(self.sim)
        try:
            c.get("/version")
            S = h2.settings.SettingCodes
            self.assertEqual(c.remote_settings.get(int(S.MAX_CONCURRENT_STREAMS)), 250)
            self.assertEqual(c.remote_settings.get(int(S.INITIAL_WINDOW_SIZE)), 256 * 1024)
            self.assertEqual(c.remote_settings.get(int(S.MAX_FRAME_SIZE)), 256 * 1024)
        finally:
            c.close()

    def test_h2_concurrent_streams_under_flow_control(self):
        """HTTP/2 over TLS (ALPN `h2`): many concurrent requests on one connection, answers
        larger than the client's 64 KiB window arrive whole."""
        c = H2Client(self.sim)
        try:
            before = self.status()["transport"]["http2Streams"]
            sids = [c.request("/api/v1/nodes") for _ in range(12)]
            sids += [c.request("/api/v1/nodes/node-%05d" % i) for i in range(1, 9)]
            c.until(lambda: all(c.streams[s]["ended"] for s in sids), 60, "all answers")
            first = json.loads(c.streams[sids[0]]["data"])
            self.assertEqual(len(first["items"]), 60)
            self.assertGreater(len(c.streams[sids[0]]["data"]), 65535)
            for s in sids[:12]:
                self.assertEqual(c.streams[s]["headers"][":status"], "200")
                self.assertEqual(len(json.loads(c.streams[s]["data"])["items"]), 60)
            for i, s in enumerate(sids[12:], start=1):
                self.assertEqual(json.loads(c.streams[s]["data"])["metadata"]["name"],
                                 "node-%05d" % i)
            after = self.status()["transport"]["http2Streams"]
            self.assertGreaterEqual(after - before, 20)
        finally:
            c.close()

    def test_h2_watch_sends_data_frames_per_event(self):
        """HTTP/2 over TLS (ALPN `h2`): a watch is a long-lived stream, events arrive as DATA
        frames while it stays open."""
        rv = self.list_rv()
        c = H2Client(self.sim)
        try:
            sid = c.request("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + rv)
            c.until(lambda: c.streams[sid]["headers"] is not None, 30, "watch headers")
            self.assertEqual(c.streams[sid]["headers"][":status"], "200")
            self.make_configmap("h2-watch-a")
            c.until(lambda: b"h2-watch-a" in c.streams[sid]["data"], 30, "first event")
            self.make_configmap("h2-watch-b")
            c.until(lambda: b"h2-watch-b" in c.streams[sid]["data"], 30, "second event")
            names = [e["object"]["metadata"]["name"] for e in c.events(sid)]
            self.assertEqual(names, ["h2-watch-a", "h2-watch-b"])
            self.assertFalse(c.streams[sid]["ended"])
            self.assertGreaterEqual(self.status()["transport"]["http2WatchStreamsOpen"], 1)
        finally:
            c.close()

    def test_h2_body_limit(self):
        """HTTP/2 over TLS (ALPN `h2`): a request body over 3 MiB gets 413 as on HTTP/1.1
        (sent under the server's flow control)."""
        c = H2Client(self.sim)
        try:
            body = json.dumps({"metadata": {"name": "too-big"},
                               "data": {"k": "x" * (3 * 1024 * 1024 + 10)}}).encode()
            st = c.post_large("/api/v1/namespaces/default/configmaps", body)
            self.assertEqual(st["headers"][":status"], "413")
            status = json.loads(st["data"])
            self.assertEqual((status["reason"], status["code"]), ("RequestEntityTooLarge", 413))
            self.assertIn("limit is 3145728", status["message"])
        finally:
            c.close()

    def test_curl_http2(self):
        """HTTP/2 over TLS (ALPN `h2`) is what libcurl uses: `curl --http2` gets HTTP/2."""
        out = subprocess.run(
            ["curl", "-sS", "--http2", "--cacert", self.sim.ca_file, "-H",
             "Authorization: Bearer " + self.sim.admin_token, "-o", "/dev/null", "-w",
             "%{http_version} %{http_code}",
             "https://127.0.0.1:%d/api/v1/nodes?limit=5" % self.sim.port],
            capture_output=True, text=True, timeout=60, check=True).stdout
        self.assertEqual(out, "2 200")

    # --- gzip ---

    def test_gzip_above_threshold_h2(self):
        """responses are gzip-compressed above ~128 KiB when the client accepts gzip
        (HTTP/2): Content-Encoding gzip, Vary Accept-Encoding."""
        c = H2Client(self.sim)
        try:
            plain = c.get("/api/v1/nodes")
            self.assertGreater(len(plain["data"]), GZIP_THRESHOLD)
            self.assertNotIn("content-encoding", plain["headers"])
            packed = c.get("/api/v1/nodes", headers={"Accept-Encoding": "gzip"})
            self.assertEqual(packed["headers"].get("content-encoding"), "gzip")
            self.assertEqual(packed["headers"].get("vary"), "Accept-Encoding")
            body = json.loads(gzip.decompress(packed["data"]))
            self.assertEqual(body["kind"], "NodeList")
            self.assertEqual(len(body["items"]), 60)
            self.assertLess(len(packed["data"]), len(plain["data"]))
        finally:
            c.close()

    def test_gzip_not_below_threshold(self):
        """responses are gzip-compressed above ~128 KiB: a small answer stays plain even
        when gzip is accepted; q=0 refuses gzip."""
        small = self.sim.get("/api/v1/nodes/node-00001", headers={"Accept-Encoding": "gzip"})
        self.assertStatus(small, 200)
        self.assertLess(len(small.body), GZIP_THRESHOLD)
        self.assertIsNone(small.header("Content-Encoding"))
        refused = self.sim.request("GET", "/api/v1/nodes",
                                   headers={"Accept-Encoding": "gzip;q=0, identity"})
        self.assertIsNone(refused.header("Content-Encoding"))
        self.assertEqual(len(refused.json()["items"]), 60)

    def test_gzip_above_threshold_http11(self):
        """responses are gzip-compressed above ~128 KiB when the client accepts gzip
        (HTTP/1.1 too)."""
        conn = self.sim.connection()
        conn.request("GET", "/api/v1/nodes", headers={
            "Authorization": "Bearer " + self.sim.admin_token, "Accept-Encoding": "gzip"})
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.getheader("Content-Encoding"), "gzip")
        self.assertEqual(len(json.loads(gzip.decompress(raw))["items"]), 60)

    def test_watch_is_never_gzipped(self):
        """responses are gzip-compressed above ~128 KiB: watch streams are not."""
        rv = self.list_rv()
        w = self.sim.watch("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + rv,
                           headers={"Accept-Encoding": "gzip"})
        try:
            self.assertEqual(w.status, 200)
            self.assertIsNone(w.resp.getheader("Content-Encoding"))
        finally:
            w.close()

    # --- YAML and protobuf ---

    def test_yaml_object(self):
        """YAML responses are served: `Accept: application/yaml` gets the object as YAML."""
        r = self.sim.get("/api/v1/nodes/node-00002", headers={"Accept": "application/yaml"})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "application/yaml")
        as_yaml = yaml.safe_load(r.body)
        as_json = self.sim.get("/api/v1/nodes/node-00002").json()
        # The same object (the simulated kubelet may have moved it on in between).
        for doc in (as_yaml, as_json):
            doc["metadata"].pop("resourceVersion")
            doc.pop("status")
        self.assertEqual(as_yaml, as_json)
        self.assertTrue(r.body.startswith("apiVersion: v1\nkind: Node\nmetadata:\n"), r.body[:80])
        # Strings that would read back as something else are quoted.
        self.assertIn('creationTimestamp: "', r.body)

    def test_yaml_list_and_error(self):
        """YAML responses are served: lists, and Status errors, in YAML."""
        r = self.sim.get("/api/v1/namespaces", headers={"Accept": "application/yaml"})
        self.assertEqual(r.status, 200)
        doc = yaml.safe_load(r.body)
        self.assertEqual(doc["kind"], "NamespaceList")
        self.assertIn("default", [n["metadata"]["name"] for n in doc["items"]])
        missing = self.sim.get("/api/v1/nodes/no-such-node", headers={"Accept": "application/yaml"})
        self.assertEqual(missing.status, 404)
        self.assertEqual(missing.header("Content-Type"), "application/yaml")
        status = yaml.safe_load(missing.body)
        self.assertEqual((status["kind"], status["reason"], status["code"]),
                         ("Status", "NotFound", 404))

    def test_yaml_watch_not_acceptable(self):
        """YAML responses are served, but YAML has no streaming form: a YAML-only watch is
        406 NotAcceptable."""
        r = self.sim.get("/api/v1/nodes?watch=1", headers={"Accept": "application/yaml"})
        self.assertStatus(r, 406, "NotAcceptable")

    def test_protobuf_or_json(self):
        """protobuf responses are served: a client that offers protobuf first gets it."""
        r = self.raw_get("/api/v1/nodes/node-00001",
                         "application/vnd.kubernetes.protobuf, application/json")
        self.assertEqual(r[0], 200)
        self.assertEqual(r[1], "application/vnd.kubernetes.protobuf")

    def raw_get(self, path, accept):
        conn = self.sim.connection()
        conn.request("GET", path, headers={
            "Authorization": "Bearer " + self.sim.admin_token, "Accept": accept})
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        return resp.status, resp.getheader("Content-Type"), raw

    def test_protobuf_object(self):
        """protobuf responses are served: `Accept: application/vnd.kubernetes.protobuf`
        gets the `k8s\0` envelope (runtime.Unknown with TypeMeta) around a Node."""
        status, ctype, raw = self.raw_get("/api/v1/nodes/node-00001",
                                          "application/vnd.kubernetes.protobuf")
        self.assertEqual((status, ctype), (200, "application/vnd.kubernetes.protobuf"))
        api_version, kind, obj = unwrap(raw)
        self.assertEqual((api_version, kind), ("v1", "Node"))
        meta = fields(first(obj, 1))
        self.assertEqual(first(meta, 1), b"node-00001")  # ObjectMeta.name
        as_json = self.sim.get("/api/v1/nodes/node-00001").json()
        self.assertEqual(first(meta, 5).decode(), as_json["metadata"]["uid"])
        status_msg = fields(first(obj, 3))  # NodeStatus
        info = fields(first(status_msg, 7))  # NodeSystemInfo
        self.assertEqual(first(info, 7).decode(), as_json["status"]["nodeInfo"]["kubeletVersion"])
        capacity = {first(fields(e), 1).decode(): first(fields(first(fields(e), 2)), 1).decode()
                    for e in status_msg[1]}
        self.assertEqual(capacity, as_json["status"]["capacity"])

    def test_protobuf_list_and_status(self):
        """protobuf responses are served: lists (ListMeta, items) and Status errors."""
        status, ctype, raw = self.raw_get("/api/v1/nodes", "application/vnd.kubernetes.protobuf")
        self.assertEqual((status, ctype), (200, "application/vnd.kubernetes.protobuf"))
        api_version, kind, obj = unwrap(raw)
        self.assertEqual(kind, "NodeList")
        self.assertEqual(len(obj.get(2, [])), 60)
        self.assertTrue(first(fields(first(obj, 1)), 2))  # ListMeta.resourceVersion
        status, ctype, raw = self.raw_get("/api/v1/nodes/no-such-node",
                                          "application/vnd.kubernetes.protobuf")
        self.assertEqual((status, ctype), (404, "application/vnd.kubernetes.protobuf"))
        _, kind, obj = unwrap(raw)
        self.assertEqual(kind, "Status")
        self.assertEqual(first(obj, 4), b"NotFound")
        self.assertEqual(first(obj, 6), 404)

    def test_protobuf_watch(self):
        """protobuf responses are served: watches as length-prefixed WatchEvent frames."""
        rv = self.list_rv()
        c = H2Client(self.sim)
        try:
            sid = c.request("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + rv,
                            headers={"Accept": "application/vnd.kubernetes.protobuf"})
            c.until(lambda: c.streams[sid]["headers"] is not None, 30, "watch headers")
            self.assertEqual(c.streams[sid]["headers"]["content-type"],
                             "application/vnd.kubernetes.protobuf;stream=watch")
            self.make_configmap("pb-watch")
            c.until(lambda: len(c.streams[sid]["data"]) >= 4 and
                    len(c.streams[sid]["data"]) >= 4 + int.from_bytes(
                        c.streams[sid]["data"][:4], "big"), 30, "one frame")
            data = c.streams[sid]["data"]
            event = fields(data[4:4 + int.from_bytes(data[:4], "big")])
            self.assertEqual(first(event, 1), b"ADDED")
            _, kind, obj = unwrap(first(fields(first(event, 2)), 1))
            self.assertEqual(kind, "ConfigMap")
            self.assertEqual(first(fields(first(obj, 1)), 1), b"pb-watch")
        finally:
            c.close()

    # --- transport faults over HTTP/2 ---

    def test_fault_reset_watch_after_events(self):
        """Fault: RST_STREAM (INTERNAL_ERROR) on a watch stream after N events."""
        rule = self.sim.admin("POST", "faults", {
            "verb": "watch", "path": "/api/v1/namespaces/default/configmaps",
            "action": "reset", "afterEvents": 2, "count": 1})
        try:
            rv = self.list_rv()
            c = H2Client(self.sim)
            try:
                sid = c.request("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" +
                                rv)
                for name in ("rst-a", "rst-b", "rst-c"):
                    self.make_configmap(name)
                c.until(lambda: c.streams[sid]["reset"] is not None, 30, "RST_STREAM")
                self.assertEqual(c.streams[sid]["reset"], INTERNAL_ERROR)
                names = [e["object"]["metadata"]["name"] for e in c.events(sid)]
                self.assertEqual(names, ["rst-a", "rst-b"])
                # The connection survives the stream.
                self.assertEqual(c.get("/version")["headers"][":status"], "200")
            finally:
                c.close()
        finally:
            self.sim.request("DELETE", "/admin/faults/%d" % rule["id"])

    def test_admin_reset_watches(self):
        """Fault: RST_STREAM on every HTTP/2 watch stream on an admin call."""
        c = H2Client(self.sim)
        try:
            sid = c.request("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" +
                            self.list_rv())
            c.until(lambda: c.streams[sid]["headers"] is not None, 30, "watch headers")
            wait_for(lambda: self.status()["transport"]["http2WatchStreamsOpen"] >= 1)
            self.assertGreaterEqual(self.sim.admin("POST", "http2/reset")["connections"], 1)
            c.until(lambda: c.streams[sid]["reset"] is not None, 30, "RST_STREAM")
            self.assertEqual(c.streams[sid]["reset"], INTERNAL_ERROR)
        finally:
            c.close()

    def test_admin_goaway_ends_watches(self):
        """Fault: GOAWAY (NO_ERROR) on every HTTP/2 connection; open watches end cleanly as
        when the server shuts down, and the connection closes."""
        c = H2Client(self.sim)
        try:
            sid = c.request("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" +
                            self.list_rv())
            c.until(lambda: c.streams[sid]["headers"] is not None, 30, "watch headers")
            self.sim.admin("POST", "http2/goaway", {"endStreams": True})
            c.until(lambda: c.terminated is not None, 30, "GOAWAY")
            self.assertEqual(c.terminated.error_code, 0)
            self.assertGreaterEqual(c.terminated.last_stream_id, sid)
            c.until(lambda: c.streams[sid]["ended"], 30, "watch end")
            c.until(lambda: c.closed, 30, "connection close")
        finally:
            c.close()

    def test_fault_goaway_after_request(self):
        """Fault: GOAWAY after answering a matching request; streams already open run on."""
        rule = self.sim.admin("POST", "faults", {
            "verb": "get", "path": "/api/v1/nodes/node-00003", "action": "goaway", "count": 1})
        try:
            c = H2Client(self.sim)
            try:
                watch = c.request("/api/v1/namespaces/default/configmaps?watch=1&"
                                  "resourceVersion=" + self.list_rv())
                answer = c.get("/api/v1/nodes/node-00003")
                self.assertEqual(answer["headers"][":status"], "200")
                c.until(lambda: c.terminated is not None, 30, "GOAWAY")
                self.assertEqual(c.terminated.error_code, 0)
                self.assertGreater(c.terminated.last_stream_id, watch)
                self.make_configmap("after-goaway")
                c.until(lambda: b"after-goaway" in c.streams[watch]["data"], 30,
                        "event on the old connection")
            finally:
                c.close()
        finally:
            self.sim.request("DELETE", "/admin/faults/%d" % rule["id"])

    def test_request_counts_by_protocol(self):
        """HTTP/2 is what clients use: /admin/status counts requests by protocol and verb."""
        c = H2Client(self.sim)
        try:
            before = self.status()["requests"]["HTTP/2"].get("list", 0)
            c.get("/api/v1/nodes?limit=1")
            c.get("/api/v1/namespaces")
            after = self.status()["requests"]["HTTP/2"].get("list", 0)
            self.assertGreaterEqual(after - before, 2)
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
