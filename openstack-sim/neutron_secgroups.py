"""Neutron security groups and rules for openstack_sim.py.

The resources /v2.0/security-groups and /v2.0/security-group-rules with Neutron's validation
(400 for a bad protocol, port range or CIDR, or a CIDR of the other family; 409 for a
duplicate rule and for deleting a group a port still uses), and the checks a port update
makes on its security_groups (every group must exist; a port with port security off takes
none). The caller holds the simulator's lock.
"""

import ipaddress
import re
import uuid

# Protocol names Neutron accepts besides numbers 0-255.
PROTOCOL_NAMES = {"ah", "dccp", "egp", "esp", "gre", "hopopt", "icmp", "igmp", "ipip",
                  "ipv6-encap", "ipv6-frag", "ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts",
                  "ipv6-route", "ospf", "pgm", "rsvp", "sctp", "tcp", "udp", "udplite", "vrrp"}
PORT_PROTOCOLS = {"tcp", "udp", "sctp", "dccp", "udplite", "6", "17", "132", "33", "136"}


class NeutronError(Exception):
    def __init__(self, status, kind, message):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


def _bad(kind, message):
    return NeutronError(400, kind, message)


class SecurityGroups:
    def __init__(self, stamp):
        self.stamp = stamp  # () -> timestamp string
        self.groups = {}
        self.rules = {}

    # ---- views -------------------------------------------------------------------------------

    def group_view(self, g):
        out = dict(g)
        out["security_group_rules"] = [r for r in self.rules.values()
                                       if r["security_group_id"] == g["id"]]
        return out

    def state(self):
        return {"security_groups": [self.group_view(g) for g in self.groups.values()],
                "security_group_rules": list(self.rules.values())}

    # ---- groups ------------------------------------------------------------------------------

    def add_group(self, spec, default_egress=True):
        g = {"id": spec.get("id") or str(uuid.uuid4()), "name": spec.get("name", ""),
             "description": spec.get("description", ""), "tags": list(spec.get("tags", [])),
             "stateful": True, "project_id": "p-demo", "tenant_id": "p-demo",
             "revision_number": 1, "created_at": self.stamp(), "updated_at": self.stamp()}
        if not isinstance(g["name"], str) or len(g["name"]) > 255:
            raise _bad("InvalidInput", "Invalid input for name. Reason: '%s' exceeds maximum "
                       "length of 255." % g["name"])
        self.groups[g["id"]] = g
        if default_egress:
            # Neutron gives every new group an egress rule per family.
            for eth in ("IPv4", "IPv6"):
                self.add_rule({"security_group_id": g["id"], "direction": "egress",
                               "ethertype": eth})
        return g

    def group(self, gid):
        g = self.groups.get(gid)
        if g is None:
            raise NeutronError(404, "SecurityGroupNotFound",
                               "Security group %s does not exist" % gid)
        return g

    def delete_group(self, gid, ports):
        g = self.group(gid)
        if any(gid in p["security_groups"] for p in ports):
            raise NeutronError(409, "SecurityGroupInUse", "Security Group %s in use." % gid)
        for rid in [r["id"] for r in self.rules.values() if r["security_group_id"] == gid]:
            del self.rules[rid]
        del self.groups[g["id"]]

    # ---- rules -------------------------------------------------------------------------------

    @staticmethod
    def _protocol(value):
        if value is None or value == "" or value == "any":
            return None
        p = str(value).lower()
        if p.isdigit():
            if int(p) > 255:
                raise _bad("SecurityGroupRuleInvalidProtocol",
                           "Security group rule protocol %s not supported. Only protocol values "
                           "%s and integer representations [0 to 255] are supported."
                           % (value, sorted(PROTOCOL_NAMES)))
            return p
        if p not in PROTOCOL_NAMES:
            raise _bad("SecurityGroupRuleInvalidProtocol",
                       "Security group rule protocol %s not supported. Only protocol values %s "
                       "and integer representations [0 to 255] are supported."
                       % (value, sorted(PROTOCOL_NAMES)))
        return p

    @staticmethod
    def _port(value):
        if value is None:
            return None
        if isinstance(value, bool) or not re.fullmatch(r"\d+", str(value)):
            raise _bad("InvalidInput", "Invalid input for port_range: '%s' is not an integer"
                       % value)
        return int(value)

    def add_rule(self, spec):
        gid = spec.get("security_group_id", "")
        self.group(gid)
        direction = spec.get("direction")
        if direction not in ("ingress", "egress"):
            raise _bad("InvalidInput", "Invalid input for direction. Reason: %s is not in "
                       "valid_values." % direction)
        ethertype = spec.get("ethertype", "IPv4")
        if ethertype not in ("IPv4", "IPv6"):
            raise _bad("SecurityGroupRuleInvalidEtherType",
                       "Security group rule for ethertype '%s' not supported. Allowed values are "
                       "['IPv4', 'IPv6']." % ethertype)
        protocol = self._protocol(spec.get("protocol"))
        pmin = self._port(spec.get("port_range_min"))
        pmax = self._port(spec.get("port_range_max"))
        if (pmin is not None or pmax is not None) and protocol is None:
            raise _bad("SecurityGroupProtocolRequiredWithPorts",
                       "Must also specify protocol if port range is given.")
        if protocol in PORT_PROTOCOLS and (pmin is not None or pmax is not None):
            if pmin is None or pmax is None:
                pmin = pmax if pmin is None else pmin
                pmax = pmin if pmax is None else pmax
            for v in (pmin, pmax):
                if v < 1 or v > 65535:
                    raise _bad("SecurityGroupInvalidPortValue",
                               "Invalid value for port %s." % v)
            if pmin > pmax:
                raise _bad("SecurityGroupInvalidPortRange",
                           "For TCP/UDP protocols, port_range_min must be <= port_range_max")
        prefix = spec.get("remote_ip_prefix")
        if prefix is not None:
            try:
                net = ipaddress.ip_network(str(prefix), strict=False)
            except ValueError:
                raise _bad("InvalidInput", "Invalid input for remote_ip_prefix. Reason: '%s' "
                           "is not a valid IP subnet." % prefix) from None
            if ("IPv%d" % net.version) != ethertype:
                raise _bad("SecurityGroupRuleParameterConflict",
                           "Conflicting value ethertype %s for CIDR %s" % (ethertype, prefix))
            prefix = str(net)
        remote_group = spec.get("remote_group_id")
        if remote_group is not None and prefix is not None:
            raise _bad("SecurityGroupRemoteGroupAndRemoteIpPrefix",
                       "Only remote_ip_prefix or remote_group_id may be provided.")
        if remote_group is not None:
            self.group(remote_group)
        rule = {"id": str(uuid.uuid4()), "security_group_id": gid, "direction": direction,
                "ethertype": ethertype, "protocol": protocol, "port_range_min": pmin,
                "port_range_max": pmax, "remote_ip_prefix": prefix,
                "remote_group_id": remote_group, "description": spec.get("description", ""),
                "project_id": "p-demo", "tenant_id": "p-demo", "revision_number": 0,
                "created_at": self.stamp(), "updated_at": self.stamp()}
        key = self._key(rule)
        for r in self.rules.values():
            if self._key(r) == key:
                raise NeutronError(409, "SecurityGroupRuleExists",
                                   "Security group rule already exists. Rule id is %s." % r["id"])
        self.rules[rule["id"]] = rule
        return rule

    @staticmethod
    def _key(r):
        return (r["security_group_id"], r["direction"], r["ethertype"], r["protocol"],
                r["port_range_min"], r["port_range_max"], r["remote_ip_prefix"],
                r["remote_group_id"])

    # ---- ports -------------------------------------------------------------------------------

    def check_port_update(self, port, upd):
        """Neutron's checks on a port update that touches security_groups or port security."""
        groups = upd.get("security_groups", port["security_groups"])
        if not isinstance(groups, list):
            raise _bad("InvalidInput", "Invalid input for security_groups: not a list")
        for gid in groups:
            self.group(gid)
        secure = upd.get("port_security_enabled", port["port_security_enabled"])
        if groups and not secure:
            if "security_groups" in upd and upd["security_groups"]:
                raise _bad("PortSecurityAndIPRequiredForSecurityGroups",
                           "Port security must be enabled and port must have an IP address in "
                           "order to use security groups.")
            raise NeutronError(409, "PortSecurityPortHasSecurityGroup",
                               "Port has security group associated. Cannot disable port security "
                               "or IP address until security group is removed")

    # ---- API ---------------------------------------------------------------------------------

    def serve(self, method, rel, query, body, ports, filter_list):
        """The answer (status, body) for rel under /v2.0, or None when it is not ours."""
        if rel == "/security-groups":
            if method == "GET":
                groups = filter_list(list(self.groups.values()), query,
                                     ["id", "name", "description"])
                return 200, {"security_groups": [self.group_view(g) for g in groups]}
            if method == "POST":
                g = self.add_group((body or {}).get("security_group", {}))
                return 201, {"security_group": self.group_view(g)}
        m = re.fullmatch(r"/security-groups/([^/]+)", rel)
        if m:
            g = self.group(m.group(1))
            if method == "GET":
                return 200, {"security_group": self.group_view(g)}
            if method == "PUT":
                upd = (body or {}).get("security_group", {})
                for k in ("name", "description"):
                    if k in upd:
                        g[k] = upd[k]
                g["revision_number"] += 1
                return 200, {"security_group": self.group_view(g)}
            if method == "DELETE":
                self.delete_group(g["id"], ports)
                return 204, None
        if rel == "/security-group-rules":
            if method == "GET":
                rules = filter_list(list(self.rules.values()), query,
                                    ["id", "security_group_id", "direction", "ethertype",
                                     "protocol", "remote_ip_prefix", "description"])
                return 200, {"security_group_rules": rules}
            if method == "POST":
                rule = self.add_rule((body or {}).get("security_group_rule", {}))
                return 201, {"security_group_rule": rule}
        m = re.fullmatch(r"/security-group-rules/([^/]+)", rel)
        if m:
            rule = self.rules.get(m.group(1))
            if rule is None:
                raise NeutronError(404, "SecurityGroupRuleNotFound",
                                   "Security group rule %s does not exist" % m.group(1))
            if method == "GET":
                return 200, {"security_group_rule": rule}
            if method == "DELETE":
                del self.rules[rule["id"]]
                return 204, None
        return None
