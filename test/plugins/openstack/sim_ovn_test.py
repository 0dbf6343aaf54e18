#!/usr/bin/env python3
"""The simulator's Octavia refuses, for load balancers of the ovn provider, what Octavia's ovn
driver refuses (501 with the driver's reason), and nothing is made: additional VIPs,
TERMINATED_HTTPS and HTTP listeners, allowed_cidrs, pools of other protocols or algorithms,
HTTP health monitors and members with a monitor port. The same requests pass with amphora.

Environment (set by meson): CCM_SOURCE_DIR.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_tls_test  # noqa: E402


class SimOvnTest(unittest.TestCase):
    setUp = sim_tls_test.SimTlsTest.setUp
    tearDown = sim_tls_test.SimTlsTest.tearDown
    api = sim_tls_test.SimTlsTest.api
    active = sim_tls_test.SimTlsTest.active

    def refused(self, answer, reason):
        status, out = answer
        self.assertEqual(status, 501, out)
        self.assertEqual(out["faultstring"],
                         "Provider 'ovn' does not support a requested option: " + reason)

    def lb_count(self):
        return len(self.api("GET", self.octavia + "/loadbalancers")[1]["loadbalancers"])

    def create(self, provider, **fields):
        spec = {"name": "lb", "vip_subnet_id": "sub-private", "provider": provider}
        spec.update(fields)
        return self.api("POST", self.octavia + "/loadbalancers", {"loadbalancer": spec})

    def test_additional_vips_and_populated_creates(self):
        extra = [{"subnet_id": "sub-private6"}]
        self.refused(self.create("ovn", additional_vips=extra),
                     "OVN provider does not support additional VIPs")
        https = [{"protocol": "TERMINATED_HTTPS", "protocol_port": 443,
                  "default_tls_container_ref": "x"}]
        self.refused(self.create("ovn", listeners=https),
                     "OVN provider does not support TERMINATED_HTTPS protocol")
        pool = {"protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
        self.refused(self.create("ovn", listeners=[{"protocol": "TCP", "protocol_port": 80,
                                                    "default_pool": pool}]),
                     "OVN provider does not support ROUND_ROBIN algorithm")
        self.assertEqual(self.lb_count(), 0)
        status, out = self.create("amphora", additional_vips=extra)
        self.assertEqual(status, 201, out)
        self.assertEqual(len(out["loadbalancer"]["additional_vips"]), 1)

    def test_children(self):
        status, out = self.create("ovn")
        self.assertEqual(status, 201, out)
        lb_id = out["loadbalancer"]["id"]
        self.active(lb_id)

        def post(kind, spec):
            return self.api("POST", self.octavia + "/" + kind + "s", {kind: spec})

        self.refused(post("listener", {"loadbalancer_id": lb_id, "protocol": "HTTP",
                                       "protocol_port": 80}),
                     "OVN provider does not support HTTP protocol")
        self.refused(post("listener", {"loadbalancer_id": lb_id, "protocol": "TCP",
                                       "protocol_port": 80, "allowed_cidrs": ["10.0.0.0/8"]}),
                     "OVN provider does not support allowed_cidrs option")
        status, out = post("listener", {"loadbalancer_id": lb_id, "protocol": "TCP",
                                        "protocol_port": 80})
        self.assertEqual(status, 201, out)
        lid = out["listener"]["id"]
        self.active(lb_id)
        self.refused(post("pool", {"listener_id": lid, "protocol": "PROXY",
                                   "lb_algorithm": "SOURCE_IP_PORT"}),
                     "OVN provider does not support PROXY protocol")
        self.refused(post("pool", {"listener_id": lid, "protocol": "TCP",
                                   "lb_algorithm": "LEAST_CONNECTIONS"}),
                     "OVN provider does not support LEAST_CONNECTIONS algorithm")
        status, out = post("pool", {"listener_id": lid, "protocol": "TCP",
                                    "lb_algorithm": "SOURCE_IP_PORT"})
        self.assertEqual(status, 201, out)
        pid = out["pool"]["id"]
        self.active(lb_id)
        self.refused(self.api("PUT", self.octavia + "/pools/" + pid,
                              {"pool": {"lb_algorithm": "ROUND_ROBIN"}}),
                     "OVN provider does not support ROUND_ROBIN algorithm")
        self.refused(post("healthmonitor", {"pool_id": pid, "type": "HTTP", "delay": 5,
                                            "timeout": 3, "max_retries": 1}),
                     "OVN provider does not support HTTP health monitor type. "
                     "Supported types: TCP, UDP-CONNECT")
        self.refused(self.api("PUT", self.octavia + "/pools/" + pid + "/members",
                              {"members": [{"address": "10.0.0.11", "protocol_port": 30080,
                                            "monitor_port": 30081}]}),
                     "OVN Load Balancer does not support different member monitor address or "
                     "port.")
        status, out = post("healthmonitor", {"pool_id": pid, "type": "TCP", "delay": 5,
                                             "timeout": 3, "max_retries": 1})
        self.assertEqual(status, 201, out)
        # Nothing refused changed the load balancer: it never left ACTIVE for them.
        listeners = self.api("GET", self.octavia + "/listeners")[1]["listeners"]
        self.assertEqual([l["protocol"] for l in listeners], ["TCP"])
        pools = self.api("GET", self.octavia + "/pools")[1]["pools"]
        self.assertEqual([p["lb_algorithm"] for p in pools], ["SOURCE_IP_PORT"])


if __name__ == "__main__":
    unittest.main()
