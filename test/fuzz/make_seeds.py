#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (test/fuzz/corpus/<target>/). The seeds are
committed; this script documents where they come from and regenerates them:

    python3 test/fuzz/make_seeds.py

Each target's first input byte selects a mode (see the target's banner comment); the seeds
cover every mode with realistic input taken from the repository's own test data.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


NODE = read("test/host/kube/testdata/node.json")
SERVICE = read("test/host/kube/testdata/service.json")
NODE_MIN = json.dumps({"kind": "Node", "apiVersion": "v1", "metadata": {
    "name": "node-00001", "uid": "u1", "resourceVersion": "7",
    "labels": {"b": "2", "a": "1", "a": "3"}},
    "spec": {"providerID": "fake://node-00001", "podCIDR": "10.244.1.0/24",
             "podCIDRs": ["10.244.1.0/24", "fd00::/64"],
             "taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                         "value": "true", "effect": "NoSchedule",
                         "timeAdded": "2026-01-01T00:00:00Z"}]},
    "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
               "conditions": [{"type": "Ready", "status": "True",
                               "lastHeartbeatTime": "2026-01-01T00:00:00Z"}]}}).encode()


def kubeconfig():
    base = """apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUI=
    tls-server-name: kubernetes
contexts:
- name: c
  context: {cluster: k, user: u, namespace: kube-system}
users:
- name: u
  user:
"""
    write("kubeconfig", "token", base + "    token: abcdefghijklmnop\n")
    write("kubeconfig", "token-file", base + "    tokenFile: token\n")
    write("kubeconfig", "basic", base + "    username: admin\n    password: hunter2hunter2\n")
    write("kubeconfig", "client-cert", base + "    client-certificate-data: QUJD\n"
          "    client-key-data: REVG\n")
    write("kubeconfig", "exec", base + """    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./credential-helper
      args: [--cluster, k]
      env: [{name: A, value: b}]
      provideClusterInfo: true
      interactiveMode: Never
""")
    write("kubeconfig", "impersonate", base + "    token: t0k3n-t0k3n\n    as: someone\n"
          "    as-groups: [g1, g2]\n")
    write("kubeconfig", "insecure", base.replace(
        "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUI=\n",
        "    insecure-skip-tls-verify: true\n    proxy-url: http://proxy:3128\n")
          + "    token: x\n")
    write("kubeconfig", "auth-provider", base + "    auth-provider: {name: gcp}\n")
    write("kubeconfig", "json", json.dumps({"apiVersion": "v1", "kind": "Config",
                                            "current-context": "c", "clusters": [],
                                            "contexts": [], "users": []}))
    write("kubeconfig", "anchors", "a: &x [1, 2]\nb: *x\ncurrent-context: *x\n")


