#!/usr/bin/env python3
"""The simulator's Barbican and Octavia TLS checks, spoken to directly over HTTP: containers
and secrets with 404/403 by Barbican's read rules, and Octavia's 400s for a TERMINATED_HTTPS
listener without a certificate, a certificate on another protocol, a reference it cannot
read (on create and on update) and a pool protocol TERMINATED_HTTPS cannot carry.

Environment (set by meson): CCM_SOURCE_DIR.
"""
import json
import os
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_test import OsSim  # noqa: E402


class SimTlsTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.sim = OsSim(self.tmp.name, {}).__enter__()
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "demo", "domain": {"id": "default"}, "password": "demo-password"}}},
            "scope": {"project": {"id": "p-demo"}}}}
        req = urllib.request.Request(self.sim.url + "/identity/v3/auth/tokens",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            self.token = r.headers["X-Subject-Token"]
            catalog = json.loads(r.read())["token"]["catalog"]
        urls = {c["type"]: e["url"] for c in catalog for e in c["endpoints"]
                if e["region"] == "RegionOne" and e["interface"] == "public"}
        self.octavia = urls["load-balancer"] + "/v2.0/lbaas"
        self.barbican = urls["key-manager"] + "/v1"

    def tearDown(self):
        self.sim.__exit__(None, None, None)
        self.tmp.cleanup()

    def api(self, method, url, body=None):
        req = urllib.request.Request(url, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "X-Auth-Token": self.token})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read().decode()
                return r.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read().decode() or "null")

    def active(self, lb_id):
        for _ in range(20):
            status, out = self.api("GET", self.octavia + "/loadbalancers/" + lb_id)
            if out["loadbalancer"]["provisioning_status"] == "ACTIVE":
                return
        self.fail("load balancer %s not ACTIVE" % lb_id)

    def test_barbican_read_rules(self):
        mine = self.sim.control("barbican/containers", {"name": "mine"})
        status, out = self.api("GET", mine["container_ref"])
        self.assertEqual(status, 200)
        self.assertEqual(out["type"], "certificate")
        self.assertEqual({s["name"] for s in out["secret_refs"]}, {"certificate", "private_key"})
        status, out = self.api("GET", out["secret_refs"][0]["secret_ref"])
        self.assertEqual((status, out["status"]), (200, "ACTIVE"))
        self.assertEqual(self.api("GET", self.barbican + "/containers/nope")[0], 404)

        other = self.sim.control("barbican/containers", {"project_id": "p-other",
                                                         "creator_id": "u-other"})
        status, out = self.api("GET", other["container_ref"])
        self.assertEqual((status, out["title"]), (403, "Forbidden"))
        shared = self.sim.control("barbican/containers", {
            "project_id": "p-other", "creator_id": "u-other", "project_access": False,
            "acl_users": ["u-demo"]})
        self.assertEqual(self.api("GET", shared["container_ref"])[0], 200)
        status, out = self.api("GET", shared["container_ref"] + "/acl")
        self.assertEqual(out["read"]["users"], ["u-demo"])

    def test_octavia_tls_listener_checks(self):
        ref = self.sim.control("barbican/containers", {})["container_ref"]
        other = self.sim.control("barbican/containers", {"project_id": "p-other",
                                                         "creator_id": "u-other"})["container_ref"]
        status, out = self.api("POST", self.octavia + "/loadbalancers",
                               {"loadbalancer": {"name": "lb", "vip_subnet_id": "sub-private"}})
        self.assertEqual(status, 201)
        lb_id = out["loadbalancer"]["id"]
        self.active(lb_id)

        def listener(**fields):
            spec = {"loadbalancer_id": lb_id, "protocol": "TERMINATED_HTTPS",
                    "protocol_port": 443}
            spec.update(fields)
            return self.api("POST", self.octavia + "/listeners", {"listener": spec})

        status, out = listener()
        self.assertEqual(status, 400)
        self.assertIn("An SNI or default certificate container reference must be provided",
                      out["faultstring"])
        status, out = listener(protocol="TCP", default_tls_container_ref=ref)
        self.assertEqual(status, 400)
        self.assertIn("only allowed on TERMINATED_HTTPS", out["faultstring"])
        status, out = listener(default_tls_container_ref=other)
        self.assertEqual(status, 400)
        self.assertEqual(out["faultstring"], "Could not retrieve certificate: " + other)

        status, out = listener(default_tls_container_ref=ref, sni_container_refs=[ref])
        self.assertEqual(status, 201)
        lid = out["listener"]["id"]
        self.active(lb_id)
        status, out = self.api("POST", self.octavia + "/pools", {"pool": {
            "listener_id": lid, "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}})
        self.assertEqual(status, 400)
        self.assertIn("The pool protocol 'TCP' is invalid while the listener protocol is "
                      "'TERMINATED_HTTPS'", out["faultstring"])
        status, _ = self.api("POST", self.octavia + "/pools", {"pool": {
            "listener_id": lid, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}})
        self.assertEqual(status, 201)
        self.active(lb_id)

        # Updates: an unreadable new reference is refused, other changes pass.
        status, out = self.api("PUT", self.octavia + "/listeners/" + lid,
                               {"listener": {"default_tls_container_ref": other}})
        self.assertEqual(status, 400)
        status, _ = self.api("PUT", self.octavia + "/listeners/" + lid,
                             {"listener": {"connection_limit": 10}})
        self.assertEqual(status, 200)

        # A fully populated create with a bad certificate stores nothing.
        before = len(self.sim.state()["loadbalancers"])
        status, out = self.api("POST", self.octavia + "/loadbalancers", {"loadbalancer": {
            "name": "full", "vip_subnet_id": "sub-private", "listeners": [{
                "protocol": "TERMINATED_HTTPS", "protocol_port": 443,
                "default_tls_container_ref": other}]}})
        self.assertEqual(status, 400)
        self.assertEqual(len(self.sim.state()["loadbalancers"]), before)


if __name__ == "__main__":
    unittest.main(verbosity=2)
