#!/usr/bin/env python3
"""A small Kubernetes-shaped API server that speaks HTTP/2 (and HTTP/1.1 when the client
offers only that), for the client's HTTP/2 test. kubesim speaks HTTP/1.1 only; a real
kube-apiserver offers both by ALPN, so this server does too.

It serves the node collection: list (paged with limit/continue), get, and watch (a scripted
sequence of events, then the stream stays open until its timeoutSeconds). Responses larger
than the peer's flow-control window are sent as the window opens, so the client's HTTP/2
flow control is exercised. Every request is appended to a JSON-lines log with the protocol
it arrived on.

usage: h2_server.py --nodes N -- PROGRAM [ARGS...]
  Starts the server on 127.0.0.1 (TLS, a throw-away CA), runs PROGRAM with H2_URL, H2_CA
  (CA file) and H2_LOG (the request log) in its environment, stops the server and exits with
  PROGRAM's status.
"""
import argparse
import json
import os
import select
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import h2.config
import h2.connection
import h2.events

LIST_RV = 1000  # the collection's resourceVersion at list time


def make_ca_and_cert(directory):
    """A CA and a server certificate for 127.0.0.1 signed by it."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    ca_key, ca = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.crt")
    key, csr = os.path.join(directory, "srv.key"), os.path.join(directory, "srv.csr")
    cert, ext = os.path.join(directory, "srv.crt"), os.path.join(directory, "srv.ext")
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=h2-test-ca",
        "-keyout", ca_key, "-out", ca)
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key,
        "-out", csr)
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days",
        "2", "-extfile", ext, "-out", cert)
    return ca, cert, key


def node(i, rv):
    return {"metadata": {"name": f"node-{i}", "resourceVersion": str(rv),
                         "labels": {"h2-test": "yes"}},
            "spec": {"providerID": f"h2://node-{i}"},
            "status": {"addresses": [{"type": "InternalIP", "address": f"10.0.{i // 250}.{i % 250}"}]}}


def not_found(name):
    return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                 "message": f'nodes "{name}" not found', "reason": "NotFound", "code": 404}


class Api:
    """The node collection and the scripted watch."""

    def __init__(self, nodes, log_path):
        self.nodes = nodes
        self.log_path = log_path
        self.log_lock = threading.Lock()

    def log(self, proto, conn, stream, method, target):
        with self.log_lock, open(self.log_path, "a") as f:
            f.write(json.dumps({"proto": proto, "conn": conn, "stream": stream,
                                "method": method, "target": target}) + "\n")

    def handle(self, method, target):
        """Returns (code, body bytes, watch events or None, watch timeout seconds)."""
        url = urllib.parse.urlsplit(target)
        q = dict(urllib.parse.parse_qsl(url.query))
        if method != "GET":
            return 405, b"{}", None, 0
        if url.path == "/api/v1/nodes" and q.get("watch") in ("1", "true"):
            # Everything after the list: one added, one modified, one deleted, a bookmark.
            since = int(q.get("resourceVersion") or 0)
            script = [("ADDED", node(self.nodes, LIST_RV + 1)),
                      ("MODIFIED", node(0, LIST_RV + 2)),
                      ("DELETED", node(1, LIST_RV + 3)),
                      ("BOOKMARK", {"metadata": {"resourceVersion": str(LIST_RV + 4)}})]
            events = [json.dumps({"type": t, "object": o}).encode() + b"\n" for t, o in script
                      if int(o["metadata"]["resourceVersion"]) > since]
            return 200, b"", events, int(q.get("timeoutSeconds") or 30)
        if url.path == "/api/v1/nodes":
            start = int(q.get("continue") or 0)
            limit = int(q.get("limit") or self.nodes)
            end = min(self.nodes, start + limit)
            body = {"kind": "NodeList", "apiVersion": "v1",
                    "metadata": {"resourceVersion": str(LIST_RV),
                                 "continue": str(end) if end < self.nodes else ""},
                    "items": [node(i, 1 + i) for i in range(start, end)]}
            return 200, json.dumps(body).encode(), None, 0
        if url.path.startswith("/api/v1/nodes/"):
            name = url.path.rsplit("/", 1)[1]
            if name.startswith("node-") and name[5:].isdigit() and int(name[5:]) < self.nodes:
                return 200, json.dumps(node(int(name[5:]), 1 + int(name[5:]))).encode(), None, 0
            code, body = not_found(name)
            return code, json.dumps(body).encode(), None, 0
        code, body = not_found(url.path)
        return code, json.dumps(body).encode(), None, 0


class H2Connection:
    """One HTTP/2 connection: requests are answered on their streams; data waits for the
    peer's flow-control window."""

    def __init__(self, sock, api, conn_id):
        self.sock, self.api, self.conn_id = sock, api, conn_id
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.out = {}       # stream id -> bytearray still to send
        self.ending = {}    # stream id -> monotonic time to end the stream (None: when sent)
        self.headers = {}   # stream id -> request headers

    def run(self):
        self.h2.initiate_connection()
        self.flush()
        while True:
            wait = 0 if self.sock.pending() else 0.05
            readable, _, _ = select.select([self.sock], [], [], wait)
            if readable or self.sock.pending():
                try:
                    data = self.sock.recv(65536)
                except (ssl.SSLError, OSError):
                    return
                if not data:
                    return
                for ev in self.h2.receive_data(data):
                    self.on_event(ev)
            self.pump()
            self.flush()

    def on_event(self, ev):
        if isinstance(ev, h2.events.RequestReceived):
            self.headers[ev.stream_id] = dict(ev.headers)
        elif isinstance(ev, h2.events.StreamEnded):
            hdr = self.headers.pop(ev.stream_id, {})
            self.answer(ev.stream_id, hdr.get(":method", ""), hdr.get(":path", ""))
        elif isinstance(ev, h2.events.StreamReset):
            self.out.pop(ev.stream_id, None)
            self.ending.pop(ev.stream_id, None)
        elif isinstance(ev, h2.events.DataReceived):
            self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)

    def answer(self, sid, method, target):
        self.api.log("h2", self.conn_id, sid, method, target)
        code, body, events, timeout = self.api.handle(method, target)
        self.h2.send_headers(sid, [(":status", str(code)), ("content-type", "application/json")])
        if events is None:
            self.out[sid] = bytearray(body)
            self.ending[sid] = None
        else:
            self.out[sid] = bytearray(b"".join(events))
            self.ending[sid] = time.monotonic() + timeout

    def pump(self):
        now = time.monotonic()
        for sid in list(self.out):
            buf = self.out[sid]
            while buf:
                n = min(len(buf), self.h2.local_flow_control_window(sid),
                        self.h2.max_outbound_frame_size)
                if n <= 0:
                    break
                self.h2.send_data(sid, bytes(buf[:n]))
                del buf[:n]
            end_at = self.ending[sid]
            if not buf and (end_at is None or now >= end_at):
                self.h2.end_stream(sid)
                del self.out[sid], self.ending[sid]

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)


