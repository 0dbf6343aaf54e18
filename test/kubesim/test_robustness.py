"""kubesim under hostile input: raw garbage on the socket, truncated and oversized requests,
and a seeded stream of random (mostly malformed) requests across every resource and verb.
kubesim must answer each with a proper status, never crash, and keep a consistent store."""

import json
import os
import random
import socket
import ssl
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from kubesim_harness import KubesimTestCase  # noqa: E402

PATHS = [
    "/api/v1/nodes", "/api/v1/nodes/n-0", "/api/v1/nodes/n-0/status",
    "/api/v1/namespaces/default/services", "/api/v1/namespaces/default/services/s-0",
    "/api/v1/namespaces/default/services/s-0/status", "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/configmaps/c-0", "/api/v1/namespaces/default/events",
    "/apis/events.k8s.io/v1/namespaces/default/events",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases/l-0", "/api/v1/namespaces",
    "/api/v1/namespaces/default/pods", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
    "/api/v1/namespaces/default/serviceaccounts/default/token",
    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    "/apis/authentication.k8s.io/v1/tokenreviews", "/api/v1/nodes/n-0/bogus", "/api",
    "/apis", "/version", "/openapi/v3", "/api/v1/namespaces/nope/configmaps",
]
QUERIES = ["", "?labelSelector=a%3Db", "?labelSelector=%28%28%28", "?fieldSelector=x",
           "?limit=2", "?limit=-1", "?continue=garbage", "?resourceVersion=9999999999",
           "?resourceVersion=abc", "?watch=1&timeoutSeconds=1", "?fieldValidation=Strict",
           "?dryRun=All", "?resourceVersionMatch=Exact&resourceVersion=1", "?%zz"]
CONTENT_TYPES = ["application/json", "application/merge-patch+json",
                 "application/strategic-merge-patch+json", "application/json-patch+json",
                 "application/apply-patch+yaml", "application/yaml", "text/plain",
                 "application/vnd.kubernetes.protobuf", ""]
SEEDS = [
    {"metadata": {"name": "n-0"}},
    {"metadata": {"name": "s-0"}, "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}},
    {"metadata": {"name": "c-0"}, "data": {"k": "v"}},
    {"metadata": {"name": "l-0"}, "spec": {"holderIdentity": "x", "leaseDurationSeconds": 5}},
    [{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}],
    {"metadata": {"labels": {"a": None}, "finalizers": ["a/b"]}, "spec": {"taints": []}},
    {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}, {"$patch": "replace"}]}},
    {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
    {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/b"]}},
    {"spec": {"resourceAttributes": {"verb": "get", "resource": "nodes"}, "user": "u"}},
]


def mutate(rng, value, depth=0):
    """Randomly corrupts a JSON value (types, keys, nesting, huge numbers, nulls)."""
    choice = rng.random()
    if depth > 4 or choice < 0.1:
        return rng.choice([None, True, 1e308, -1, "", "\u0000", "x" * rng.randint(0, 300), [], {},
                           "2026-13-45T99:99:99Z", 2 ** 63, "$patch"])
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if rng.random() < 0.1:
                continue
            key = k if rng.random() > 0.1 else rng.choice(["$patch", "bogus", "", "metadata", k * 2])
            out[key] = mutate(rng, v, depth + 1) if rng.random() < 0.5 else v
        if rng.random() < 0.2:
            out[rng.choice(["kind", "apiVersion", "spec", "status", "x"])] = mutate(rng, {}, depth + 1)
        return out
    if isinstance(value, list):
        out = [mutate(rng, v, depth + 1) for v in value]
        if rng.random() < 0.3:
            out.append(mutate(rng, {}, depth + 1))
        return out
    return value


def garbage_body(rng):
    kind = rng.random()
    if kind < 0.55:
        return json.dumps(mutate(rng, rng.choice(SEEDS)))
    if kind < 0.7:
        text = json.dumps(rng.choice(SEEDS))
        cut = rng.randint(0, len(text))
        return text[:cut]
    if kind < 0.8:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200)))
    if kind < 0.9:
        return "[" * rng.randint(1, 3000)  # deep nesting
    return ""


