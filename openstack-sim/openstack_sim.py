#!/usr/bin/python3
"""An OpenStack API simulator for the tests of ccm's openstack provider.

It serves Keystone v3, Nova, Neutron and Octavia on one port of 127.0.0.1 (plain HTTP, or
HTTPS with a self-signed certificate made at start-up), with the response shapes of the real
services, Octavia provisioning-status transitions, 401 for expired or revoked tokens and fault
injection. A control API under /_sim/ lets tests seed, inspect and break it:

  GET  /_sim/state              every object it holds, and lb_history: the provisioning
                                statuses each load balancer went through ("DELETED" last
                                once it is gone)
  GET  /_sim/requests           the requests served so far (method, path, service, ...)
  POST /_sim/requests/clear     forget them
  POST /_sim/reset              back to the default cloud
  POST /_sim/config             change knobs (see Sim.DEFAULT_CONFIG)
  POST /_sim/fault              {"path": regex, "method": "GET", "status": 503, "count": 1,
                                 "headers": {...}, "body": {...}, "delay_s": 0}: answer
                                 matching requests so (after delay_s seconds)
  POST /_sim/faults/clear
  POST /_sim/revoke_tokens      every issued token now gets 401
  POST /_sim/app_credentials    {"id", "name", "secret"[, "user_id", "project_id"]}: a new
                                application credential (a rotation's first step)
  POST /_sim/app_credentials/delete  {"id"}: the credential is gone, as Keystone deletes one:
                                logins with it and every token issued through it get 401
  POST /_sim/add_server         a Nova server with its Neutron ports (see add_server)
  POST /_sim/remove_server      {"id": ...}: the server and its ports are gone (Nova 404s)
  POST /_sim/set_server         {"id": ..., field: value, ...}: change a server's fields
  POST /_sim/add                {"kind": "networks"|"subnets"|"ports"|"floatingips"|
                                 "routers"|"loadbalancers"|"security_groups"|
                                 "security_group_rules"|..., "object": {...}}
  POST /_sim/lb_status          {"id": ..., "provisioning_status": ...}
  POST /_sim/set_lb            {"id": ..., "name"?, "description"?, "tags"?}: change a load
                                 balancer as someone else would, without a provisioning step
  POST /_sim/child_status       {"kind": "listeners"|"pools"|"members", "id": ...,
                                 "provisioning_status": "PENDING_CREATE"}: a child stuck in
                                 that status whatever its load balancer does (changes to a
                                 stuck pool or listener get Octavia's 409 "... is immutable")
  POST /_sim/barbican/containers  {"id"?, "name"?, "project_id"?, "project_access"?,
                                 "acl_users"?}: a Barbican certificate container with its
                                 secrets (see key_manager.py); the answer has container_ref
  POST /_sim/barbican/delete    {"id"}: that container or secret is gone
  POST /_sim/set_user           {"id": ..., "password": ..., "keep_failures": false}: change
                                 a user's password (and unlock it unless keep_failures)

Real-cloud faults, switched with POST /_sim/config (see README.md):
  router_write_s         a write to a router (routes, extraroutes, tags) takes this long, and
                         another write to the same router meanwhile gets Neutron's 500
  member_revert          the next N member changes (create, delete, batch update) end with
                         the members in ERROR while the load balancer goes ACTIVE
  keystone_lockout_after N failed password logins in a row lock the user (401 "The account
                         is locked for user: ...", even with the right password)
  connection_close       every answer says "Connection: close" and the socket is closed
  and /_sim/fault with "retry_after": N (a Retry-After header) for 409/429/503 answers.

URL layout: Keystone at /identity (v3 at /identity/v3/); the catalog points each service of
each region and interface at /<region>/<interface>/<service>/..., so tests can see which
endpoint the provider picked. Octavia's API is under load-balancer/v2.0/, Neutron's under
network/v2.0/, Nova's at compute/v2.1/.

Run standalone: openstack_sim.py --port 0 --port-file FILE [--tls] [--seed SEED.json] (FILE gets
{"port", "url", "ca_file"} once it listens). A seed file holds {"config": {...},
"servers": [add_server specs], "add": [{"kind": ..., "object": ...}]} and is applied at
start and again on every /_sim/reset, so an end-to-end test can start a ready-made cloud.
"""

import argparse
import copy
import datetime
import ipaddress
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from neutron_secgroups import NeutronError, SecurityGroups
from key_manager import KeyManager, KeyManagerError
import octavia_ovn

REGIONS = ["RegionOne", "RegionTwo"]
INTERFACES = ["public", "internal", "admin"]


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def new_id():
    return str(uuid.uuid4())


class HttpError(Exception):
    def __init__(self, status, body=None, headers=None):
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


def not_found(what):
    return HttpError(404, {"itemNotFound": {"code": 404, "message": what + " could not be found."}})


def neutron_error(status, kind, message):
    return HttpError(status, {"NeutronError": {"type": kind, "message": message, "detail": ""}})


def octavia_error(status, message):
    return HttpError(status, {"faultcode": "Client" if status < 500 else "Server",
                              "faultstring": message, "debuginfo": None})


