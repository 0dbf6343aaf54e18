"""Fidelity: kubesim's history, watch cache and paging against a real kube-apiserver over etcd.

Each case quotes the row of the observations it covers ("Side effects the real server
applies": watch history, resourceVersion=0 reads, pagination, garbage continue token) and
checks the status code, reason and details a real v1.26+ server gives."""

import base64
import json
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from kubesim_harness import Kubesim, KubesimTestCase, wait_for  # noqa: E402

CM = "/api/v1/namespaces/default/configmaps"


def token_of(obj):
    """A continue token as the API server encodes it (URL-safe base64 without padding)."""
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def raw_get(sim, path):
    """GET returning (status, raw body bytes): the body must be checked before decoding."""
    conn = sim.connection()
    conn.request("GET", path, headers={"Authorization": "Bearer " + sim.admin_token})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


def create_cm(sim, name, ns="default", labels=None):
    body = {"metadata": {"name": name, "labels": labels or {}}}
    r = sim.request("POST", "/api/v1/namespaces/%s/configmaps" % ns, body)
    assert r.status == 201, r
    return r.json()


def create_namespace(sim, name):
    r = sim.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert r.status == 201, r
    # The namespace controller adds kube-root-ca.crt: wait, so lists are stable.
    wait_for(lambda: sim.get("/api/v1/namespaces/%s/configmaps/kube-root-ca.crt" % name)
             .status == 200, message="kube-root-ca.crt in " + name)


def current_rv(sim):
    return int(sim.get(CM).json()["metadata"]["resourceVersion"])


class WatchHistoryTest(KubesimTestCase):
    """Watch history (no compaction timer: these cases compact through the admin API)."""

    KUBESIM_ARGS = ("--compaction-interval=0", "--watch-cache-lag=0")

    def assertExpiredEvent(self, w):
        self.assertEqual(w.status, 200)
        ev = w.next()
        self.assertEqual(ev["type"], "ERROR", ev)
        self.assertEqual(ev["object"]["kind"], "Status")
        self.assertEqual(ev["object"]["code"], 410)
        self.assertEqual(ev["object"]["reason"], "Expired")
        self.assertIsNone(w.next(), "the stream ends after the ERROR event")
        return ev["object"]

    def test_watch_from_1_is_expired_at_once(self):
        """a watch from an old resourceVersion (e.g. `1`) gets `ERROR` 410 `Expired` at once"""
        w = self.sim.watch(CM + "?watch=1&resourceVersion=1")
        status = self.assertExpiredEvent(w)
        self.assertRegex(status["message"], r"^too old resource version: 1 \(\d+\)$")

    def test_after_compaction_older_rvs_are_expired(self):
        """after [compaction] any resourceVersion older than the compaction point gives 410"""
        create_cm(self.sim, "hist-before")
        old = current_rv(self.sim)
        for i in range(3):
            create_cm(self.sim, "hist-page-%d" % i)
        first = self.sim.get(CM + "?limit=1").json()
        token = first["metadata"]["continue"]
        create_cm(self.sim, "hist-after-token")  # the token's resourceVersion gets old
        # Within the window: served.
        self.assertEqual(self.sim.get(CM + "?resourceVersion=%d&resourceVersionMatch=Exact"
                                      % old).status, 200)
        self.sim.admin("POST", "compact")
        # A watch: HTTP 200 and one ERROR event.
        self.assertExpiredEvent(self.sim.watch(CM + "?watch=1&resourceVersion=%d" % old))
        # An exact list: HTTP 410, etcd's "compacted" wording.
        r = self.sim.get(CM + "?resourceVersion=%d&resourceVersionMatch=Exact" % old)
        self.assertStatus(r, 410, "Expired")
        self.assertEqual(r.json()["message"],
                         "The resourceVersion for the provided list is too old.")
        # A continue token from before: 410 with a fresh inconsistent token.
        r = self.sim.get(CM + "?limit=1&continue=" + token)
        self.assertStatus(r, 410, "Expired")
        self.assertTrue(r.json()["message"].startswith(
            "The provided continue parameter is too old to display a consistent list result."))
        self.assertTrue(r.json()["metadata"]["continue"])

    def test_future_rv_list_is_504_too_large(self):
        """A future resourceVersion: list → 504 after ~3 s"""
        cur = current_rv(self.sim)
        r = self.sim.get(CM + "?resourceVersion=%d" % (cur + 100000))
        self.assertStatus(r, 504, "Timeout")
        body = r.json()
        self.assertTrue(body["message"].startswith("Timeout: Too large resource version: %d, current: "
                                                   % (cur + 100000)), body)
        self.assertEqual(body["details"]["retryAfterSeconds"], 1)
        self.assertEqual(body["details"]["causes"],
                         [{"reason": "ResourceVersionTooLarge",
                           "message": "Too large resource version"}])
        # A GET at a future resourceVersion waits the same way.
        self.assertStatus(self.sim.get(CM + "/hist-none?resourceVersion=%d" % (cur + 100000)),
                          504, "Timeout")

    def test_future_rv_list_is_served_once_reached(self):
        """A future resourceVersion: list → [waits for it] (504 only if not reached in ~3 s)"""
        cur = current_rv(self.sim)
        result = {}

        def list_ahead():
            result["r"] = self.sim.get(CM + "?resourceVersion=%d" % (cur + 2))

        t = threading.Thread(target=list_ahead)
        t.start()
        create_cm(self.sim, "hist-ahead-1")
        create_cm(self.sim, "hist-ahead-2")
        t.join(30)
        r = result["r"]
        self.assertEqual(r.status, 200, r)
        self.assertGreaterEqual(int(r.json()["metadata"]["resourceVersion"]), cur + 2)

    def test_future_rv_watch_is_open_and_silent(self):
        """A future resourceVersion: ... watch → an open, silent stream"""
        cur = current_rv(self.sim)
        ahead = cur + 3
        w = self.sim.watch(CM + "?watch=1&resourceVersion=%d" % ahead)
        self.assertEqual(w.status, 200)
        wait_for(lambda: self.sim.admin("GET", "status")["watchers"] >= 1)
        names = ["hist-silent-%d" % i for i in range(5)]
        for n in names:
            create_cm(self.sim, n)
        # Nothing up to the requested resourceVersion is delivered: the first event is the
        # first write past it.
        ev = w.next()
        self.assertEqual(ev["type"], "ADDED")
        self.assertGreater(int(ev["object"]["metadata"]["resourceVersion"]), ahead)
        self.assertEqual(ev["object"]["metadata"]["name"], names[3])
        w.close()