class RobustnessTest(KubesimTestCase):
    KUBESIM_ARGS = ("--nodes=2", "--watch-history=100")

    def raw(self, payload, read=True):
        s = socket.create_connection(("127.0.0.1", self.sim.port), timeout=10)
        tls = self.sim.ssl.wrap_socket(s, server_hostname="127.0.0.1")
        try:
            tls.sendall(payload)
            if read:
                return tls.recv(65536)
        except (ssl.SSLError, OSError):
            return b""
        finally:
            tls.close()
        return b""

    def assertHealthy(self):
        r = self.sim.get("/healthz")
        self.assertEqual((r.status, r.body), (200, "ok"), self.sim.read_log())

    def test_transport_garbage(self):
        self.assertIn(b"400", self.raw(b"\x00\x01 nonsense\r\n\r\n"))
        # Anonymous: RBAC refuses the unknown verb on "/".
        self.assertIn(b"403", self.raw(b"BLAH / HTTP/1.1\r\n\r\n"))
        self.assertIn(b"401", self.raw(b"BLAH / HTTP/1.1\r\nAuthorization: Bearer bad\r\n\r\n"))
        blah = self.raw(b"BLAH /api/v1/nodes HTTP/1.1\r\nAuthorization: Bearer " +
                        self.sim.admin_token.encode() + b"\r\n\r\n")
        self.assertIn(b"405", blah)
        self.raw(b"GET /api HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n")
        big_header = b"GET /api HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n"
        self.assertIn(b"431", self.raw(big_header))
        self.raw(b"GET /api HTTP/1.1\r\nHost: x\r\n", read=False)  # truncated, then closed
        # Plain HTTP on the TLS port.
        s = socket.create_connection(("127.0.0.1", self.sim.port), timeout=10)
        s.sendall(b"GET / HTTP/1.1\r\n\r\n")
        s.recv(100)
        s.close()
        # Chunked body over the limit.
        req = (b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
               b"Authorization: Bearer " + self.sim.admin_token.encode() +
               b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 1048576
        body = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(4)) + b"0\r\n\r\n"
        self.assertIn(b"413", self.raw(req + body))
        self.assertHealthy()

    def test_random_requests(self):
        rng = random.Random(20261121)
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        statuses = {}
        for i in range(600):
            path = rng.choice(PATHS) + rng.choice(QUERIES)
            method = rng.choice(methods)
            body = garbage_body(rng) if method in ("POST", "PUT", "PATCH", "DELETE") else None
            headers = {"Content-Type": rng.choice(CONTENT_TYPES)}
            if rng.random() < 0.1:
                headers["Accept"] = rng.choice(["application/vnd.kubernetes.protobuf", "*/*",
                                                "application/json;as=Table;v=v1;g=meta.k8s.io"])
            try:
                r = self.sim.request(method, path, body=body, headers=headers, timeout=15)
            except Exception as e:  # noqa: BLE001
                self.fail("request %d %s %s failed: %r\n%s" % (i, method, path, e,
                                                               self.sim.read_log()))
            statuses[r.status] = statuses.get(r.status, 0) + 1
            self.assertLess(r.status, 500 if r.status != 504 else 600, (method, path, r))
            if r.status >= 400 and r.header("Content-Type") == "application/json":
                status = r.json()
                self.assertEqual(status["kind"], "Status", r)
                self.assertEqual(status["code"], r.status, r)
        self.assertHealthy()
        # Every collection still lists as valid JSON with consistent metadata.
        for path in ("/api/v1/nodes", "/api/v1/namespaces/default/configmaps",
                     "/api/v1/namespaces/default/services",
                     "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                     "/api/v1/events", "/apis/events.k8s.io/v1/events"):
            lst = self.sim.get(path).json()
            for item in lst["items"]:
                self.assertTrue(item["metadata"]["name"])
                self.assertLessEqual(int(item["metadata"]["resourceVersion"]),
                                     int(lst["metadata"]["resourceVersion"]))
                got = self.sim.get(path.replace("/events", "/events") + "/" +
                                   item["metadata"]["name"]
                                   if "namespaces" in path else path + "/" + item["metadata"]["name"])
                if got.status == 200:
                    self.assertEqual(got.json()["metadata"]["resourceVersion"],
                                     item["metadata"]["resourceVersion"])
        self.assertGreater(len(statuses), 4, statuses)


if __name__ == "__main__":
    unittest.main(verbosity=2)