class Sim:
    DEFAULT_CONFIG = {
        "token_lifetime_s": 3600,
        # GETs of a load balancer that still show PENDING_* after a change.
        "pending_polls": 0,
        # When true, load balancers stay PENDING_* whatever the polls (Octavia busy).
        "hold_pending": False,
        # When true, the next provisioning transition ends in ERROR instead of ACTIVE.
        "error_next_transition": False,
        "octavia_versions": ["v2.0", "v2.1", "v2.5", "v2.12", "v2.16", "v2.27"],
        "neutron_extensions": ["extraroute", "extraroute-atomic", "allowed-address-pairs",
                               "trunk", "port-security", "standard-attr-tag"],
        "nova_max_microversion": "2.96",
        # Nova's largest page (osapi_max_limit): bigger or missing limits are cut to it.
        "nova_max_limit": 1000,
        # Seconds a write to a router holds it; a second write meanwhile gets 500 (Neutron's
        # answer to a database deadlock). 0: writes never conflict.
        "router_write_s": 0,
        # The next N member changes end with the changed members in ERROR (Octavia reverted
        # them) while the load balancer goes ACTIVE.
        "member_revert": 0,
        # Failed password logins in a row that lock a user (Keystone's lockout_failure_attempts);
        # 0: never.
        "keystone_lockout_after": 0,
        # Answer every request with "Connection: close" and close the socket (as uwsgi does).
        "connection_close": False,
        # Octavia loads every TLS reference of a TERMINATED_HTTPS listener from the key
        # manager and refuses one it cannot read; false: Octavia uses another certificate
        # store (the provider's container-store = external) and takes any reference.
        "octavia_checks_tls_refs": True,
    }

    def __init__(self):
        self.lock = threading.RLock()
        self.base_url = ""
        self.seed = None
        self.reset()

    # ---- state -------------------------------------------------------------------------------

    def reset(self):
        with self.lock:
            self.config = copy.deepcopy(self.DEFAULT_CONFIG)
            self.tokens = {}
            self.auth_count = 0
            self.login_failures = {}  # user id -> failed password logins in a row
            self.router_busy = {}  # router id -> time.monotonic() its current write ends
            self.router_conflicts = 0  # writes answered 500 because another one was running
            self.pending_delay = 0  # seconds the answer being built waits before it is sent
            self.requests = []
            self.faults = []
            self.users = [{"id": "u-demo", "name": "demo", "domain_id": "default",
                           "password": "demo-password"}]
            self.domains = [{"id": "default", "name": "Default"}]
            self.projects = [{"id": "p-demo", "name": "demo", "domain_id": "default"}]
            self.app_creds = [{"id": "ac-id", "name": "ac-name", "user_id": "u-demo",
                               "secret": "ac-secret-value", "project_id": "p-demo"}]
            self.trusts = [{"id": "trust-1", "trustee_user_id": "u-demo", "project_id": "p-demo"}]
            self.flavors = {
                "flv-small": {"id": "flv-small", "name": "m1.small", "ram": 2048, "vcpus": 1,
                              "disk": 20},
                "flv-large": {"id": "flv-large", "name": "m1.large", "ram": 8192, "vcpus": 4,
                              "disk": 80},
            }
            self.servers = {}
            self.server_order = []
            self.networks = {}
            self.subnets = {}
            self.ports = {}
            self.fips = {}
            self.routers = {}
            self.lbs = {}
            self.listeners = {}
            self.pools = {}
            self.members = {}  # pool id -> list of members
            self.monitors = {}
            self.secgroups = SecurityGroups(self.stamp)
            # Load balancer id -> every provisioning_status it went through, in order, ending
            # in "DELETED" once it is gone (kept after deletion, for end-to-end checks).
            self.lb_history = {}
            self.key_manager = KeyManager()
            self.request_user = None  # the user and project of the token being served
            self.request_project = None
            self.next_ip = {}
            self._default_topology()
            if self.seed:
                self.apply_seed(self.seed)

    def apply_seed(self, seed):
        for k, v in seed.get("config", {}).items():
            if k not in self.config:
                raise ValueError("unknown config key " + k)
            self.config[k] = v
        for item in seed.get("add", []):
            self.control("POST", "/_sim/add", item)
        for server in seed.get("servers", []):
            self.add_server(server)

    def _default_topology(self):
        self.add_network({"id": "net-private", "name": "private"})
        self.add_subnet({"id": "sub-private", "name": "private-subnet", "network_id": "net-private",
                         "cidr": "10.0.0.0/24", "ip_version": 4})
        self.add_subnet({"id": "sub-private6", "name": "private-subnet6",
                         "network_id": "net-private", "cidr": "fd00::/64", "ip_version": 6})
        self.add_network({"id": "net-public", "name": "public", "router:external": True})
        self.add_subnet({"id": "sub-public", "name": "public-subnet", "network_id": "net-public",
                         "cidr": "172.24.4.0/24", "ip_version": 4})
        self.routers["router-1"] = {"id": "router-1", "name": "router-1", "status": "ACTIVE",
                                    "routes": [], "tags": [],
                                    "external_gateway_info": {"network_id": "net-public"}}
        self.add_port({"id": "port-router-1", "network_id": "net-private", "device_id": "router-1",
                       "device_owner": "network:router_interface",
                       "fixed_ips": [{"subnet_id": "sub-private", "ip_address": "10.0.0.1"}]})

    def stamp(self):
        return now_utc().strftime("%Y-%m-%dT%H:%M:%SZ")

    def add_network(self, n):
        net = {"id": n.get("id") or new_id(), "name": n.get("name", ""), "status": "ACTIVE",
               "subnets": [], "router:external": bool(n.get("router:external", False)),
               "shared": bool(n.get("shared", False)), "tags": n.get("tags", []),
               "admin_state_up": True, "project_id": "p-demo", "tenant_id": "p-demo"}
        net["subnets"] = list(n.get("subnets", []))
        if n.get("hidden"):
            net["_hidden"] = True  # another project's, not shared: Neutron shows it to no one here
        self.networks[net["id"]] = net
        return net

    def add_subnet(self, s):
        sub = {"id": s.get("id") or new_id(), "name": s.get("name", ""),
               "network_id": s["network_id"], "cidr": s["cidr"],
               "ip_version": s.get("ip_version", ipaddress.ip_network(s["cidr"]).version),
               "gateway_ip": s.get("gateway_ip"), "tags": s.get("tags", []),
               "project_id": "p-demo", "tenant_id": "p-demo"}
        if sub["gateway_ip"] is None:
            sub["gateway_ip"] = str(next(ipaddress.ip_network(sub["cidr"]).hosts()))
        self.subnets[sub["id"]] = sub
        if s.get("hidden"):
            sub["_hidden"] = True
        net = self.networks.get(sub["network_id"])
        if net is not None and sub["id"] not in net["subnets"]:
            net["subnets"].append(sub["id"])
        return sub

    def used_ips(self):
        used = set()
        for p in self.ports.values():
            for f in p["fixed_ips"]:
                used.add(f["ip_address"])
        for f in self.fips.values():
            used.add(f["floating_ip_address"])
        return used

    def allocate_ip(self, subnet_id, wanted=None):
        sub = self.subnets.get(subnet_id)
        if sub is None:
            raise neutron_error(404, "SubnetNotFound", "Subnet %s could not be found." % subnet_id)
        used = self.used_ips()
        if wanted:
            if wanted in used:
                raise neutron_error(409, "IpAddressAlreadyAllocated",
                                    "IP address %s already allocated in subnet %s" % (wanted, subnet_id))
            return wanted
        net = ipaddress.ip_network(sub["cidr"])
        for i, host in enumerate(net.hosts()):
            if i < 9:
                continue  # keep the first addresses for gateways and fixed test IPs
            if str(host) not in used:
                return str(host)
        raise neutron_error(409, "IpAddressGenerationFailure", "No more IP addresses available")

    def add_port(self, p):
        port = {"id": p.get("id") or new_id(), "name": p.get("name", ""),
                "network_id": p["network_id"], "device_id": p.get("device_id", ""),
                "device_owner": p.get("device_owner", ""), "status": p.get("status", "ACTIVE"),
                "admin_state_up": True,
                "mac_address": p.get("mac_address", "fa:16:3e:%02x:%02x:%02x" % (
                    len(self.ports) % 256, 0x10, 0x20)),
                "fixed_ips": p.get("fixed_ips", []), "security_groups": [],
                "allowed_address_pairs": p.get("allowed_address_pairs", []), "tags": [],
                "port_security_enabled": p.get("port_security_enabled", True),
                "project_id": "p-demo", "tenant_id": "p-demo", "revision_number": 1,
                "created_at": self.stamp(), "updated_at": self.stamp()}
        if "trunk_details" in p:
            port["trunk_details"] = p["trunk_details"]
        self.ports[port["id"]] = port
        return port

    def network_by_name_or_id(self, key):
        if key in self.networks:
            return self.networks[key]
        for n in self.networks.values():
            if n["name"] == key:
                return n
        raise HttpError(400, {"error": "no network " + key})

    def add_server(self, spec):
        """spec: name, id, status, flavor (id), az, access_ipv4, access_ipv6, metadata,
        networks: [{network, ip, port_status, floating, port_id, version, in_neutron}],
        trunk_subports: [{network, ip}] (on the first port), nova_only: extra Nova addresses
        {"net": [{"addr", "version", "type"}]}."""
        sid = spec.get("id") or new_id()
        az = spec.get("az", "nova")
        addresses = {}
        first_port = None
        for n in spec.get("networks", []):
            net = self.network_by_name_or_id(n["network"])
            ip = n["ip"]
            version = ipaddress.ip_address(ip).version
            subnet = next((s for s in self.subnets.values()
                           if s["network_id"] == net["id"] and
                           ipaddress.ip_address(ip) in ipaddress.ip_network(s["cidr"])), None)
            mac = "fa:16:3e:%02x:%02x:%02x" % (len(self.ports) % 256, 0x30, 0x40)
            if n.get("in_neutron", True):
                port = self.add_port({"id": n.get("port_id"), "network_id": net["id"],
                                      "device_id": sid, "device_owner": "compute:" + az,
                                      "status": n.get("port_status", "ACTIVE"),
                                      "mac_address": mac,
                                      "port_security_enabled": n.get("port_security", True),
                                      "fixed_ips": [{"subnet_id": subnet["id"] if subnet else "",
                                                     "ip_address": ip}]})
                if first_port is None:
                    first_port = port
            addresses.setdefault(net["name"], []).append(
                {"addr": ip, "version": version, "OS-EXT-IPS:type": "fixed",
                 "OS-EXT-IPS-MAC:mac_addr": mac})
            if n.get("floating"):
                addresses[net["name"]].append(
                    {"addr": n["floating"], "version": 4, "OS-EXT-IPS:type": "floating",
                     "OS-EXT-IPS-MAC:mac_addr": mac})
        subports = []
        for sp in spec.get("trunk_subports", []):
            net = self.network_by_name_or_id(sp["network"])
            subnet = next((s for s in self.subnets.values() if s["network_id"] == net["id"]), None)
            port = self.add_port({"network_id": net["id"], "device_id": "",
                                  "device_owner": "trunk:subport",
                                  "fixed_ips": [{"subnet_id": subnet["id"] if subnet else "",
                                                 "ip_address": sp["ip"]}]})
            subports.append({"port_id": port["id"], "segmentation_type": "vlan",
                             "segmentation_id": 100 + len(subports),
                             "mac_address": port["mac_address"]})
        if subports and first_port is not None:
            first_port["trunk_details"] = {"trunk_id": new_id(), "sub_ports": subports}
        for net_name, extra in spec.get("nova_only", {}).items():
            addresses.setdefault(net_name, []).extend(extra)
        server = {
            "id": sid, "name": spec["name"], "status": spec.get("status", "ACTIVE"),
            "tenant_id": "p-demo", "user_id": "u-demo",
            "created": self.stamp(), "updated": self.stamp(), "hostId": "host-" + sid[:8],
            "accessIPv4": spec.get("access_ipv4", ""), "accessIPv6": spec.get("access_ipv6", ""),
            "addresses": addresses, "_flavor": spec.get("flavor", "flv-small"),
            "image": {"id": "img-1", "links": []}, "metadata": spec.get("metadata", {}),
            "OS-EXT-AZ:availability_zone": az, "OS-EXT-STS:vm_state": "active",
            "OS-EXT-STS:power_state": 1, "OS-EXT-STS:task_state": None,
            "OS-SRV-USG:launched_at": "2026-01-01T00:00:00.000000",
            "OS-SRV-USG:terminated_at": None, "config_drive": "", "key_name": None,
            "security_groups": [{"name": "default"}],
            "os-extended-volumes:volumes_attached": [], "progress": 0, "links": [],
        }
        self.servers[sid] = server
        self.server_order.append(sid)
        return server

    def state(self):
        with self.lock:
            return {
                "servers": list(self.servers.values()), "networks": list(self.networks.values()),
                "subnets": list(self.subnets.values()), "ports": list(self.ports.values()),
                "floatingips": list(self.fips.values()), "routers": list(self.routers.values()),
                "loadbalancers": [self.lb_view(lb) for lb in self.lbs.values()],
                "listeners": [self.listener_view(l) for l in self.listeners.values()],
                "pools": [self.pool_view(p) for p in self.pools.values()],
                "members": {k: [self.member_view(m) for m in v] for k, v in self.members.items()},
                "healthmonitors": list(self.monitors.values()),
                "lb_history": self.lb_history,
                "auth_count": self.auth_count, "config": self.config,
                "login_failures": self.login_failures, "router_conflicts": self.router_conflicts,
                **self.secgroups.state(),
                "containers": [self.key_manager.view(c)
                               for c in self.key_manager.containers.values()],
            }

    # ---- Keystone ----------------------------------------------------------------------------

    def catalog(self):
        out = []
        for svc_type, name, suffix in [("compute", "nova", "compute/v2.1"),
                                       ("network", "neutron", "network"),
                                       ("load-balancer", "octavia", "load-balancer"),
                                       ("key-manager", "barbican", "key-manager"),
                                       ("identity", "keystone", None)]:
            eps = []
            for region in REGIONS:
                for iface in INTERFACES:
                    url = (self.base_url + "/identity/v3" if suffix is None
                           else "%s/%s/%s/%s" % (self.base_url, region, iface, suffix))
                    eps.append({"id": new_id(), "interface": iface, "region": region,
                                "region_id": region, "url": url})
            out.append({"id": new_id(), "type": svc_type, "name": name, "endpoints": eps})
        # A decoy with a similar type comes first: exact type matching must skip it.
        out.insert(0, {"id": new_id(), "type": "computev3", "name": "decoy",
                       "endpoints": [{"id": new_id(), "interface": "public",
                                      "region": "RegionOne", "region_id": "RegionOne",
                                      "url": self.base_url + "/decoy"}]})
        return out

    def find_user(self, u):
        if "id" in u:
            return next((x for x in self.users if x["id"] == u["id"]), None)
        dom = u.get("domain", {})
        for x in self.users:
            if x["name"] != u.get("name"):
                continue
            if dom.get("id") == x["domain_id"]:
                return x
            if any(d["name"] == dom.get("name") and d["id"] == x["domain_id"] for d in self.domains):
                return x
        return None

    def authenticate(self, body):
        unauthorized = HttpError(401, {"error": {"code": 401, "title": "Unauthorized",
                                                 "message": "The request you have made requires "
                                                            "authentication."}})
        try:
            auth = body["auth"]
            identity = auth["identity"]
            methods = identity["methods"]
        except (KeyError, TypeError):
            raise HttpError(400, {"error": {"code": 400, "title": "Bad Request",
                                            "message": "malformed auth body"}})
        scope = auth.get("scope")
        user = None
        project = None
        extra = {}
        if methods == ["password"]:
            u = identity["password"]["user"]
            user = self.find_user(u)
            limit = self.config["keystone_lockout_after"]
            if user is not None and limit and self.login_failures.get(user["id"], 0) >= limit:
                # Keystone's AccountLocked: a 401 that says so, whatever the password.
                raise HttpError(401, {"error": {"code": 401, "title": "Unauthorized",
                                                "message": "The account is locked for user: %s."
                                                           % user["id"]}})
            if user is None or user["password"] != u.get("password"):
                if user is not None:
                    self.login_failures[user["id"]] = self.login_failures.get(user["id"], 0) + 1
                raise unauthorized
            self.login_failures.pop(user["id"], None)
        elif methods == ["application_credential"]:
            ac = identity["application_credential"]
            cred = None
            if "id" in ac:
                cred = next((c for c in self.app_creds if c["id"] == ac["id"]), None)
            else:
                owner = self.find_user(ac.get("user", {}))
                cred = next((c for c in self.app_creds if c["name"] == ac.get("name") and
                             owner is not None and c["user_id"] == owner["id"]), None)
            if cred is None or cred["secret"] != ac.get("secret"):
                raise unauthorized
            if scope is not None:
                raise HttpError(401, {"error": {"code": 401, "title": "Unauthorized",
                                                "message": "application credentials cannot "
                                                           "request a scope"}})
            user = next(x for x in self.users if x["id"] == cred["user_id"])
            project = next(p for p in self.projects if p["id"] == cred["project_id"])
            extra["application_credential"] = {"id": cred["id"], "name": cred["name"],
                                               "restricted": True}
        elif methods == ["token"]:
            tok = self.tokens.get(identity["token"]["id"])
            if tok is None:
                raise unauthorized
            user = next(x for x in self.users if x["id"] == tok["user_id"])
        else:
            raise unauthorized
        if project is None and scope is not None:
            if "project" in scope:
                p = scope["project"]
                if "id" in p:
                    project = next((x for x in self.projects if x["id"] == p["id"]), None)
                else:
                    d = p.get("domain", {})
                    project = next((x for x in self.projects if x["name"] == p.get("name") and
                                    (d.get("id") == x["domain_id"] or
                                     any(dd["name"] == d.get("name") and dd["id"] == x["domain_id"]
                                         for dd in self.domains))), None)
                if project is None:
                    raise unauthorized
            elif "OS-TRUST:trust" in scope:
                trust = next((t for t in self.trusts
                              if t["id"] == scope["OS-TRUST:trust"].get("id")), None)
                if trust is None or trust["trustee_user_id"] != user["id"]:
                    raise unauthorized
                project = next(p for p in self.projects if p["id"] == trust["project_id"])
                extra["OS-TRUST:trust"] = {"id": trust["id"], "impersonation": False,
                                           "trustee_user": {"id": user["id"]},
                                           "trustor_user": {"id": "u-admin"}}
            elif "domain" in scope:
                extra["domain"] = {"id": "default", "name": "Default"}
        token = "gAAAA" + uuid.uuid4().hex + uuid.uuid4().hex
        issued = now_utc()
        expires = issued + datetime.timedelta(seconds=self.config["token_lifetime_s"])
        self.tokens[token] = {"user_id": user["id"], "expires": expires,
                              "app_cred": extra.get("application_credential", {}).get("id"),
                              "project_id": project["id"] if project is not None else None}
        self.auth_count += 1
        body = {"token": {
            "methods": methods, "expires_at": iso(expires), "issued_at": iso(issued),
            "audit_ids": [uuid.uuid4().hex[:22]],
            "user": {"id": user["id"], "name": user["name"],
                     "domain": {"id": user["domain_id"], "name": "Default"},
                     "password_expires_at": None},
            "roles": [{"id": "r-member", "name": "member"}], "is_domain": False,
        }}
        body["token"].update(extra)
        if project is not None:
            body["token"]["project"] = {"id": project["id"], "name": project["name"],
                                        "domain": {"id": "default", "name": "Default"}}
        if project is not None or "domain" in extra:
            body["token"]["catalog"] = self.catalog()
        return token, body

    def check_token(self, token):
        tok = self.tokens.get(token)
        if tok is None or tok["expires"] <= now_utc():
            raise HttpError(401, {"error": {"code": 401, "title": "Unauthorized",
                                            "message": "The request you have made requires "
                                                       "authentication."}})
        self.request_user = tok["user_id"]
        self.request_project = tok.get("project_id")

    # ---- Nova --------------------------------------------------------------------------------

    def server_view(self, s, microversion):
        out = {k: v for k, v in s.items() if not k.startswith("_")}
        flavor = self.flavors.get(s["_flavor"], {"id": s["_flavor"], "name": s["_flavor"]})
        if microversion >= (2, 47):
            out["flavor"] = {"original_name": flavor["name"], "vcpus": flavor.get("vcpus", 1),
                             "ram": flavor.get("ram", 512), "disk": flavor.get("disk", 1),
                             "ephemeral": 0, "swap": 0, "extra_specs": {}}
        else:
            out["flavor"] = {"id": s["_flavor"], "links": [{"rel": "bookmark", "href": "x"}]}
        return out

    def nova(self, method, rel, query, headers, microversion):
        m = re.fullmatch(r"/servers/detail", rel)
        if m and method == "GET":
            servers = [self.servers[i] for i in self.server_order if i in self.servers]
            if "name" in query:
                pattern = re.compile(query["name"][0])
                servers = [s for s in servers if pattern.search(s["name"])]
            if "marker" in query:
                ids = [s["id"] for s in servers]
                marker = query["marker"][0]
                if marker not in ids:
                    raise HttpError(400, {"badRequest": {"code": 400,
                                                         "message": "marker not found"}})
                servers = servers[ids.index(marker) + 1:]
            limit = self.config["nova_max_limit"]
            if "limit" in query:
                limit = min(limit, int(query["limit"][0]))
            body = {}
            if limit and len(servers) > limit:
                servers = servers[:limit]
                q = {k: v[0] for k, v in query.items() if k != "marker"}
                q["marker"] = servers[-1]["id"]
                body["servers_links"] = [{"rel": "next", "href": "%s/compute/v2.1/servers/detail?%s"
                                          % (self._svc_base, urllib.parse.urlencode(q))}]
            body["servers"] = [self.server_view(s, microversion) for s in servers]
            return 200, body
        m = re.fullmatch(r"/servers/([^/]+)", rel)
        if m and method == "GET":
            s = self.servers.get(m.group(1))
            if s is None:
                raise not_found("Instance " + m.group(1))
            return 200, {"server": self.server_view(s, microversion)}
        m = re.fullmatch(r"/flavors/([^/]+)", rel)
        if m and method == "GET":
            f = self.flavors.get(m.group(1))
            if f is None:
                raise not_found("Flavor " + m.group(1))
            return 200, {"flavor": {"id": f["id"], "name": f["name"], "ram": f.get("ram", 512),
                                    "vcpus": f.get("vcpus", 1), "disk": f.get("disk", 1),
                                    "OS-FLV-EXT-DATA:ephemeral": 0, "swap": "",
                                    "rxtx_factor": 1.0, "os-flavor-access:is_public": True,
                                    "links": []}}
        raise not_found("Resource " + rel)

    # ---- Neutron -----------------------------------------------------------------------------

    @staticmethod
    def filter_list(items, query, fields):
        out = []
        for item in items:
            ok = True
            for f in fields:
                if f in query:
                    values = query[f]
                    v = item.get(f)
                    if isinstance(v, bool):
                        v = "true" if v else "false"
                    if v is None:
                        v = ""
                    if str(v) not in values:
                        ok = False
            if ok:
                out.append(item)
        return out

    @staticmethod
    def tag_filter(items, query):
        def tags_of(x):
            return set(x.get("tags", []))
        if "tags" in query:
            want = set(",".join(query["tags"]).split(","))
            items = [x for x in items if want <= tags_of(x)]
        if "tags-any" in query:
            want = set(",".join(query["tags-any"]).split(","))
            items = [x for x in items if want & tags_of(x)]
        if "not-tags" in query:
            want = set(",".join(query["not-tags"]).split(","))
            items = [x for x in items if not want <= tags_of(x)]
        if "not-tags-any" in query:
            want = set(",".join(query["not-tags-any"]).split(","))
            items = [x for x in items if not want & tags_of(x)]
        return items

    def neutron(self, method, rel, query, body):
        if rel in ("", "/") and method == "GET":
            return 200, {"versions": [{"id": "v2.0", "status": "CURRENT", "links": [
                {"rel": "self", "href": self._svc_base + "/network/v2.0/"}]}]}
        if not rel.startswith("/v2.0"):
            raise not_found(rel)
        rel = rel[len("/v2.0"):]
        if rel == "/extensions" and method == "GET":
            return 200, {"extensions": [{"alias": a, "name": a, "description": a,
                                         "updated": "2020-01-01T00:00:00-00:00", "links": []}
                                        for a in self.config["neutron_extensions"]]}
        # ports
        if rel == "/ports" and method == "GET":
            ports = list(self.ports.values())
            ports = self.filter_list(ports, query, ["device_id", "network_id", "id", "name",
                                                    "device_owner"])
            if "fixed_ips" in query:
                for spec in query["fixed_ips"]:
                    k, _, v = spec.partition("=")
                    ports = [p for p in ports if any(f.get(k) == v for f in p["fixed_ips"])]
            if "security_groups" in query:
                ports = [p for p in ports if set(query["security_groups"]) & set(p["security_groups"])]
            return 200, {"ports": ports}
        m = re.fullmatch(r"/ports/([^/]+)", rel)
        if m:
            port = self.ports.get(m.group(1))
            if port is None:
                raise neutron_error(404, "PortNotFound", "Port %s could not be found." % m.group(1))
            if method == "GET":
                return 200, {"port": port}
            if method == "PUT":
                upd = body.get("port", {})
                try:
                    self.secgroups.check_port_update(port, upd)
                except NeutronError as e:
                    raise neutron_error(e.status, e.kind, e.message) from None
                for k in ("allowed_address_pairs", "security_groups", "name", "port_security_enabled"):
                    if k in upd:
                        port[k] = upd[k]
                port["revision_number"] += 1
                return 200, {"port": port}
        # networks
        if rel == "/networks" and method == "GET":
            nets = [n for n in self.networks.values() if not n.get("_hidden")]
            nets = self.filter_list(nets, query, ["id", "name", "router:external"])
            return 200, {"networks": [self.visible(n) for n in self.tag_filter(nets, query)]}
        m = re.fullmatch(r"/networks/([^/]+)", rel)
        if m and method == "GET":
            n = self.networks.get(m.group(1))
            if n is None or n.get("_hidden"):
                raise neutron_error(404, "NetworkNotFound", "Network %s could not be found." % m.group(1))
            return 200, {"network": self.visible(n)}
        # subnets
        if rel == "/subnets" and method == "GET":
            subs = [s for s in self.subnets.values() if not s.get("_hidden")]
            subs = self.filter_list(subs, query, ["id", "name", "network_id", "ip_version"])
            subs = [{k: v for k, v in s.items() if not k.startswith("_")}
                    for s in self.tag_filter(subs, query)]
            return 200, {"subnets": subs}
        m = re.fullmatch(r"/subnets/([^/]+)", rel)
        if m and method == "GET":
            s = self.subnets.get(m.group(1))
            if s is None or s.get("_hidden"):
                raise neutron_error(404, "SubnetNotFound", "Subnet %s could not be found." % m.group(1))
            return 200, {"subnet": {k: v for k, v in s.items() if not k.startswith("_")}}
        # floating IPs
        if rel == "/floatingips":
            if method == "GET":
                fips = list(self.fips.values())
                fips = self.filter_list(fips, query, ["id", "port_id", "floating_ip_address",
                                                      "description", "floating_network_id"])
                return 200, {"floatingips": fips}
            if method == "POST":
                f = body.get("floatingip", {})
                net = self.networks.get(f.get("floating_network_id", ""))
                if net is None or not net["router:external"]:
                    raise neutron_error(404, "ExternalNetworkNotFound" if net is None else
                                        "BadRequest", "External network %s not found"
                                        % f.get("floating_network_id"))
                subnet_id = f.get("subnet_id")
                if subnet_id is None:
                    subnet_id = next((s for s in net["subnets"]
                                      if self.subnets[s]["ip_version"] == 4), None)
                elif subnet_id not in net["subnets"]:
                    raise neutron_error(400, "BadRequest", "subnet not on the network")
                ip = self.allocate_ip(subnet_id, f.get("floating_ip_address"))
                fixed = None
                port_id = f.get("port_id")
                if port_id:
                    port = self.ports.get(port_id)
                    if port is None:
                        raise neutron_error(404, "PortNotFound", "Port %s could not be found." % port_id)
                    fixed = port["fixed_ips"][0]["ip_address"] if port["fixed_ips"] else None
                fip = {"id": new_id(), "floating_ip_address": ip, "floating_network_id": net["id"],
                       "port_id": port_id, "fixed_ip_address": fixed,
                       "router_id": "router-1" if port_id else None,
                       "status": "ACTIVE" if port_id else "DOWN",
                       "description": f.get("description", ""), "project_id": "p-demo",
                       "tenant_id": "p-demo", "tags": [], "revision_number": 1,
                       "created_at": self.stamp(), "updated_at": self.stamp(),
                       "_subnet_id": subnet_id}
                self.fips[fip["id"]] = fip
                return 201, {"floatingip": self.fip_view(fip)}
        m = re.fullmatch(r"/floatingips/([^/]+)", rel)
        if m:
            fip = self.fips.get(m.group(1))
            if fip is None:
                raise neutron_error(404, "FloatingIPNotFound",
                                    "Floating IP %s could not be found" % m.group(1))
            if method == "GET":
                return 200, {"floatingip": self.fip_view(fip)}
            if method == "PUT":
                upd = body.get("floatingip", {})
                if "port_id" in upd:
                    port_id = upd["port_id"]
                    if port_id is not None and port_id not in self.ports:
                        raise neutron_error(404, "PortNotFound", "Port %s could not be found." % port_id)
                    fip["port_id"] = port_id
                    fip["fixed_ip_address"] = (self.ports[port_id]["fixed_ips"][0]["ip_address"]
                                               if port_id else None)
                    fip["status"] = "ACTIVE" if port_id else "DOWN"
                if "description" in upd:
                    fip["description"] = upd["description"]
                return 200, {"floatingip": self.fip_view(fip)}
            if method == "DELETE":
                del self.fips[fip["id"]]
                return 204, None
        # security groups and their rules (neutron_secgroups.py)
        try:
            answer = self.secgroups.serve(method, rel, query, body, list(self.ports.values()),
                                          self.filter_list)
        except NeutronError as e:
            raise neutron_error(e.status, e.kind, e.message) from None
        if answer is not None:
            return answer
        # routers
        m = re.fullmatch(r"/routers/([^/]+)(/add_extraroutes|/remove_extraroutes)?", rel)
        if m:
            router = self.routers.get(m.group(1))
            if router is None:
                raise neutron_error(404, "RouterNotFound", "Router %s could not be found" % m.group(1))
            action = m.group(2)
            if method == "GET" and action is None:
                return 200, {"router": router}
            if method == "PUT":
                self.router_write(router["id"])
            if method == "PUT" and action is None:
                upd = body.get("router", {})
                if "routes" in upd:
                    if "extraroute" not in self.config["neutron_extensions"]:
                        raise neutron_error(400, "BadRequest", "routes not supported")
                    router["routes"] = [{"destination": r["destination"], "nexthop": r["nexthop"]}
                                        for r in upd["routes"]]
                return 200, {"router": router}
            if method == "PUT" and action is not None:
                if "extraroute-atomic" not in self.config["neutron_extensions"]:
                    raise not_found("extraroute-atomic")
                routes = [{"destination": r["destination"], "nexthop": r["nexthop"]}
                          for r in body.get("router", {}).get("routes", [])]
                if action == "/add_extraroutes":
                    for r in routes:
                        if r not in router["routes"]:
                            router["routes"].append(r)
                else:
                    router["routes"] = [r for r in router["routes"] if r not in routes]
                return 200, {"router": router}
        m = re.fullmatch(r"/routers/([^/]+)/tags(?:/([^/]+))?", rel)
        if m:
            router = self.routers.get(m.group(1))
            if router is None:
                raise neutron_error(404, "RouterNotFound", "Router %s could not be found" % m.group(1))
            if "standard-attr-tag" not in self.config["neutron_extensions"]:
                raise not_found("tags")
            tag = urllib.parse.unquote(m.group(2)) if m.group(2) else None
            if tag is not None and len(tag) > 60:
                raise neutron_error(400, "InvalidInput", "tag too long")
            if method == "GET" and tag is None:
                return 200, {"tags": router["tags"]}
            if method in ("PUT", "DELETE") and tag is not None:
                self.router_write(router["id"])
            if method == "PUT" and tag is not None:
                if tag not in router["tags"]:
                    router["tags"].append(tag)
                return 201, None
            if method == "DELETE" and tag is not None:
                if tag not in router["tags"]:
                    raise neutron_error(404, "TagNotFound", "Tag %s could not be found." % tag)
                router["tags"].remove(tag)
                return 204, None
        raise not_found("Resource " + rel)

    def router_write(self, router_id):
        """A write to a router: with router_write_s set it holds the router that long (the
        answer waits), and a write arriving meanwhile fails as Neutron's database deadlock
        does, with a 500."""
        hold = self.config["router_write_s"]
        if not hold:
            return
        now = time.monotonic()
        if self.router_busy.get(router_id, 0) > now:
            self.router_conflicts += 1
            raise neutron_error(500, "HTTPInternalServerError",
                                "Request Failed: internal server error while processing your "
                                "request.")
        self.router_busy[router_id] = now + hold
        self.pending_delay = max(self.pending_delay, hold)

    @staticmethod
    def visible(obj):
        return {k: v for k, v in obj.items() if not k.startswith("_")}

    def fip_view(self, f):
        return {k: v for k, v in f.items() if not k.startswith("_")}

    # ---- Octavia -----------------------------------------------------------------------------

    def lb_view(self, lb):
        out = {k: v for k, v in lb.items() if not k.startswith("_")}
        out["listeners"] = [{"id": l["id"]} for l in self.listeners.values()
                            if l["_lb"] == lb["id"]]
        out["pools"] = [{"id": p["id"]} for p in self.pools.values() if p["_lb"] == lb["id"]]
        return out

    def listener_view(self, l):
        out = {k: v for k, v in l.items() if not k.startswith("_")}
        out["loadbalancers"] = [{"id": l["_lb"]}]
        return out

    def pool_view(self, p):
        out = {k: v for k, v in p.items() if not k.startswith("_")}
        out["loadbalancers"] = [{"id": p["_lb"]}]
        out["listeners"] = [{"id": p["_listener"]}] if p.get("_listener") else []
        out["members"] = [{"id": m["id"]} for m in self.members.get(p["id"], [])]
        return out

    @staticmethod
    def member_view(m):
        return {k: v for k, v in m.items() if not k.startswith("_")}

    def octavia_version(self):
        last = self.config["octavia_versions"][-1]
        major, _, minor = last[1:].partition(".")
        return int(major), int(minor or 0)

    def lb_of(self, lb_id):
        lb = self.lbs.get(lb_id)
        if lb is None:
            raise octavia_error(404, "Load Balancer %s not found." % lb_id)
        return lb

    def set_lb_status(self, lb, status):
        """Sets a load balancer's provisioning_status and records the change."""
        lb["provisioning_status"] = status
        history = self.lb_history.setdefault(lb["id"], [])
        if not history or history[-1] != status:
            history.append(status)

    def mutate_lb(self, lb, status="PENDING_UPDATE"):
        if lb["provisioning_status"].startswith("PENDING_"):
            raise octavia_error(409, "Invalid state %s of loadbalancer resource %s"
                                % (lb["provisioning_status"], lb["id"]))
        if lb["provisioning_status"] == "ERROR" and status != "PENDING_DELETE":
            raise octavia_error(409, "Invalid state ERROR of loadbalancer resource %s" % lb["id"])
        self.set_lb_status(lb, status)
        lb["_pending"] = self.config["pending_polls"]

    def transition(self, lb):
        """Called on GET of a load balancer: PENDING_* moves on after pending_polls GETs."""
        if not lb["provisioning_status"].startswith("PENDING_") or self.config["hold_pending"]:
            return lb
        if lb["_pending"] > 0:
            lb["_pending"] -= 1
            return lb
        if lb["provisioning_status"] == "PENDING_DELETE":
            self.remove_lb(lb)
            return None
        if self.config["error_next_transition"]:
            self.config["error_next_transition"] = False
            self.set_lb_status(lb, "ERROR")
            return lb
        self.set_lb_status(lb, "ACTIVE")
        lb["operating_status"] = "ONLINE"
        for coll in (self.listeners, self.pools, self.monitors):
            for obj in coll.values():
                if obj.get("_lb") == lb["id"] and not obj.get("_stuck"):
                    obj["provisioning_status"] = "ACTIVE"
        return lb

    @staticmethod
    def check_mutable(kind, obj):
        """Octavia refuses changes under a listener or pool that is not ACTIVE/ERROR yet."""
        if obj is not None and obj["provisioning_status"].startswith("PENDING_"):
            raise octavia_error(409, "%s %s is immutable and cannot be updated."
                                % (kind, obj["id"]))

    def member_reverted(self):
        """Whether this member change is one that Octavia reverts (member_revert)."""
        if self.config["member_revert"] > 0:
            self.config["member_revert"] -= 1
            return True
        return False

    def find_child(self, kind, child_id):
        if kind == "members":
            for mems in self.members.values():
                for mem in mems:
                    if mem["id"] == child_id:
                        return mem
            return None
        return {"listeners": self.listeners, "pools": self.pools}[kind].get(child_id)

    def remove_lb(self, lb):
        lb_id = lb["id"]
        for pid in [p for p, v in self.pools.items() if v["_lb"] == lb_id]:
            self.remove_pool(pid)
        for lid in [l for l, v in self.listeners.items() if v["_lb"] == lb_id]:
            del self.listeners[lid]
        vip_port = lb.get("vip_port_id")
        if lb.get("_owns_vip_port") and vip_port in self.ports:
            del self.ports[vip_port]
        for f in self.fips.values():
            if f["port_id"] == vip_port:
                f["port_id"] = None
                f["fixed_ip_address"] = None
                f["status"] = "DOWN"
        del self.lbs[lb_id]
        self.lb_history.setdefault(lb_id, []).append("DELETED")

    def remove_pool(self, pid):
        pool = self.pools.pop(pid)
        self.members.pop(pid, None)
        if pool.get("healthmonitor_id"):
            self.monitors.pop(pool["healthmonitor_id"], None)
        for l in self.listeners.values():
            if l.get("default_pool_id") == pid:
                l["default_pool_id"] = None

    def check_port_clash(self, lb_id, protocol, port, skip=None):
        family = "UDP" if protocol == "UDP" else ("SCTP" if protocol == "SCTP" else "TCP")
        for l in self.listeners.values():
            if l["_lb"] != lb_id or l["id"] == skip:
                continue
            lfam = "UDP" if l["protocol"] == "UDP" else ("SCTP" if l["protocol"] == "SCTP" else "TCP")
            if l["protocol_port"] == port and lfam == family:
                raise octavia_error(409, "Another Listener on this Load Balancer is already "
                                         "using protocol_port %d" % port)

    def new_listener(self, lb_id, spec):
        for k in ("protocol", "protocol_port"):
            if k not in spec:
                raise octavia_error(400, "Missing listener field " + k)
        self.check_listener_tls(spec["protocol"], spec.get("default_tls_container_ref"),
                                spec.get("sni_container_refs") or [])
        self.check_port_clash(lb_id, spec["protocol"], spec["protocol_port"])
        v = self.octavia_version()
        l = {"id": new_id(), "name": spec.get("name", ""), "description": "",
             "protocol": spec["protocol"], "protocol_port": spec["protocol_port"],
             "connection_limit": spec.get("connection_limit", -1), "default_pool_id": None,
             "insert_headers": spec.get("insert_headers", {}),
             "default_tls_container_ref": spec.get("default_tls_container_ref"),
             "sni_container_refs": list(spec.get("sni_container_refs") or []),
             "allowed_cidrs": spec.get("allowed_cidrs"),
             "tags": spec.get("tags", []), "provisioning_status": "PENDING_CREATE",
             "operating_status": "OFFLINE", "admin_state_up": True, "_lb": lb_id}
        if "allowed_cidrs" in spec and v < (2, 12):
            raise octavia_error(400, "allowed_cidrs needs API 2.12")
        if "tags" in spec and v < (2, 5):
            raise octavia_error(400, "tags need API 2.5")
        defaults = {"timeout_client_data": 50000, "timeout_member_connect": 5000,
                    "timeout_member_data": 50000, "timeout_tcp_inspect": 0}
        for k, d in defaults.items():
            l[k] = spec.get(k, d)
        self.listeners[l["id"]] = l
        return l

    # ---- Octavia's TLS checks (the key manager is in key_manager.py) ---------------------------

    def check_listener_tls(self, protocol, default_ref, sni_refs, to_read=None):
        """Octavia's validation of a listener's certificate references: TERMINATED_HTTPS needs
        one, other protocols take none, and each must be readable for the caller (on an
        update only those it sets: to_read)."""
        if protocol == "TERMINATED_HTTPS":
            if not default_ref and not sni_refs:
                raise octavia_error(400, "Validation failure: An SNI or default certificate "
                                         "container reference must be provided for "
                                         "TERMINATED_HTTPS protocol listeners.")
        elif default_ref or sni_refs:
            raise octavia_error(400, "Validation failure: Certificate container references are "
                                     "only allowed on TERMINATED_HTTPS protocol listeners.")
        if not self.config["octavia_checks_tls_refs"]:
            return
        if to_read is None:
            to_read = ([default_ref] if default_ref else []) + list(sni_refs)
        for ref in to_read:
            if not self.key_manager.octavia_can_read(ref, self.request_user, self.request_project):
                raise octavia_error(400, "Could not retrieve certificate: %s" % ref)

    @staticmethod
    def check_pool_protocol(listener, pool_protocol):
        """Octavia's listener/pool protocol pairing, for TERMINATED_HTTPS listeners."""
        if listener is None or listener["protocol"] != "TERMINATED_HTTPS":
            return
        if pool_protocol not in ("HTTP", "PROXY", "PROXYV2"):
            raise octavia_error(400, "Validation failure: The pool protocol '%s' is invalid while "
                                     "the listener protocol is 'TERMINATED_HTTPS'."
                                % pool_protocol)

    def new_pool(self, lb_id, listener_id, spec):
        self.check_pool_protocol(self.listeners.get(listener_id) if listener_id else None,
                                 spec.get("protocol"))
        p = {"id": new_id(), "name": spec.get("name", ""), "description": "",
             "protocol": spec["protocol"], "lb_algorithm": spec["lb_algorithm"],
             "session_persistence": spec.get("session_persistence"), "healthmonitor_id": None,
             "tags": spec.get("tags", []), "provisioning_status": "PENDING_CREATE",
             "operating_status": "OFFLINE", "admin_state_up": True, "_lb": lb_id,
             "_listener": listener_id}
        self.pools[p["id"]] = p
        self.members[p["id"]] = []
        if listener_id:
            listener = self.listeners[listener_id]
            if listener.get("default_pool_id"):
                raise octavia_error(409, "Listener %s already has a default pool" % listener_id)
            listener["default_pool_id"] = p["id"]
        for m in spec.get("members", []):
            self.new_member(p["id"], m)
        if spec.get("healthmonitor"):
            self.new_monitor(p["id"], spec["healthmonitor"])
        return p

    def new_member(self, pool_id, m):
        for k in ("address", "protocol_port"):
            if k not in m:
                raise octavia_error(400, "Missing member field " + k)
        member = {"id": new_id(), "name": m.get("name", ""), "address": m["address"],
                  "protocol_port": m["protocol_port"], "subnet_id": m.get("subnet_id"),
                  "weight": m.get("weight", 1), "monitor_port": m.get("monitor_port"),
                  "monitor_address": m.get("monitor_address"), "backup": False,
                  "admin_state_up": True, "provisioning_status": "ACTIVE",
                  "operating_status": "NO_MONITOR", "tags": m.get("tags", [])}
        self.members[pool_id].append(member)
        return member

    def new_monitor(self, pool_id, h):
        pool = self.pools[pool_id]
        if pool.get("healthmonitor_id"):
            raise octavia_error(409, "Pool %s already has a health monitor" % pool_id)
        if h.get("type") == "HTTP" and pool["protocol"] == "UDP" and self.octavia_version() < (2, 16):
            raise octavia_error(400, "HTTP monitors on UDP pools need API 2.16")
        mon = {"id": new_id(), "name": h.get("name", ""), "type": h["type"], "delay": h["delay"],
               "timeout": h["timeout"], "max_retries": h["max_retries"],
               "max_retries_down": h.get("max_retries_down", 3),
               "url_path": h.get("url_path", "/" if h["type"] in ("HTTP", "HTTPS") else None),
               "http_method": h.get("http_method", "GET" if h["type"] in ("HTTP", "HTTPS") else None),
               "expected_codes": h.get("expected_codes", "200" if h["type"] in ("HTTP", "HTTPS") else None),
               "pools": [{"id": pool_id}], "tags": h.get("tags", []),
               "provisioning_status": "PENDING_CREATE", "operating_status": "OFFLINE",
               "admin_state_up": True, "_lb": pool["_lb"]}
        self.monitors[mon["id"]] = mon
        pool["healthmonitor_id"] = mon["id"]
        return mon

    def check_additional_vips(self, spec, version):
        """additional_vips (API 2.26): [{"subnet_id", ["ip_address"]}], each subnet existing,
        on the primary VIP's network and named once. Checked before anything is made."""
        extra = spec.get("additional_vips")
        if extra is None:
            return []
        if version < (2, 26):
            raise octavia_error(400, "Invalid input for field/attribute load_balancer. Unknown "
                                "attribute for argument load_balancer: additional_vips")
        if not isinstance(extra, list) or any(not isinstance(x, dict) or not x.get("subnet_id")
                                              for x in extra):
            raise octavia_error(400, "Invalid input for field/attribute additional_vips: each "
                                "entry needs a subnet_id")
        seen = set()
        for x in extra:
            if x["subnet_id"] not in self.subnets:
                raise octavia_error(400, "Validation failure: Subnet %s not found."
                                    % x["subnet_id"])
            if x["subnet_id"] in seen or x["subnet_id"] == spec.get("vip_subnet_id"):
                raise octavia_error(400, "Validation failure: Duplicate VIP subnet(s) "
                                    "specified. Only one IP can be bound per subnet.")
            seen.add(x["subnet_id"])
        return extra

    def add_additional_vips(self, port, primary_subnet, extra):
        """Allocates the additional VIPs on the VIP port; every subnet must be on its network."""
        out = []
        network = self.subnets[primary_subnet]["network_id"]
        for x in extra:
            sub = self.subnets[x["subnet_id"]]
            if sub["network_id"] != network:
                raise octavia_error(400, "Validation failure: All VIP subnets must belong to "
                                    "the same network.")
        for x in extra:
            ip = self.allocate_ip(x["subnet_id"], x.get("ip_address"))
            port["fixed_ips"].append({"subnet_id": x["subnet_id"], "ip_address": ip})
            out.append({"subnet_id": x["subnet_id"], "ip_address": ip})
        return out

    @staticmethod
    def provider_check(provider, check, spec):
        """Runs an octavia_ovn check when the load balancer's provider is ovn."""
        if provider != octavia_ovn.OVN:
            return
        try:
            check(spec)
        except octavia_ovn.ProviderRefusal as e:
            raise octavia_error(e.status, e.message)

    def create_lb(self, spec):
        v = self.octavia_version()
        self.provider_check(spec.get("provider"), octavia_ovn.check_load_balancer, spec)
        for ls in spec.get("listeners", []):  # a fully populated create is all or nothing
            self.check_listener_tls(ls.get("protocol"), ls.get("default_tls_container_ref"),
                                    ls.get("sni_container_refs") or [])
            if ls.get("default_pool"):
                self.check_pool_protocol(ls, ls["default_pool"].get("protocol"))
        if "tags" in spec and v < (2, 5):
            raise octavia_error(400, "tags need API 2.5")
        extra_vips = self.check_additional_vips(spec, v)
        lb_id = new_id()
        owns_port = False
        if spec.get("vip_port_id"):
            port = self.ports.get(spec["vip_port_id"])
            if port is None:
                raise octavia_error(400, "Port %s not found" % spec["vip_port_id"])
            subnet_id = port["fixed_ips"][0]["subnet_id"]
            vip = port["fixed_ips"][0]["ip_address"]
        else:
            subnet_id = spec.get("vip_subnet_id")
            if subnet_id is None and spec.get("vip_network_id"):
                net = self.networks.get(spec["vip_network_id"])
                if net is None:
                    raise octavia_error(400, "Network %s not found" % spec["vip_network_id"])
                subnet_id = next((s for s in net["subnets"] if self.subnets[s]["ip_version"] == 4),
                                 None)
            if subnet_id is None or subnet_id not in self.subnets:
                raise octavia_error(400, "Validation failure: VIP subnet %s not found" % subnet_id)
            vip = self.allocate_ip(subnet_id, spec.get("vip_address"))
            port = self.add_port({"network_id": self.subnets[subnet_id]["network_id"],
                                  "device_id": "lb-" + lb_id, "device_owner": "Octavia",
                                  "name": "octavia-lb-" + lb_id,
                                  "fixed_ips": [{"subnet_id": subnet_id, "ip_address": vip}]})
            owns_port = True
        try:
            additional = self.add_additional_vips(port, subnet_id, extra_vips)
        except HttpError:
            if owns_port:
                self.ports.pop(port["id"], None)
            raise
        lb = {"id": lb_id, "name": spec.get("name", ""), "description": spec.get("description", ""),
              "project_id": "p-demo", "provisioning_status": "PENDING_CREATE",
              "operating_status": "OFFLINE", "admin_state_up": True, "vip_address": vip,
              "vip_port_id": port["id"], "vip_subnet_id": subnet_id,
              "vip_network_id": self.subnets[subnet_id]["network_id"], "vip_qos_policy_id": None,
              "provider": spec.get("provider", "amphora"), "flavor_id": spec.get("flavor_id"),
              "availability_zone": spec.get("availability_zone"), "tags": spec.get("tags", []),
              "additional_vips": additional, "created_at": self.stamp(), "updated_at": self.stamp(),
              "_pending": self.config["pending_polls"], "_owns_vip_port": owns_port}
        self.lbs[lb_id] = lb
        self.lb_history[lb_id] = ["PENDING_CREATE"]
        for ls in spec.get("listeners", []):
            listener = self.new_listener(lb_id, ls)
            if ls.get("default_pool"):
                self.new_pool(lb_id, listener["id"], ls["default_pool"])
        return lb

    def octavia(self, method, rel, query, body):
        if rel in ("", "/") and method == "GET":
            return 200, {"versions": [
                {"id": vid, "status": "CURRENT" if i == len(self.config["octavia_versions"]) - 1
                 else "SUPPORTED", "updated": "2023-01-01T00:00:00Z",
                 "links": [{"rel": "self", "href": self._svc_base + "/load-balancer/v2/"}]}
                for i, vid in enumerate(self.config["octavia_versions"])]}
        if not rel.startswith("/v2.0/lbaas") and not rel.startswith("/v2/lbaas"):
            raise not_found(rel)
        rel = rel[rel.index("/lbaas") + len("/lbaas"):]
        if rel == "/loadbalancers":
            if method == "GET":
                lbs = [self.lb_view(lb) for lb in self.lbs.values()]
                return 200, {"loadbalancers": self.filter_list(lbs, query, ["name", "id"]),
                             "loadbalancers_links": []}
            if method == "POST":
                lb = self.create_lb(body.get("loadbalancer", {}))
                return 201, {"loadbalancer": self.lb_view(lb)}
        m = re.fullmatch(r"/loadbalancers/([^/]+)", rel)
        if m:
            lb = self.lb_of(m.group(1))
            if method == "GET":
                lb = self.transition(lb)
                if lb is None:
                    raise octavia_error(404, "Load Balancer %s not found." % m.group(1))
                return 200, {"loadbalancer": self.lb_view(lb)}
            if method == "PUT":
                upd = body.get("loadbalancer", {})
                if "additional_vips" in upd:
                    # Set at creation only: Octavia's update type has no such attribute.
                    raise octavia_error(400, "Invalid input for field/attribute load_balancer. "
                                        "Unknown attribute for argument load_balancer: "
                                        "additional_vips")
                self.mutate_lb(lb)
                for k in ("name", "description", "tags"):
                    if k in upd:
                        lb[k] = upd[k]
                return 200, {"loadbalancer": self.lb_view(lb)}
            if method == "DELETE":
                cascade = query.get("cascade", ["false"])[0] == "true"
                if not cascade and any(l["_lb"] == lb["id"] for l in self.listeners.values()):
                    raise octavia_error(400, "Cannot delete Load Balancer %s - it has children"
                                        % lb["id"])
                self.mutate_lb(lb, "PENDING_DELETE")
                return 204, None
        # listeners
        if rel == "/listeners":
            if method == "GET":
                ls = [self.listener_view(l) for l in self.listeners.values()]
                if "loadbalancer_id" in query:
                    ls = [l for l in ls if l["loadbalancers"][0]["id"] in query["loadbalancer_id"]]
                return 200, {"listeners": ls}
            if method == "POST":
                spec = body.get("listener", {})
                lb = self.lb_of(spec.get("loadbalancer_id", ""))
                self.provider_check(lb["provider"], octavia_ovn.check_listener, spec)
                # Octavia validates before it locks the load balancer.
                self.check_listener_tls(spec.get("protocol"),
                                        spec.get("default_tls_container_ref"),
                                        spec.get("sni_container_refs") or [])
                self.mutate_lb(lb)
                l = self.new_listener(lb["id"], spec)
                return 201, {"listener": self.listener_view(l)}
        m = re.fullmatch(r"/listeners/([^/]+)", rel)
        if m:
            l = self.listeners.get(m.group(1))
            if l is None:
                raise octavia_error(404, "Listener %s not found." % m.group(1))
            if method == "GET":
                return 200, {"listener": self.listener_view(l)}
            lb = self.lb_of(l["_lb"])
            if method in ("PUT", "DELETE"):
                self.check_mutable("Listener", l)
            if method == "PUT":
                upd = body.get("listener", {})
                self.provider_check(lb["provider"], octavia_ovn.check_listener,
                                    {"allowed_cidrs": upd.get("allowed_cidrs")})
                self.check_listener_tls(
                    l["protocol"], upd.get("default_tls_container_ref",
                                           l.get("default_tls_container_ref")),
                    upd.get("sni_container_refs", l.get("sni_container_refs")) or [],
                    to_read=[r for r in [upd.get("default_tls_container_ref")] +
                             list(upd.get("sni_container_refs") or []) if r])
                self.mutate_lb(lb)
                for k in ("name", "connection_limit", "insert_headers", "allowed_cidrs", "tags",
                          "timeout_client_data", "timeout_member_connect", "timeout_member_data",
                          "timeout_tcp_inspect", "default_tls_container_ref",
                          "sni_container_refs"):
                    if k in upd:
                        l[k] = upd[k]
                l["provisioning_status"] = "PENDING_UPDATE"
                return 200, {"listener": self.listener_view(l)}
            if method == "DELETE":
                if l.get("default_pool_id"):
                    raise octavia_error(409, "Listener %s still has a default pool" % l["id"])
                self.mutate_lb(lb)
                del self.listeners[l["id"]]
                return 204, None
        # pools
        if rel == "/pools":
            if method == "GET":
                ps = [self.pool_view(p) for p in self.pools.values()]
                if "loadbalancer_id" in query:
                    ps = [p for p in ps if p["loadbalancers"][0]["id"] in query["loadbalancer_id"]]
                return 200, {"pools": ps}
            if method == "POST":
                spec = body.get("pool", {})
                if "members" in spec or "healthmonitor" in spec:
                    raise octavia_error(400, "members and healthmonitor are not accepted here")
                listener_id = spec.get("listener_id")
                if listener_id:
                    listener = self.listeners.get(listener_id)
                    if listener is None:
                        raise octavia_error(404, "Listener %s not found." % listener_id)
                    self.check_mutable("Listener", listener)
                    self.check_pool_protocol(listener, spec.get("protocol"))
                    lb = self.lb_of(listener["_lb"])
                else:
                    lb = self.lb_of(spec.get("loadbalancer_id", ""))
                self.provider_check(lb["provider"], octavia_ovn.check_pool, spec)
                self.mutate_lb(lb)
                p = self.new_pool(lb["id"], listener_id, spec)
                return 201, {"pool": self.pool_view(p)}
        m = re.fullmatch(r"/pools/([^/]+)(/members(?:/([^/]+))?)?", rel)
        if m:
            p = self.pools.get(m.group(1))
            if p is None:
                raise octavia_error(404, "Pool %s not found." % m.group(1))
            lb = self.lb_of(p["_lb"])
            if method != "GET":
                self.check_mutable("Pool", p)
            if m.group(2) is None:
                if method == "GET":
                    return 200, {"pool": self.pool_view(p)}
                if method == "PUT":
                    upd = body.get("pool", {})
                    self.provider_check(lb["provider"], octavia_ovn.check_pool,
                                        {k: upd[k] for k in ("lb_algorithm",) if k in upd})
                    self.mutate_lb(lb)
                    for k in ("name", "lb_algorithm", "session_persistence", "tags"):
                        if k in upd:
                            p[k] = upd[k]
                    return 200, {"pool": self.pool_view(p)}
                if method == "DELETE":
                    self.mutate_lb(lb)
                    self.remove_pool(p["id"])
                    return 204, None
            elif m.group(3) is None:
                if method == "GET":
                    return 200, {"members": [self.member_view(x) for x in self.members[p["id"]]]}
                if method == "PUT":
                    wanted = body.get("members", [])
                    for spec in wanted:
                        self.provider_check(lb["provider"], octavia_ovn.check_member, spec)
                    self.mutate_lb(lb)
                    if self.member_reverted():
                        # Octavia reverted the batch: the members it was to remove stay, and
                        # those it was to add are there; every changed one is in ERROR.
                        key = lambda x: (x["address"], x["protocol_port"])
                        keep = {key(x) for x in wanted}
                        have = {key(x) for x in self.members[p["id"]]}
                        for mem in self.members[p["id"]]:
                            if key(mem) not in keep:
                                mem["provisioning_status"] = "ERROR"
                                mem["operating_status"] = "ERROR"
                        for spec in wanted:
                            if key(spec) not in have:
                                mem = self.new_member(p["id"], spec)
                                mem["provisioning_status"] = "ERROR"
                                mem["operating_status"] = "ERROR"
                        return 202, None
                    self.members[p["id"]] = []
                    for mem in wanted:
                        self.new_member(p["id"], mem)
                    return 202, None
                if method == "POST":
                    self.provider_check(lb["provider"], octavia_ovn.check_member,
                                        body.get("member", {}))
                    self.mutate_lb(lb)
                    mem = self.new_member(p["id"], body.get("member", {}))
                    if self.member_reverted():
                        mem["provisioning_status"] = "ERROR"
                        mem["operating_status"] = "ERROR"
                    return 201, {"member": self.member_view(mem)}
            else:
                mems = self.members[p["id"]]
                mem = next((x for x in mems if x["id"] == m.group(3)), None)
                if mem is None:
                    raise octavia_error(404, "Member %s not found." % m.group(3))
                if method == "GET":
                    return 200, {"member": self.member_view(mem)}
                if method == "DELETE":
                    self.mutate_lb(lb)
                    if self.member_reverted():
                        mem["provisioning_status"] = "ERROR"  # the delete failed and was reverted
                        mem["operating_status"] = "ERROR"
                        return 204, None
                    mems.remove(mem)
                    return 204, None
        if rel == "/healthmonitors" and method == "POST":
            spec = body.get("healthmonitor", {})
            p = self.pools.get(spec.get("pool_id", ""))
            if p is None:
                raise octavia_error(404, "Pool %s not found." % spec.get("pool_id"))
            self.check_mutable("Pool", p)
            self.provider_check(self.lb_of(p["_lb"])["provider"], octavia_ovn.check_monitor,
                                spec)
            self.mutate_lb(self.lb_of(p["_lb"]))
            mon = self.new_monitor(p["id"], spec)
            return 201, {"healthmonitor": {k: v for k, v in mon.items() if not k.startswith("_")}}
        m = re.fullmatch(r"/healthmonitors/([^/]+)", rel)
        if m:
            mon = self.monitors.get(m.group(1))
            if mon is None:
                raise octavia_error(404, "Health Monitor %s not found." % m.group(1))
            lb = self.lb_of(mon["_lb"])
            if method == "GET":
                return 200, {"healthmonitor": {k: v for k, v in mon.items() if not k.startswith("_")}}
            if method == "PUT":
                self.mutate_lb(lb)
                upd = body.get("healthmonitor", {})
                if "type" in upd:
                    raise octavia_error(400, "type cannot be changed")
                for k in ("name", "delay", "timeout", "max_retries", "max_retries_down",
                          "url_path", "http_method", "expected_codes"):
                    if k in upd:
                        mon[k] = upd[k]
                return 200, {"healthmonitor": {k: v for k, v in mon.items() if not k.startswith("_")}}
            if method == "DELETE":
                self.mutate_lb(lb)
                del self.monitors[mon["id"]]
                for pool in self.pools.values():
                    if pool.get("healthmonitor_id") == mon["id"]:
                        pool["healthmonitor_id"] = None
                return 204, None
        raise not_found("Resource " + rel)

    # ---- control API -------------------------------------------------------------------------

    def control(self, method, path, body):
        if path == "/_sim/state" and method == "GET":
            return 200, self.state()
        if path == "/_sim/requests" and method == "GET":
            return 200, {"requests": self.requests}
        if path == "/_sim/requests/clear":
            self.requests = []
            return 200, {}
        if path == "/_sim/reset":
            base = self.base_url
            self.reset()
            self.base_url = base
            return 200, {}
        if path == "/_sim/config":
            for k, v in (body or {}).items():
                if k not in self.config:
                    raise HttpError(400, {"error": "unknown config key " + k})
                self.config[k] = v
            return 200, self.config
        if path == "/_sim/fault":
            fault = dict(body)
            fault.setdefault("count", 1)
            if "retry_after" in fault:
                fault.setdefault("headers", {})["Retry-After"] = str(fault.pop("retry_after"))
            fault["_re"] = re.compile(fault["path"])
            self.faults.append(fault)
            return 200, {}
        if path == "/_sim/faults/clear":
            self.faults = []
            return 200, {}
        if path == "/_sim/revoke_tokens":
            self.tokens = {}
            return 200, {}
        if path == "/_sim/app_credentials":
            cred = {"id": body["id"], "name": body["name"], "secret": body["secret"],
                    "user_id": body.get("user_id", "u-demo"),
                    "project_id": body.get("project_id", "p-demo")}
            if any(c["id"] == cred["id"] for c in self.app_creds):
                raise HttpError(409, {"error": "application credential %s exists" % cred["id"]})
            self.app_creds.append(cred)
            return 201, {"application_credential": {"id": cred["id"], "name": cred["name"]}}
        if path == "/_sim/app_credentials/delete":
            cid = body["id"]
            if not any(c["id"] == cid for c in self.app_creds):
                raise not_found("application credential " + cid)
            self.app_creds = [c for c in self.app_creds if c["id"] != cid]
            self.tokens = {t: v for t, v in self.tokens.items() if v.get("app_cred") != cid}
            return 204, None
        if path == "/_sim/expire_tokens":
            for t in self.tokens.values():
                t["expires"] = now_utc() - datetime.timedelta(seconds=1)
            return 200, {}
        if path == "/_sim/add_server":
            return 200, {"server": self.server_view(self.add_server(body), (2, 47))}
        if path == "/_sim/remove_server":
            sid = body["id"]
            self.servers.pop(sid, None)
            for pid in [p for p, v in self.ports.items() if v["device_id"] == sid]:
                del self.ports[pid]
            return 200, {}
        if path == "/_sim/set_server":
            s = self.servers[body["id"]]
            for k, v in body.items():
                if k != "id":
                    s[k] = v
            return 200, {}
        if path == "/_sim/add":
            kind, obj = body["kind"], body["object"]
            if kind == "networks":
                return 200, self.add_network(obj)
            if kind == "subnets":
                return 200, self.add_subnet(obj)
            if kind == "ports":
                return 200, self.add_port(obj)
            if kind == "security_groups":
                return 200, self.secgroups.add_group(obj)
            if kind == "security_group_rules":
                return 200, self.secgroups.add_rule(obj)
            if kind == "flavors":
                self.flavors[obj["id"]] = obj
                return 200, obj
            if kind == "routers":
                r = {"id": obj.get("id") or new_id(), "name": obj.get("name", ""),
                     "status": "ACTIVE", "routes": obj.get("routes", []), "tags": obj.get("tags", []),
                     "external_gateway_info": None}
                self.routers[r["id"]] = r
                return 200, r
            if kind == "floatingips":
                fip = {"id": obj.get("id") or new_id(),
                       "floating_ip_address": obj["floating_ip_address"],
                       "floating_network_id": obj.get("floating_network_id", "net-public"),
                       "port_id": obj.get("port_id"), "fixed_ip_address": None, "router_id": None,
                       "status": "DOWN", "description": obj.get("description", ""),
                       "project_id": "p-demo", "tenant_id": "p-demo", "tags": [],
                       "revision_number": 1, "created_at": self.stamp(),
                       "updated_at": self.stamp()}
                self.fips[fip["id"]] = fip
                return 200, fip
            if kind == "loadbalancers":
                lb = self.create_lb(obj)
                self.set_lb_status(lb, "ACTIVE")
                for coll in (self.listeners, self.pools, self.monitors):
                    for o in coll.values():
                        if o.get("_lb") == lb["id"]:
                            o["provisioning_status"] = "ACTIVE"
                return 200, self.lb_view(lb)
            raise HttpError(400, {"error": "unknown kind " + kind})
        if path == "/_sim/child_status":
            child = self.find_child(body["kind"], body["id"])
            if child is None:
                raise HttpError(404, {"error": "no %s %s" % (body["kind"], body["id"])})
            child["provisioning_status"] = body["provisioning_status"]
            if body["provisioning_status"] != "ACTIVE":
                child["_stuck"] = True
            else:
                child.pop("_stuck", None)
            return 200, {}
        if path == "/_sim/set_user":
            user = next((u for u in self.users if u["id"] == body["id"]), None)
            if user is None:
                raise HttpError(404, {"error": "no user " + body["id"]})
            user["password"] = body["password"]
            if not body.get("keep_failures"):
                self.login_failures.pop(user["id"], None)
            return 200, {}
        if path == "/_sim/barbican/containers":
            base = "%s/RegionOne/public/key-manager" % self.base_url
            return 201, self.key_manager.create_container(body or {}, base)
        if path == "/_sim/barbican/delete":
            if not self.key_manager.delete(body["id"]):
                raise HttpError(404, {"error": "no container or secret " + body["id"]})
            return 200, {}
        if path == "/_sim/lb_status":
            lb = self.lb_of(body["id"])
            self.set_lb_status(lb, body["provisioning_status"])
            lb["_pending"] = body.get("pending", 0)
            return 200, self.lb_view(lb)
        if path == "/_sim/set_lb":
            lb = self.lb_of(body["id"])
            for k in ("name", "description", "tags"):
                if k in body:
                    lb[k] = body[k]
            return 200, self.lb_view(lb)
        raise HttpError(404, {"error": "unknown control path " + path})