class CompactionTimerTest(unittest.TestCase):
    """etcd compaction runs every ~5 minutes (here every second): the history up to the
    previous run's resourceVersion is forgotten."""

    def test_compaction_runs_on_its_timer(self):
        """etcd compaction runs every ~5 minutes, after which any resourceVersion older than
        the compaction point gives 410"""
        sim = Kubesim("--compaction-interval=1s").start()
        try:
            create_cm(sim, "timer-1")
            old = current_rv(sim)
            create_cm(sim, "timer-2")
            exact = CM + "?resourceVersion=%d&resourceVersionMatch=Exact" % old
            wait_for(lambda: sim.get(exact).status == 410, timeout=30,
                     message="compaction past %d" % old)
            r = sim.get(exact)
            self.assertEqual(r.json()["reason"], "Expired")
            w = sim.watch(CM + "?watch=1&resourceVersion=%d" % old)
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["code"]), ("ERROR", 410))
            w.close()
        finally:
            sim.cleanup()


class WatchCacheTest(unittest.TestCase):
    """`resourceVersion=0` reads are served from the watch cache."""

    @classmethod
    def setUpClass(cls):
        # A cache an hour behind: every write after start-up is missing from rv=0 reads.
        cls.sim = Kubesim("--watch-cache-lag=1h", "--compaction-interval=0").start()

    @classmethod
    def tearDownClass(cls):
        cls.sim.cleanup()

    def test_rv0_get_and_list_may_return_the_previous_version(self):
        """`resourceVersion=0` reads are served from the watch cache: ... 4 GETs and 2 LISTs
        returned the previous version"""
        sim = self.sim
        created = create_cm(sim, "cache-1")
        path = CM + "/cache-1"
        self.assertEqual(sim.get(path).status, 200)  # quorum read: fresh
        self.assertStatus(sim.get(path + "?resourceVersion=0"), 404)  # not in the cache yet
        names = [i["metadata"]["name"] for i in sim.get(CM).json()["items"]]
        self.assertIn("cache-1", names)
        cached = sim.get(CM + "?resourceVersion=0").json()
        self.assertNotIn("cache-1", [i["metadata"]["name"] for i in cached["items"]])
        self.assertLess(int(cached["metadata"]["resourceVersion"]),
                        int(created["metadata"]["resourceVersion"]))
        # An update: the cache still has nothing (or the previous version).
        r = sim.request("PATCH", path, {"data": {"k": "v"}},
                        content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(sim.get(path).json()["data"], {"k": "v"})
        self.assertStatus(sim.get(path + "?resourceVersion=0"), 404)
        # An informer's list + watch from the cache's resourceVersion still sees every write.
        w = sim.watch(CM + "?watch=1&resourceVersion=" + cached["metadata"]["resourceVersion"])
        ev = w.events_until(lambda e: e["object"]["metadata"]["name"] == "cache-1" and
                            e["type"] == "MODIFIED")
        self.assertEqual(ev[-1]["object"]["data"], {"k": "v"})
        w.close()

    def test_rv0_watch_starts_from_the_cache(self):
        """`resourceVersion=0` reads are served from the watch cache (a watch from `0` too:
        its initial state is the cache's, then every later change)"""
        sim = self.sim
        create_cm(sim, "cache-w")
        r = sim.request("PATCH", CM + "/cache-w", {"data": {"k": "v"}},
                        content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200, r)
        w = sim.watch(CM + "?watch=1&resourceVersion=0")
        seen = w.events_until(lambda e: e["object"]["metadata"]["name"] == "cache-w" and
                              e["type"] == "MODIFIED")
        mine = [(e["type"], e["object"].get("data")) for e in seen
                if e["object"]["metadata"]["name"] == "cache-w"]
        self.assertEqual(mine, [("ADDED", None), ("MODIFIED", {"k": "v"})])
        w.close()
        # A watch without a resourceVersion starts from the latest state.
        w = sim.watch(CM + "?watch=1")
        ev = w.events_until(lambda e: e["object"]["metadata"]["name"] == "cache-w")[-1]
        self.assertEqual((ev["type"], ev["object"]["data"]), ("ADDED", {"k": "v"}))
        w.close()

    def assertStatus(self, resp, code):
        self.assertEqual(resp.status, code, resp)


class UnorderedCacheListTest(KubesimTestCase):
    KUBESIM_ARGS = ("--watch-cache-lag=0",)

    def test_rv0_list_order_is_not_sorted(self):
        """`resourceVersion=0` reads ... list order is not sorted"""
        ns = "/api/v1/namespaces"
        create_namespace(self.sim, "order")
        for i in range(30):
            create_cm(self.sim, "o-%02d" % i, ns="order")
        path = ns + "/order/configmaps"
        fresh = [i["metadata"]["name"] for i in self.sim.get(path).json()["items"]]
        self.assertEqual(fresh, sorted(fresh), "quorum lists come in key order")
        orders = []
        for _ in range(5):
            items = self.sim.get(path + "?resourceVersion=0").json()["items"]
            orders.append([i["metadata"]["name"] for i in items])
        for o in orders:
            self.assertEqual(sorted(o), sorted(fresh))
        self.assertTrue(any(o != sorted(o) for o in orders), orders)


class PaginationTest(KubesimTestCase):
    KUBESIM_ARGS = ("--watch-cache-lag=0", "--compaction-interval=0")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        create_namespace(cls.sim, "pages")
        for name, team in (("a-1", "x"), ("a-2", "x"), ("b-1", "y"), ("b-2", "y")):
            create_cm(cls.sim, name, ns="pages", labels={"team": team})

    PATH = "/api/v1/namespaces/pages/configmaps"

    def test_last_page_may_be_empty_with_a_token_before_it(self):
        """Pagination may end with an empty page that still carries a `continue` token"""
        first = self.sim.get(self.PATH + "?labelSelector=team%3Dx&limit=2").json()
        self.assertEqual([i["metadata"]["name"] for i in first["items"]], ["a-1", "a-2"])
        # More keys follow in etcd, so the page carries a token although nothing else matches.
        token = first["metadata"].get("continue")
        self.assertTrue(token, first["metadata"])
        self.assertNotIn("remainingItemCount", first["metadata"])
        last = self.sim.get(self.PATH + "?labelSelector=team%3Dx&limit=2&continue=" + token)
        self.assertEqual(last.status, 200, last)
        self.assertEqual(last.json()["items"], [])
        self.assertNotIn("continue", last.json()["metadata"])

    def test_paging_without_selector_reports_the_remainder(self):
        """(control) without a selector etcd knows the count: no token on the last page"""
        first = self.sim.get(self.PATH + "?limit=3").json()
        self.assertEqual(first["metadata"]["remainingItemCount"], 2)  # b-2, kube-root-ca.crt
        page = self.sim.get(self.PATH + "?limit=3&continue=" + first["metadata"]["continue"])
        self.assertEqual(len(page.json()["items"]), 2)
        self.assertNotIn("continue", page.json()["metadata"])

    def test_continue_token_format(self):
        """(the real server's token is base64 of JSON, URL-safe alphabet, no padding)"""
        token = self.sim.get(self.PATH + "?limit=1").json()["metadata"]["continue"]
        self.assertNotIn("=", token)
        decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        self.assertEqual(decoded["v"], "meta.k8s.io/v1")
        self.assertIsInstance(decoded["rv"], int)
        # Relative to the listed namespace, just past the last key returned.
        self.assertEqual(decoded["start"], "a-1\u0000")

    def assertBadContinue(self, token, message):
        status, body = raw_get(self.sim, self.PATH + "?limit=1&continue=" + token)
        self.assertEqual(status, 400)
        text = body.decode("utf-8")  # strict: a raw 0x81 byte would raise here
        st = json.loads(text)
        self.assertEqual((st["kind"], st["status"], st["reason"], st["code"]),
                         ("Status", "Failure", "BadRequest", 400))
        self.assertEqual(st["message"], "invalid continue token: continue key is not valid" +
                         message)

    def test_garbage_continue_token_is_400_with_valid_json(self):
        """Garbage `continue` token → 400 with a valid JSON Status body (kubesim's body held a
        raw 0x81 byte)"""
        # "gQ" is base64 of the single byte 0x81.
        self.assertBadContinue("gQ", ": invalid character '\\u0081' looking for beginning of "
                                     "value")
        self.assertBadContinue("gYE", ": invalid character '\\u0081' looking for beginning of "
                                      "value")
        self.assertBadContinue("not-base64%21", ": illegal base64 data at input byte 10")
        self.assertBadContinue("%FF%FE", ": illegal base64 data at input byte 0")

    def test_continue_token_is_decoded_strictly(self):
        """(no lenient base64: padding and the standard alphabet are refused)"""
        good = {"v": "meta.k8s.io/v1", "rv": 5, "start": "a-1\u0000"}
        raw = base64.b64encode(json.dumps(good).encode()).decode()
        padded = raw if raw.endswith("=") else raw[:-1] + "="
        first_bad = min(i for i, c in enumerate(padded) if c in "+/=")
        self.assertBadContinue(
            padded.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
            ": illegal base64 data at input byte %d" % first_bad)
        std = base64.b64encode(b'{"v":"meta.k8s.io/v1","rv":5,"start":"\xff\xfe?>"}').decode()
        self.assertTrue("+" in std or "/" in std, std)
        first_bad = min(i for i, c in enumerate(std) if c in "+/")
        self.assertBadContinue(std.replace("+", "%2B").replace("/", "%2F").rstrip("="),
                               ": illegal base64 data at input byte %d" % first_bad)
        self.assertBadContinue(token_of({"v": "meta.k8s.io/v2", "rv": 5, "start": "a"}),
                               ": server does not recognize this encoded version "
                               "meta.k8s.io/v2")
        self.assertBadContinue(token_of({"v": "meta.k8s.io/v1", "rv": 0, "start": "a"}),
                               ": incorrect encoded start resourceVersion (version "
                               "meta.k8s.io/v1)")
        self.assertBadContinue(token_of({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}),
                               ": encoded start key empty (version meta.k8s.io/v1)")
        self.assertBadContinue(token_of({"v": "meta.k8s.io/v1", "rv": "5", "start": "a"}),
                               ": json: cannot unmarshal string into Go struct field "
                               "continueToken.rv of type int64")
        self.assertBadContinue(token_of({"v": "meta.k8s.io/v1", "rv": 5, "start": "../x"}),
                               ": ../x")

    def test_valid_handmade_token_is_followed(self):
        """(control) a well-formed token from the client continues after its start key"""
        rv = self.sim.get(self.PATH).json()["metadata"]["resourceVersion"]
        token = token_of({"v": "meta.k8s.io/v1", "rv": int(rv), "start": "b-1\u0000"})
        r = self.sim.get(self.PATH + "?limit=5&continue=" + token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual([i["metadata"]["name"] for i in r.json()["items"]],
                         ["b-2", "kube-root-ca.crt"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