def serve_http1(sock, api, conn_id):
    """HTTP/1.1 with keep-alive, for clients that did not offer h2 (plain answers only)."""
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            try:
                data = sock.recv(65536)
            except (ssl.SSLError, OSError):
                return
            if not data:
                return
            buf += data
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        while len(buf) < length:
            buf += sock.recv(65536)
        buf = buf[length:]
        api.log("http/1.1", conn_id, 0, method, target)
        code, body, events, _ = api.handle(method, target)
        if events is not None:
            code, body = 400, b'{"message":"watches are served over HTTP/2 only here"}'
        sock.sendall(f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


def serve(listener, ctx, api, stop):
    conn_id = 0
    while not stop.is_set():
        readable, _, _ = select.select([listener], [], [], 0.1)
        if not readable:
            continue
        raw, _ = listener.accept()
        conn_id += 1

        def one(raw=raw, cid=conn_id):
            try:
                sock = ctx.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError):
                raw.close()
                return
            try:
                if sock.selected_alpn_protocol() == "h2":
                    H2Connection(sock, api, cid).run()
                else:
                    serve_http1(sock, api, cid)
            except Exception as e:  # a broken connection ends only itself
                print(f"h2_server: connection {cid}: {e!r}", file=sys.stderr)
            finally:
                sock.close()
        threading.Thread(target=one, daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1200)
    ap.add_argument("program", nargs="+")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ccm-h2-")
    try:
        ca, cert, key = make_ca_and_cert(work)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        log_path = os.path.join(work, "requests.jsonl")
        open(log_path, "w").close()
        api = Api(args.nodes, log_path)
        stop = threading.Event()
        threading.Thread(target=serve, args=(listener, ctx, api, stop), daemon=True).start()
        env = dict(os.environ, H2_URL=f"https://127.0.0.1:{listener.getsockname()[1]}",
                   H2_CA=ca, H2_LOG=log_path, H2_NODES=str(args.nodes))
        rc = subprocess.call(args.program, env=env)
        stop.set()
        return rc
    finally:
        if not os.environ.get("CCM_KEEP_TEST_DIRS"):
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
