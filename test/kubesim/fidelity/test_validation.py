"""Fidelity: the validation a real kube-apiserver (v1.26) enforces and kubesim once accepted.

One test per observed difference ("Validation the real server enforces"); each checks the
status code, the reason and details.causes[].field as the real server answers them, and the
side effects the server's Service strategy applies on a type change.
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from kubesim_harness import KubesimTestCase  # noqa: E402

NS = "default"


def causes(resp):
    return [c.get("field") for c in resp.json().get("details", {}).get("causes", [])]


class ValidationTest(KubesimTestCase):
    KUBESIM_ARGS = ("--service-cluster-ip-range=10.96.0.0/16",)

    # --- helpers -----------------------------------------------------------------------------
    def create(self, path, body):
        return self.sim.request("POST", path, body=body)

    def merge(self, path, patch):
        return self.sim.request("PATCH", path, body=json.dumps(patch),
                                content_type="application/merge-patch+json")

    def assertInvalid(self, resp, fields, message=None):
        self.assertStatus(resp, 422, "Invalid")
        self.assertEqual(causes(resp), fields, resp)
        if message is not None:
            self.assertIn(message, resp.json()["message"], resp)

    def node(self, name, spec=None):
        r = self.create("/api/v1/nodes", {"metadata": {"name": name}, "spec": spec or {}})
        self.assertEqual(r.status, 201, r)
        return r.json()

    def service(self, name, spec, expect=201):
        r = self.create("/api/v1/namespaces/%s/services" % NS,
                        {"metadata": {"name": name}, "spec": spec})
        self.assertEqual(r.status, expect, r)
        return r

    def lb(self, name, **extra):
        spec = {"type": "LoadBalancer", "selector": {"app": name},
                "ports": [{"name": "http", "port": 80}]}
        spec.update(extra)
        return self.service(name, spec).json()

    # --- Node --------------------------------------------------------------------------------
    def test_node_duplicate_address(self):
        """Node: `status.addresses` with the same (type, address) twice → 422 `Duplicate value`
        on `status.addresses[i]`."""
        self.node("dup-addr")
        r = self.merge("/api/v1/nodes/dup-addr/status", {"status": {"addresses": [
            {"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "Hostname", "address": "dup-addr"},
            {"type": "InternalIP", "address": "10.0.0.1"}]}})
        self.assertInvalid(r, ["status.addresses[2]"],
                           'status.addresses[2]: Duplicate value: core.NodeAddress{'
                           'Type:"InternalIP", Address:"10.0.0.1"}')
        self.assertEqual(r.json()["details"]["causes"][0]["reason"], "FieldValueDuplicate")
        # The same address under another type is fine.
        r = self.merge("/api/v1/nodes/dup-addr/status", {"status": {"addresses": [
            {"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "ExternalIP", "address": "10.0.0.1"}]}})
        self.assertEqual(r.status, 200, r)

    def test_node_pod_cidr_not_a_cidr(self):
        """Node: `spec.podCIDR` not a CIDR → 422 (on spec.podCIDRs[0], the field it becomes)."""
        r = self.create("/api/v1/nodes", {"metadata": {"name": "bad-cidr"},
                                          "spec": {"podCIDR": "10.0.0.0/33"}})
        self.assertInvalid(r, ["spec.podCIDRs[0]"],
                           'spec.podCIDRs[0]: Invalid value: []string{"10.0.0.0/33"}: '
                           'must be valid CIDR')
        self.node("late-bad-cidr")
        r = self.merge("/api/v1/nodes/late-bad-cidr", {"spec": {"podCIDR": "not-a-cidr"}})
        self.assertInvalid(r, ["spec.podCIDRs[0]"])

    def test_node_two_cidrs_of_one_family(self):
        """Node: two CIDRs of one family in `spec.podCIDRs` → 422."""
        r = self.create("/api/v1/nodes", {"metadata": {"name": "two-v4"}, "spec": {
            "podCIDR": "10.1.0.0/24", "podCIDRs": ["10.1.0.0/24", "10.2.0.0/24"]}})
        self.assertInvalid(r, ["spec.podCIDRs"],
                           "may specify no more than one CIDR for each IP family")
        # One of each family is dual-stack and fine.
        r = self.create("/api/v1/nodes", {"metadata": {"name": "dual"}, "spec": {
            "podCIDRs": ["10.3.0.0/24", "fd00:3::/64"]}})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["spec"]["podCIDR"], "10.3.0.0/24")

    def test_node_pod_cidr_differs_from_first_pod_cidrs(self):
        """Node: `podCIDR` ≠ `podCIDRs[0]` → 422 where it changes an assigned CIDR; podCIDR is
        the authoritative one (the server's v1 conversion), so on an unassigned node the
        list becomes [podCIDR]."""
        r = self.create("/api/v1/nodes", {"metadata": {"name": "mismatch"}, "spec": {
            "podCIDR": "10.4.0.0/24", "podCIDRs": ["10.5.0.0/24"]}})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["spec"]["podCIDRs"], ["10.4.0.0/24"])
        r = self.merge("/api/v1/nodes/mismatch", {"spec": {"podCIDR": "10.6.0.0/24"}})
        self.assertInvalid(r, ["spec.podCIDRs"],
                           'spec.podCIDRs: Forbidden: node updates may not change podCIDR '
                           'except from "" to valid')

    def test_node_keeps_pod_cidr_and_pod_cidrs_equal(self):
        """Node: the server keeps `podCIDR` and `podCIDRs[0]` equal when only one is written."""
        self.node("only-single")
        r = self.merge("/api/v1/nodes/only-single", {"spec": {"podCIDR": "10.7.0.0/24"}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["spec"]["podCIDRs"], ["10.7.0.0/24"])
        self.node("only-list")
        r = self.merge("/api/v1/nodes/only-list", {"spec": {"podCIDRs": ["10.8.0.0/24"]}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["spec"]["podCIDR"], "10.8.0.0/24")
        # Set once, never changed; writing the same value again is fine.
        r = self.merge("/api/v1/nodes/only-list", {"spec": {"podCIDRs": ["10.9.0.0/24"]}})
        self.assertEqual(r.status, 200, r)  # podCIDR (10.8.0.0/24) wins: nothing changes
        self.assertEqual(r.json()["spec"]["podCIDRs"], ["10.8.0.0/24"])
        r = self.merge("/api/v1/nodes/only-list",
                       {"spec": {"podCIDR": "10.9.0.0/24", "podCIDRs": ["10.9.0.0/24"]}})
        self.assertInvalid(r, ["spec.podCIDRs"])

    # --- Service status ----------------------------------------------------------------------
    def test_service_status_ingress_ip_not_an_ip(self):
        """Service status: `status.loadBalancer.ingress[].ip` not an IP (`not-an-ip`,
        `" 203.0.113.1"`) → 422 `must be a valid IP address`."""
        self.lb("ingress-ip")
        path = "/api/v1/namespaces/%s/services/ingress-ip/status" % NS
        for bad in ("not-an-ip", " 203.0.113.1"):
            r = self.merge(path, {"status": {"loadBalancer": {"ingress": [
                {"ip": "203.0.113.2"}, {"ip": bad}]}}})
            self.assertInvalid(r, ["status.loadBalancer.ingress[1].ip"],
                               "must be a valid IP address")
        r = self.merge(path, {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]}}})
        self.assertEqual(r.status, 200, r)

    def test_service_status_ingress_hostname(self):
        """Service status: `ingress[].hostname` that is an IP (`203.0.113.9`) or not a DNS-1123
        subdomain (`Bad_Host`) → 422."""
        self.lb("ingress-host")
        path = "/api/v1/namespaces/%s/services/ingress-host/status" % NS
        r = self.merge(path, {"status": {"loadBalancer": {"ingress": [{"hostname": "203.0.113.9"}]}}})
        self.assertInvalid(r, ["status.loadBalancer.ingress[0].hostname"],
                           "must be a DNS name, not an IP address")
        r = self.merge(path, {"status": {"loadBalancer": {"ingress": [{"hostname": "Bad_Host"}]}}})
        self.assertInvalid(r, ["status.loadBalancer.ingress[0].hostname"],
                           "a lowercase RFC 1123 subdomain")
        r = self.merge(path, {"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}})
        self.assertEqual(r.status, 200, r)

    # --- Service spec ------------------------------------------------------------------------
    def test_service_cluster_ip_never_changes(self):
        """Service spec: change of `spec.clusterIP` → 422 (the real server never lets clusterIP
        change)."""
        svc = self.service("fixed-ip", {"selector": {"a": "b"}, "ports": [{"port": 80}]}).json()
        ip = svc["spec"]["clusterIP"]
        other = "10.96.77.77" if ip != "10.96.77.77" else "10.96.77.78"
        r = self.merge("/api/v1/namespaces/%s/services/fixed-ip" % NS,
                       {"spec": {"clusterIP": other}})
        self.assertInvalid(r, ["spec.clusterIPs[0]"], "may not change once set")
        # A PUT that leaves clusterIP out keeps the allocated one.
        svc["spec"].pop("clusterIP")
        svc["spec"].pop("clusterIPs")
        r = self.sim.request("PUT", "/api/v1/namespaces/%s/services/fixed-ip" % NS, body=svc)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["spec"]["clusterIP"], ip)

    def test_service_load_balancer_class_immutable(self):
        """Service spec: change of `spec.loadBalancerClass` → 422."""
        self.lb("lbclass", loadBalancerClass="example.com/one")
        r = self.merge("/api/v1/namespaces/%s/services/lbclass" % NS,
                       {"spec": {"loadBalancerClass": "example.com/two"}})
        self.assertInvalid(r, ["spec.loadBalancerClass"],
                           'spec.loadBalancerClass: Invalid value: "example.com/two": '
                           'may not change once set')

    def test_service_node_port_of_another_service(self):
        """Service spec: a nodePort used by another Service → 422 (`provided port is already
        allocated`)."""
        first = self.service("np-one", {"type": "NodePort", "selector": {"a": "b"},
                                        "ports": [{"port": 80}]}).json()
        taken = first["spec"]["ports"][0]["nodePort"]
        r = self.service("np-two", {"type": "NodePort", "selector": {"a": "b"},
                                    "ports": [{"port": 80, "nodePort": taken}]}, expect=422)
        self.assertInvalid(r, ["spec.ports[0].nodePort"],
                           "spec.ports[0].nodePort: Invalid value: %d: provided port is already "
                           "allocated" % taken)

    def test_service_cluster_ip_outside_range(self):
        """Service spec: clusterIP outside `--service-cluster-ip-range` → 422."""
        r = self.service("far-ip", {"clusterIP": "10.200.0.5", "selector": {"a": "b"},
                                    "ports": [{"port": 80}]}, expect=422)
        self.assertInvalid(r, ["spec.clusterIPs"],
                           'spec.clusterIPs: Invalid value: []string{"10.200.0.5"}: failed to '
                           'allocate IP 10.200.0.5: the provided IP (10.200.0.5) is not in the '
                           'valid range. The range of valid IPs is 10.96.0.0/16')
        r = self.service("near-ip", {"clusterIP": "10.96.1.5", "selector": {"a": "b"},
                                     "ports": [{"port": 80}]})
        self.assertEqual(r.json()["spec"]["clusterIPs"], ["10.96.1.5"])

    def test_service_bad_source_ranges(self):
        """Service spec: bad `loadBalancerSourceRanges` → 422."""
        r = self.service("bad-ranges", {"type": "LoadBalancer", "selector": {"a": "b"},
                                        "ports": [{"port": 80}],
                                        "loadBalancerSourceRanges": ["10.0.0.0/8", "10.1.2.3"]},
                         expect=422)
        self.assertInvalid(r, ["spec.LoadBalancerSourceRanges"],
                           "must be a list of IP ranges")
        # Space padding is tolerated (a historical accident the server keeps).
        self.service("padded-ranges", {"type": "LoadBalancer", "selector": {"a": "b"},
                                       "ports": [{"port": 80}],
                                       "loadBalancerSourceRanges": [" 10.0.0.0/8 "]})

    def test_service_require_dual_stack_on_single_stack(self):
        """Service spec: `RequireDualStack` on a single-stack cluster → 422."""
        r = self.service("dual", {"ipFamilyPolicy": "RequireDualStack", "selector": {"a": "b"},
                                  "ports": [{"port": 80}]}, expect=422)
        self.assertInvalid(r, ["spec.ipFamilyPolicy"],
                           'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster '
                           'is not configured for dual-stack services')
        # PreferDualStack falls back to the one family.
        r = self.service("prefer-dual", {"ipFamilyPolicy": "PreferDualStack",
                                         "selector": {"a": "b"}, "ports": [{"port": 80}]})
        self.assertEqual(r.json()["spec"]["ipFamilies"], ["IPv4"])

    def test_service_headless_load_balancer(self):
        """Service spec: headless (`clusterIP: None`) LoadBalancer → 422."""
        r = self.service("headless-lb", {"type": "LoadBalancer", "clusterIP": "None",
                                         "selector": {"a": "b"}, "ports": [{"port": 80}]},
                         expect=422)
        self.assertInvalid(r, ["spec.clusterIPs[0]"],
                           "may not be set to 'None' for LoadBalancer services")

    def test_service_local_traffic_policy_on_cluster_ip(self):
        """Service spec: `externalTrafficPolicy: Local` on a ClusterIP Service → 422."""
        r = self.service("local-cip", {"externalTrafficPolicy": "Local", "selector": {"a": "b"},
                                       "ports": [{"port": 80}]}, expect=422)
        self.assertInvalid(r, ["spec.externalTrafficPolicy"],
                           "may only be set for externally-accessible services")

    def test_service_health_check_node_port_without_local(self):
        """Service spec: `healthCheckNodePort` without Local → 422."""
        r = self.service("hc-cluster", {"type": "LoadBalancer", "healthCheckNodePort": 31999,
                                        "selector": {"a": "b"}, "ports": [{"port": 80}]},
                         expect=422)
        self.assertInvalid(r, ["spec.healthCheckNodePort"],
                           "may only be set when `type` is 'LoadBalancer' and "
                           "`externalTrafficPolicy` is 'Local'")

    # --- Service side effects ----------------------------------------------------------------
    def test_type_change_clears_load_balancer_fields(self):
        """Service type change LoadBalancer → ClusterIP/NodePort clears `status.loadBalancer`,
        `healthCheckNodePort` and `allocateLoadBalancerNodePorts` (and, to ClusterIP, the node
        ports and externalTrafficPolicy; loadBalancerClass with the type)."""
        for target in ("ClusterIP", "NodePort"):
            name = "demote-" + target.lower()
            svc = self.lb(name, externalTrafficPolicy="Local",
                          loadBalancerClass="example.com/lb")
            self.assertTrue(svc["spec"]["healthCheckNodePort"])
            path = "/api/v1/namespaces/%s/services/%s" % (NS, name)
            r = self.merge(path + "/status",
                           {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.5"}]}}})
            self.assertEqual(r.status, 200, r)
            r = self.merge(path, {"spec": {"type": target}})
            self.assertEqual(r.status, 200, r)
            spec, status = r.json()["spec"], r.json()["status"]
            self.assertEqual(status["loadBalancer"], {})
            self.assertNotIn("healthCheckNodePort", spec)
            self.assertNotIn("allocateLoadBalancerNodePorts", spec)
            self.assertNotIn("loadBalancerClass", spec)
            if target == "ClusterIP":
                self.assertNotIn("nodePort", spec["ports"][0])
                self.assertNotIn("externalTrafficPolicy", spec)
            else:
                self.assertEqual(spec["ports"][0]["nodePort"], svc["spec"]["ports"][0]["nodePort"])
                self.assertEqual(spec["externalTrafficPolicy"], "Local")

    def test_local_to_cluster_frees_health_check_node_port(self):
        """`externalTrafficPolicy` Local → Cluster clears `healthCheckNodePort` (and frees it)."""
        svc = self.lb("etp-switch", externalTrafficPolicy="Local")
        hc = svc["spec"]["healthCheckNodePort"]
        r = self.merge("/api/v1/namespaces/%s/services/etp-switch" % NS,
                       {"spec": {"externalTrafficPolicy": "Cluster"}})
        self.assertEqual(r.status, 200, r)
        self.assertNotIn("healthCheckNodePort", r.json()["spec"])
        # The port is free again: another Service may take it.
        self.service("takes-hc", {"type": "NodePort", "selector": {"a": "b"},
                                  "ports": [{"port": 80, "nodePort": hc}]})

    # --- Lease -------------------------------------------------------------------------------
    def lease_body(self, name, **spec):
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": NS}, "spec": spec}

    def test_lease_time_needs_six_fractional_digits(self):
        """Lease: `renewTime`/`acquireTime` not exactly six fractional digits (MicroTime) → 400."""
        path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS
        for field, value, elem, layout_elem in (
                ("renewTime", "2026-11-27T10:00:00Z", "Z", ".000000"),
                ("acquireTime", "2026-11-27T10:00:00.123Z", ".123Z", ".000000"),
                ("renewTime", "2026-11-27T10:00:00.123456789Z", "789Z", "Z07:00")):
            r = self.create(path, self.lease_body("micro", holderIdentity="a", **{field: value}))
            self.assertStatus(r, 400, "BadRequest")
            self.assertEqual(
                r.json()["message"],
                'Lease in version "v1" cannot be handled as a Lease: parsing time "%s" as '
                '"2006-01-02T15:04:05.000000Z07:00": cannot parse "%s" as "%s"'
                % (value, elem, layout_elem))
        r = self.create(path, self.lease_body("micro", holderIdentity="a",
                                              renewTime="2026-11-27T10:00:00.123456Z"))
        self.assertEqual(r.status, 201, r)

    def test_lease_put_without_resource_version(self):
        """Lease: PUT without `metadata.resourceVersion` → 422 (`metadata.resourceVersion:
        Invalid value: 0x0: must be specified for an update`)."""
        path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS
        r = self.create(path, self.lease_body("unconditional", holderIdentity="a"))
        self.assertEqual(r.status, 201, r)
        r = self.sim.request("PUT", path + "/unconditional",
                             body=self.lease_body("unconditional", holderIdentity="b"))
        self.assertInvalid(r, ["metadata.resourceVersion"],
                           'leases.coordination.k8s.io "unconditional" is invalid: '
                           'metadata.resourceVersion: Invalid value: 0x0: must be specified for '
                           'an update')
        self.assertEqual(r.json()["details"]["kind"], "leases")

    def test_lease_put_of_missing_name_creates(self):
        """Lease: PUT of a name that does not exist → 201 (creates it)."""
        path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/put-created" % NS
        r = self.sim.request("PUT", path, body=self.lease_body("put-created", holderIdentity="a"))
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["spec"]["holderIdentity"], "a")
        self.assertEqual(self.sim.get(path).status, 200)
        # The same for the other kinds whose registry strategy allows create on update.
        r = self.sim.request("PUT", "/api/v1/namespaces/%s/services/put-svc" % NS,
                             body={"metadata": {"name": "put-svc"},
                                   "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}})
        self.assertEqual(r.status, 201, r)
        self.assertTrue(r.json()["spec"]["clusterIP"])
        r = self.sim.request("PUT", "/api/v1/namespaces/%s/endpoints/put-ep" % NS,
                             body={"metadata": {"name": "put-ep"}})
        self.assertEqual(r.status, 201, r)
        # Kinds whose strategy forbids it still answer 404.
        r = self.sim.request("PUT", "/api/v1/namespaces/%s/configmaps/nope" % NS,
                             body={"metadata": {"name": "nope"}})
        self.assertStatus(r, 404, "NotFound")

    # --- events.k8s.io/v1 Event --------------------------------------------------------------
    def event_body(self, name, **extra):
        body = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": name},
                "eventTime": "2026-11-27T10:00:00.000000Z",
                "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
                "action": "Sync", "reason": "Synced", "type": "Normal", "note": "hi",
                "regarding": {"kind": "Node", "name": "node-a", "apiVersion": "v1"}}
        body.update(extra)
        return body

    def test_event_time_needs_six_fractional_digits(self):
        """events.k8s.io/v1 Event: `eventTime` without exactly six fractional digits → 400."""
        r = self.create("/apis/events.k8s.io/v1/namespaces/%s/events" % NS,
                        self.event_body("ev-time", eventTime="2026-11-27T10:00:00Z"))
        self.assertStatus(r, 400, "BadRequest")
        self.assertIn('cannot parse "Z" as ".000000"', r.json()["message"])

    def test_event_cluster_scoped_regarding_outside_default(self):
        """events.k8s.io/v1 Event: a cluster-scoped `regarding` with the Event outside
        `default` → 422."""
        self.create("/api/v1/namespaces", {"metadata": {"name": "elsewhere"}})
        r = self.create("/apis/events.k8s.io/v1/namespaces/elsewhere/events",
                        self.event_body("ev-node"))
        self.assertInvalid(r, ["involvedObject.namespace"], "does not match event.namespace")
        for ns in ("default", "kube-system"):
            r = self.create("/apis/events.k8s.io/v1/namespaces/%s/events" % ns,
                            self.event_body("ev-node"))
            self.assertEqual(r.status, 201, r)

    # --- any ---------------------------------------------------------------------------------
    def test_object_over_one_mib_of_data(self):
        """any: object over 1 MiB of data (ConfigMap) → 422."""
        big = "x" * (512 * 1024)
        r = self.create("/api/v1/namespaces/%s/configmaps" % NS, {
            "metadata": {"name": "too-big"}, "data": {"a": big, "b": big, "c": "x"}})
        self.assertInvalid(r, ["[]"], "Too long: must have at most 1048576 bytes")
        r = self.create("/api/v1/namespaces/%s/configmaps" % NS, {
            "metadata": {"name": "just-fits"}, "data": {"a": big, "b": big}})
        self.assertEqual(r.status, 201, r)

    def test_json_patch_replace_of_missing_field(self):
        """any: JSON patch `replace` of a missing field → 200 (kubesim: 422)."""
        self.node("replace-missing")
        r = self.sim.request("PATCH", "/api/v1/nodes/replace-missing",
                             body=json.dumps([{"op": "replace", "path": "/spec/unschedulable",
                                               "value": True}]),
                             content_type="application/json-patch+json")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["spec"]["unschedulable"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