def watch_stream():
    def ev(t, obj):
        return json.dumps({"type": t, "object": obj}).encode() + b"\n"
    node = json.loads(NODE)
    svc = json.loads(SERVICE)
    bookmark = {"kind": "Node", "apiVersion": "v1",
                "metadata": {"resourceVersion": "99", "annotations": {
                    "k8s.io/initial-events-end": "true"}}}
    gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "too old resource version: 1 (99)", "reason": "Expired", "code": 410}
    write("watch_stream", "node-events", b"\x00" + ev("ADDED", node) + ev("MODIFIED", node) +
          ev("BOOKMARK", bookmark) + ev("DELETED", node))
    write("watch_stream", "node-min", b"\x00" + ev("ADDED", json.loads(NODE_MIN)))
    write("watch_stream", "node-error", b"\x00" + ev("ADDED", node) + ev("ERROR", gone))
    write("watch_stream", "node-unknown", b"\x00" + ev("WEIRD", node) + b'{"object":{}}')
    write("watch_stream", "node-truncated", b"\x00" + ev("ADDED", node)[:-200])
    write("watch_stream", "service-events", b"\x01" + ev("ADDED", svc) + ev("MODIFIED", svc) +
          ev("BOOKMARK", bookmark) + ev("ERROR", gone) + ev("DELETED", svc))
    lst = {"kind": "NodeList", "apiVersion": "v1",
           "metadata": {"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3},
           "items": [node, json.loads(NODE_MIN)]}
    write("watch_stream", "node-list", b"\x02" + json.dumps(lst).encode())
    lst = {"kind": "ServiceList", "apiVersion": "v1", "metadata": {"resourceVersion": "42"},
           "items": [svc, svc]}
    write("watch_stream", "service-list", b"\x03" + json.dumps(lst).encode())
    write("watch_stream", "deep-nesting", b"\x00" + b'{"type":"ADDED","object":{"metadata":'
          b'{"managedFields":' + b"[" * 3000 + b"]" * 3000 + b"}}}")


def object_decoders():
    write("object_decoders", "node", b"\x00" + NODE)
    write("object_decoders", "node-min", b"\x00" + NODE_MIN)
    write("object_decoders", "service", b"\x01" + SERVICE)
    svc = json.loads(SERVICE)
    svc["metadata"]["finalizers"] = ["service.kubernetes.io/load-balancer-cleanup", "x"]
    svc["status"] = {"loadBalancer": {"ingress": [
        {"ip": "203.0.113.1", "ipMode": "VIP",
         "ports": [{"port": 80, "protocol": "TCP", "error": "X"}]},
        {"hostname": "lb.example"}]}}
    svc["spec"]["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    svc["spec"]["loadBalancerClass"] = None
    write("object_decoders", "service-full", b"\x01" + json.dumps(svc).encode())
    write("object_decoders", "wrong-types", b"\x00" + json.dumps(
        {"metadata": {"name": 5, "labels": ["a"], "creationTimestamp": "yesterday"},
         "spec": {"taints": {"key": "x"}, "unschedulable": "yes"},
         "status": {"conditions": [None, 1, "x"]}}).encode())


def patch():
    # Byte 0: patch type (0 JSON patch, 1 merge, 2 strategic) and kind ((b / 3) % 4).
    write("strategic_merge_patch", "smp-labels",
          b"\x02" + b'{"metadata":{"labels":{"a":null,"b":"2"}}}')
    write("strategic_merge_patch", "smp-taints",
          b"\x02" + b'{"spec":{"taints":[{"key":"k","$patch":"delete"},'
          b'{"key":"n","effect":"NoExecute"}],"$setElementOrder/taints":[{"key":"n"}]}}')
    write("strategic_merge_patch", "smp-conditions",
          b"\x02" + b'{"status":{"conditions":[{"type":"NetworkUnavailable","status":"False"}],'
          b'"addresses":[{"$patch":"replace"}]}}')
    write("strategic_merge_patch", "smp-retainkeys",
          b"\x05" + b'{"spec":{"$retainKeys":["ports"],"ports":[{"port":80,"$patch":"delete"}]},'
          b'"metadata":{"$deleteFromPrimitiveList/finalizers":["f1"]}}')
    write("strategic_merge_patch", "merge", b"\x01" + b'{"metadata":{"finalizers":null},'
          b'"spec":{"podCIDRs":["10.0.1.0/24"]}}')
    write("strategic_merge_patch", "json-patch",
          b"\x00" + b'[{"op":"test","path":"/metadata/name","value":"n1"},'
          b'{"op":"add","path":"/metadata/labels/x~1y","value":"1"},'
          b'{"op":"remove","path":"/spec/taints/0"},'
          b'{"op":"move","from":"/metadata/labels/a","path":"/metadata/annotations"},'
          b'{"op":"copy","from":"/spec","path":"/status/x"},'
          b'{"op":"replace","path":"/status/conditions/-","value":{}}]')


def openstack():
    conf = read("manifests/examples/openstack-cloud.conf")
    write("openstack_config", "example", b"\x00" + conf)
    write("openstack_config", "password", b"\x00" + b"""[Global]
auth-url = https://keystone.example:5000/v3
username = demo
password = "secret \\"pw\\" \\n with escapes"
user-domain-name = Default
tenant-id = p1
region = RegionOne
ca-file = ca.pem
tls-insecure
[LoadBalancer "fast"]
floating-network-id = abc
floating-subnet-tags = !a&b,c
node-selector = k=v, k2
[LoadBalancerClass "internal"]
subnet-id = s1
[Networking]
ipv6-support-disabled = true
address-sort-order = 10.0.0.0/8, 192.168.0.0/16
[BlockStorage]
bs-version = v3
""")
    write("openstack_config", "trust", b"\x00" + b"""; comment
# comment
[global]
AUTH-URL=http://keystone:5000/v3
trust-id = t1
trustee-id = u1
trustee-password = trusty-secret
[Route]
router-id = r1
[Metadata]
search-order = metadataService
request-timeout = 30s
""")
    write("openstack_config", "use-clouds", b"\x00" + b"""[Global]
use-clouds = true
clouds-file = /nonexistent-ccm-fuzz/clouds.yaml
cloud = openstack
""")
    write("openstack_config", "continuation", b"\x00" + b"[Global]\nauth-url = https://k/v3 \\\n"
          b"  continued\napplication-credential-id = a\napplication-credential-secret = s3cr3t-app\n")
    write("openstack_config", "clouds-yaml", b"\x01" + b"""clouds:
  openstack:
    auth:
      auth_url: https://keystone.example:5000/v3
      username: demo
      password: secret-pw
      project_id: p1
      user_domain_name: Default
      application_credential_id: a
      application_credential_secret: b
    region_name: RegionOne
    interface: internal
    cacert: /nonexistent-ccm-fuzz/ca.pem
    verify: false
""")


def fake_cloud():
    example = read("manifests/examples/fake-cloud.yaml")
    write("fake_cloud_config", "example", b"\x00" + example)
    doc = read("docs/providers/fake-cloud.md").decode()
    start = doc.index("```yaml\n") + len("```yaml\n")
    write("fake_cloud_config", "docs", b"\x00" + doc[start:doc.index("```", start)].encode())
    write("fake_cloud_config", "json", b"\x00" + json.dumps({
        "region": "r", "autoInstances": {"zones": ["a", "b"], "externalCidr": "198.51.100.0/24"},
        "faults": [{"op": "*", "code": 14, "probability": 0.5, "count": 3,
                    "retryAfter": "2s", "nodes": ["n1"]}],
        "throttle": {"qps": 5, "burst": 1, "retryAfter": "1s"},
        "latency": "10ms", "capabilities": {"routes": False}}).encode())
    write("fake_cloud_config", "world", b"\x01" + b"""instances:
  - {name: vm-1, state: shutdown, zone: z, addresses: [{type: InternalIP, address: 10.0.0.1}]}
  - {name: vm-2, state: absent}
unlistedInstances: unknown
latency: {metadata: 20ms, ensureLoadBalancer: 1s}
latencyIgnoresDeadline: true
""")


def plugin_output():
    """Scripts for script_plugin.c: status byte, then operations (op byte % 12, arguments)."""
    def s(text):
        b = text.encode() if isinstance(text, str) else text
        return bytes([len(b)]) + b

    def u32(v):
        return struct.pack(">I", v & 0xFFFFFFFF)

    def metadata(index=0, size_choice=0, pid="fake://vm-1", addrs=(("InternalIP", "10.0.0.1"),),
                 labels=(("example.com/pool", "blue"),)):
        out = bytes([0, index, size_choice]) + s(pid) + s("m1.small") + s("zone-a") + s("r1")
        out += bytes([len(addrs)]) + b"".join(s(t) + s(a) for t, a in addrs) + b"\x01"
        out += bytes([len(labels)]) + b"".join(s(k) + s(v) for k, v in labels) + b"\x01"
        return out + b"\x01"

    def lb_status(ips=("203.0.113.1",)):
        out = bytes([2, len(ips)])
        for ip in ips:
            out += b"\x00" + s(ip) + s("") + s("VIP") + b"\x01" + b"\x00" + u32(80) + s("TCP") + \
                s("") + b"\x01" + b"\x01" + b"\x01"
        return out + b"\x00" + b"\x01" + b"\x01"

    def route(cidr="10.244.1.0/24", node="node-1"):
        return bytes([3, 0]) + s("r1") + s(node) + s(cidr) + b"\x02" + b"\x01" + \
            s("InternalIP") + s("10.0.0.1") + b"\x01" + b"\x01"

    ok = b"\x00"
    # Byte 0 of the input picks the call (% 12): 0 exists, 1 shutdown, 2 metadata, 3 batch,
    # 4 get LB, 5 LB name, 6 ensure, 7 update, 8 delete, 9 list routes, 10 create, 11 delete.
    write("plugin_output", "exists", b"\x00" + ok + bytes([6]) + u32(2))
    write("plugin_output", "exists-unknown-value", b"\x00" + ok + bytes([6]) + u32(77))
    write("plugin_output", "shutdown", b"\x01" + ok + bytes([6]) + u32(2))
    write("plugin_output", "metadata", b"\x02" + ok + metadata())
    write("plugin_output", "metadata-bad-address", b"\x02" + ok +
          metadata(addrs=(("Bogus", "x"), ("InternalIP", "999.1.1.1"))))
    write("plugin_output", "metadata-short-struct", b"\x02" + ok + metadata(size_choice=3))
    write("plugin_output", "metadata-twice-and-error", b"\x02" + bytes([4]) + metadata() +
          metadata(index=1) + bytes([5]) + u32(30) + s("gone"))
    write("plugin_output", "batch", bytes([3 + 12]) + ok + metadata(0) + metadata(1) +
          bytes([1, 2]) + u32(14) + s("down"))
    write("plugin_output", "batch-item-ok-code", bytes([3 + 24]) + bytes([13]) + metadata(0) +
          bytes([1, 1]) + u32(0) + s(""))
    write("plugin_output", "get-lb", b"\x04" + ok + bytes([7, 1]) + lb_status())
    write("plugin_output", "lb-name", b"\x05" + ok + bytes([4]) + s("a" * 32))
    write("plugin_output", "ensure", b"\x06" + ok + lb_status(("203.0.113.1", "2001:db8::1")))
    write("plugin_output", "ensure-no-status", b"\x06" + ok)
    write("plugin_output", "ensure-busy", b"\x06" + bytes([7]) + bytes([5]) + u32(3600000) +
          s("busy"))
    write("plugin_output", "update-raw-code", b"\x07" + bytes([200]) + u32(12345))
    write("plugin_output", "delete-elsewhere", b"\x08" + bytes([14]))
    write("plugin_output", "routes", b"\x09" + ok + route() + route("fd00::/64") +
          route("nonsense"))
    write("plugin_output", "create-route-stray", b"\x0a" + ok + bytes([8, 3]) + s("late"))
    write("plugin_output", "log-and-metrics", bytes([251]) + ok +
          bytes([9, 2]) + s("hello") + bytes([10, 0, 0, 1, 0]) + s("help") + u32(16) + b"\x01" +
          bytes([10, 2, 3]) + s("Bad-Name") + b"\x00" + s("") + u32(1))


if __name__ == "__main__":
    kubeconfig()
    watch_stream()
    object_decoders()
    patch()
    openstack()
    fake_cloud()
    plugin_output()
