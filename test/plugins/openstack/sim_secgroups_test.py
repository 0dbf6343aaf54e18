#!/usr/bin/env python3
"""The OpenStack simulator's Neutron security groups (openstack-sim/neutron_secgroups.py)
answer as Neutron does, so that the provider's tests against it mean something: the rule
validation (400), duplicates and groups in use (409), and the port update checks.

Environment (set by meson): CCM_SOURCE_DIR.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "openstack-sim"))
import openstack_sim  # noqa: E402


class SecurityGroupsTest(unittest.TestCase):

    def setUp(self):
        self.sim = openstack_sim.Sim()
        status, body = self.neutron("POST", "/security-groups",
                                    {"security_group": {"name": "g", "description": "d"}})
        self.assertEqual(status, 201)
        self.gid = body["security_group"]["id"]

    def neutron(self, method, rel, body=None, query=None):
        return self.sim.neutron(method, "/v2.0" + rel, query or {}, body)

    def rule(self, **fields):
        spec = {"security_group_id": self.gid, "direction": "ingress", "ethertype": "IPv4",
                "protocol": "tcp", "port_range_min": 30080, "port_range_max": 30080,
                "remote_ip_prefix": "10.0.0.0/24"}
        spec.update(fields)
        return self.neutron("POST", "/security-group-rules", {"security_group_rule": spec})

    def refused(self, status, kind, call, *args, **kwargs):
        with self.assertRaises(openstack_sim.HttpError) as ctx:
            call(*args, **kwargs)
        self.assertEqual(ctx.exception.status, status)
        self.assertEqual(ctx.exception.body["NeutronError"]["type"], kind)

    def test_new_group_has_an_egress_rule_per_family(self):
        _, body = self.neutron("GET", "/security-group-rules",
                               query={"security_group_id": [self.gid]})
        rules = body["security_group_rules"]
        self.assertEqual(sorted((r["direction"], r["ethertype"]) for r in rules),
                         [("egress", "IPv4"), ("egress", "IPv6")])

    def test_rule_validation(self):
        status, body = self.rule(remote_ip_prefix="10.0.0.7/24")
        self.assertEqual(status, 201)
        self.assertEqual(body["security_group_rule"]["remote_ip_prefix"], "10.0.0.0/24")
        self.refused(409, "SecurityGroupRuleExists", self.rule)
        self.refused(400, "SecurityGroupRuleInvalidProtocol", self.rule, protocol="tcpx")
        self.refused(400, "SecurityGroupInvalidPortRange", self.rule, port_range_min=30081)
        self.refused(400, "SecurityGroupInvalidPortValue", self.rule, port_range_min=0,
                     port_range_max=70000)
        self.refused(400, "InvalidInput", self.rule, remote_ip_prefix="10.0.0.300/24")
        self.refused(400, "SecurityGroupRuleParameterConflict", self.rule,
                     remote_ip_prefix="fd00::/64")
        self.refused(400, "SecurityGroupProtocolRequiredWithPorts", self.rule, protocol=None)
        self.refused(404, "SecurityGroupNotFound", self.rule, security_group_id="nope")

    def test_ports_and_deletion(self):
        port = self.sim.add_port({"network_id": "net-private", "fixed_ips": [
            {"subnet_id": "sub-private", "ip_address": "10.0.0.50"}]})
        path = "/ports/" + port["id"]
        self.refused(404, "SecurityGroupNotFound", self.neutron, "PUT", path,
                     {"port": {"security_groups": ["nope"]}})
        status, _ = self.neutron("PUT", path, {"port": {"security_groups": [self.gid]}})
        self.assertEqual(status, 200)
        _, body = self.neutron("GET", "/ports", query={"security_groups": [self.gid]})
        self.assertEqual([p["id"] for p in body["ports"]], [port["id"]])
        self.refused(409, "SecurityGroupInUse", self.neutron, "DELETE",
                     "/security-groups/" + self.gid)
        self.refused(409, "PortSecurityPortHasSecurityGroup", self.neutron, "PUT", path,
                     {"port": {"port_security_enabled": False}})
        self.neutron("PUT", path, {"port": {"security_groups": []}})
        self.neutron("PUT", path, {"port": {"port_security_enabled": False}})
        self.refused(400, "PortSecurityAndIPRequiredForSecurityGroups", self.neutron, "PUT",
                     path, {"port": {"security_groups": [self.gid]}})
        status, _ = self.neutron("DELETE", "/security-groups/" + self.gid)
        self.assertEqual(status, 204)
        self.assertEqual(self.sim.state()["security_group_rules"], [])
        self.refused(404, "SecurityGroupNotFound", self.neutron, "DELETE",
                     "/security-groups/" + self.gid)


if __name__ == "__main__":
    unittest.main(verbosity=2)