SIM = Sim()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # one small write per header: no 40 ms delayed-ACK stalls

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_json(self, status, body, headers=None):
        data = b"" if body is None or status == 204 else json.dumps(body).encode()
        self.send_response(status)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Openstack-Request-Id", "req-" + str(uuid.uuid4()))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if SIM.config["connection_close"]:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if data:
            self.wfile.write(data)

    def handle_any(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                self.send_json(400, {"error": "request body is not JSON"})
                return
        parsed = urllib.parse.urlsplit(self.path)
        path = parsed.path
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        with SIM.lock:
            if path.startswith("/_sim/"):
                try:
                    status, out = SIM.control(method, path, body)
                except HttpError as e:
                    status, out = e.status, e.body
                self.send_json(status, out)
                return
            status, out, headers = self.serve(method, path, query, body)
            delay = self.delay
        if delay:
            time.sleep(delay)  # a slow cloud (outside the lock: others are served meanwhile)
        try:
            self.send_json(status, out, headers)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting

    def serve(self, method, path, query, body):
        self.delay = 0
        entry = {"method": method, "path": path, "query": query, "body": body,
                 "service": "", "region": "", "interface": "", "rel": path,
                 "headers": {k.lower(): v for k, v in self.headers.items()
                             if k.lower() in ("x-auth-token", "x-openstack-nova-api-version",
                                              "openstack-api-version", "user-agent",
                                              "content-type")}}
        SIM.requests.append(entry)
        try:
            parts = path.split("/")
            if len(parts) > 1 and parts[1] == "identity":
                entry["service"] = "identity"
                entry["rel"] = "/" + "/".join(parts[2:])
            elif len(parts) > 3 and parts[1] in REGIONS and parts[2] in INTERFACES:
                entry["region"], entry["interface"], entry["service"] = parts[1], parts[2], parts[3]
                entry["rel"] = "/" + "/".join(parts[4:]) if len(parts) > 4 else ""
                if entry["service"] == "compute" and entry["rel"].startswith("/v2.1"):
                    entry["rel"] = entry["rel"][len("/v2.1"):]
            for fault in SIM.faults:
                if fault["count"] == 0:
                    continue
                if fault.get("method") and fault["method"] != method:
                    continue
                if not fault["_re"].search(path):
                    continue
                fault["count"] -= 1
                entry["status"] = fault["status"]
                self.delay = fault.get("delay_s", 0)
                return fault["status"], fault.get("body", {"message": "injected fault"}), \
                    fault.get("headers", {})
            SIM.pending_delay = 0
            status, out, headers = self.dispatch(entry, method, query, body)
            self.delay = SIM.pending_delay
        except HttpError as e:
            status, out, headers = e.status, e.body, e.headers
        entry["status"] = status
        return status, out, headers

    def dispatch(self, entry, method, query, body):
        svc = entry["service"]
        rel = entry["rel"]
        if svc == "identity":
            if rel in ("", "/") and method == "GET":
                return 300, {"versions": {"values": [
                    {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
                     "links": [{"rel": "self", "href": SIM.base_url + "/identity/v3/"}],
                     "media-types": [{"base": "application/json",
                                      "type": "application/vnd.openstack.identity-v3+json"}]}]}}, {}
            if rel in ("/v3", "/v3/") and method == "GET":
                return 200, {"version": {"id": "v3.14", "status": "stable", "links": [
                    {"rel": "self", "href": SIM.base_url + "/identity/v3/"}]}}, {}
            if rel == "/v3/auth/tokens" and method == "POST":
                token, out = SIM.authenticate(body or {})
                return 201, out, {"X-Subject-Token": token}
            raise not_found(rel)
        if svc not in ("compute", "network", "load-balancer", "key-manager"):
            raise not_found(entry["path"])
        SIM.check_token(self.headers.get("X-Auth-Token", ""))
        if svc == "key-manager":
            try:
                status, out = SIM.key_manager.serve(method, rel, SIM.request_user,
                                                    SIM.request_project)
            except KeyManagerError as e:
                raise HttpError(e.status, e.body) from e
            return status, out, {}
        SIM._svc_base = "%s/%s/%s" % (SIM.base_url, entry["region"], entry["interface"])
        if svc == "compute":
            mv = (2, 1)
            want = self.headers.get("X-OpenStack-Nova-API-Version")
            if want:
                major, _, minor = want.partition(".")
                mv = (int(major), int(minor))
                maxv = tuple(int(x) for x in SIM.config["nova_max_microversion"].split("."))
                if mv > maxv:
                    raise HttpError(406, {"computeFault": {
                        "code": 406, "message": "Version %s is not supported by the API." % want}})
            status, out = SIM.nova(method, rel, query, self.headers, mv)
        elif svc == "network":
            status, out = SIM.neutron(method, rel, query, body or {})
        else:
            status, out = SIM.octavia(method, rel, query, body or {})
        return status, out, {}

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_DELETE(self):
        self.handle_any("DELETE")


def make_cert(directory):
    key = os.path.join(directory, "sim.key")
    cert = os.path.join(directory, "sim.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return cert, key


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--tls", action="store_true", help="serve HTTPS (self-signed)")
    parser.add_argument("--seed", help="JSON file of objects to create at start and on reset")
    args = parser.parse_args()
    if args.seed:
        with open(args.seed) as f:
            SIM.seed = json.load(f)
        SIM.reset()

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    scheme = "http"
    ca_file = ""
    if args.tls:
        directory = tempfile.mkdtemp(prefix="os-sim-")
        ca_file, key = make_cert(directory)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ca_file, key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    port = server.server_address[1]
    SIM.base_url = "%s://127.0.0.1:%d" % (scheme, port)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"port": port, "url": SIM.base_url, "ca_file": ca_file}, f)
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
