#!/usr/bin/python3
"""Churn test of the service and route controllers through the real binary: 200 Services are
created, updated (ports, type changes) and deleted while Nodes join and leave, and the
cloud-controller-manager is killed (SIGKILL) and restarted twice in the middle of it all,
against kubesim and fake-cloud (with latency and random failures carrying a retry-after).

At the end: exactly one fake-cloud load balancer per Service that wants one (type
LoadBalancer, no loadBalancerClass), none leaked, every such Service with the finalizer and the
cloud's address as its ingress, ports and hosts as the cloud holds them; no finalizer or
ingress left on the others; deleted Services gone; every route matching a Node's pod CIDR, none
requested twice; every routed Node NetworkUnavailable=False/RouteCreated.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.environ.get("CCM_SOURCE_DIR", ""), "test", "support"))
from harness import ApiError, Cluster, wait_for  # noqa: E402

FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
NAMESPACES = ["churn-%d" % i for i in range(4)]
SERVICES = 200


def service_body(name, kind, ports=(80,)):
    spec = {"type": "LoadBalancer" if kind in ("lb", "class") else kind,
            "selector": {"app": name},
            "ports": [{"name": "p%d" % p, "protocol": "TCP", "port": p, "targetPort": 8080}
                      for p in ports]}
    if kind == "class":
        spec["loadBalancerClass"] = "example.com/elsewhere"
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


class Churn:
    def __init__(self, cluster, rng):
        self.c = cluster
        self.rng = rng
        self.services = {}  # (ns, name) -> kind at creation

    def path(self, ns, name=""):
        return "/api/v1/namespaces/%s/services%s" % (ns, "/" + name if name else "")

    def create(self, i):
        ns = NAMESPACES[i % len(NAMESPACES)]
        name = "svc-%03d" % i
        kind = ["lb"] * 7 + ["ClusterIP", "NodePort", "class"]
        kind = kind[i % 10]
        self.c.api.post(self.path(ns), service_body(name, kind))
        self.services[(ns, name)] = kind

    def patch(self, ns, name, body):
        self.c.api.patch(self.path(ns, name), body, kind="merge-patch")

    def delete(self, ns, name):
        try:
            self.c.api.delete(self.path(ns, name))
        except ApiError as e:
            if e.code != 404:
                raise
        self.services.pop((ns, name), None)

    def of_kind(self, kind):
        return sorted(k for k, v in self.services.items() if v == kind)


def problems(c, churn):
    """Everything that is not (yet) as it must end up; empty when all is well."""
    out = []
    state = c.cloud_state()
    lbs = state.get("loadBalancers", [])
    by_uid = {}
    for lb in lbs:
        by_uid.setdefault(lb["uid"], []).append(lb)
    nodes = {n["metadata"]["name"]: n for n in c.nodes()}
    eligible = sorted(nodes)
    want_uids = set()
    for ns in NAMESPACES:
        for svc in c.api.get("/api/v1/namespaces/%s/services" % ns)["items"]:
            name = svc["metadata"]["name"]
            key = "%s/%s" % (ns, name)
            if (ns, name) not in churn.services:
                if not svc["metadata"].get("deletionTimestamp"):
                    out.append("%s: should have been deleted" % key)
                else:
                    out.append("%s: still being deleted" % key)
                continue
            spec = svc["spec"]
            finalizers = svc["metadata"].get("finalizers") or []
            ingress = (svc.get("status", {}).get("loadBalancer", {}) or {}).get("ingress") or []
            wants = spec.get("type") == "LoadBalancer" and not spec.get("loadBalancerClass")
            uid = svc["metadata"]["uid"]
            if wants:
                want_uids.add(uid)
                found = by_uid.get(uid, [])
                if len(found) != 1:
                    out.append("%s: %d cloud load balancers" % (key, len(found)))
                    continue
                lb = found[0]
                if FINALIZER not in finalizers:
                    out.append("%s: no finalizer" % key)
                if [i.get("ip") for i in ingress] != [lb["ip"]]:
                    out.append("%s: ingress %s, cloud %s" % (key, ingress, lb["ip"]))
                want_ports = sorted(p["port"] for p in spec["ports"])
                if sorted(p["port"] for p in lb["ports"]) != want_ports:
                    out.append("%s: cloud ports %s, spec %s" % (key, lb["ports"], want_ports))
                if lb["nodes"] != eligible:
                    out.append("%s: cloud hosts %s, nodes %s" % (key, lb["nodes"], eligible))
            else:
                if FINALIZER in finalizers:
                    out.append("%s: finalizer left on a %s service" % (key, spec.get("type")))
                if ingress:
                    out.append("%s: ingress left on a %s service" % (key, spec.get("type")))
    for ns, name in churn.services:
        try:
            c.api.get("/api/v1/namespaces/%s/services/%s" % (ns, name))
        except ApiError as e:
            if e.code == 404:
                out.append("%s/%s: vanished" % (ns, name))
    leaked = [lb for lb in lbs if lb["uid"] not in want_uids]
    for lb in leaked:
        out.append("leaked load balancer %s of %s/%s" % (lb["name"], lb["namespace"],
                                                          lb["service"]))
    # Routes: exactly the nodes' pod CIDRs.
    want_routes = {}
    for name, n in nodes.items():
        for cidr in n["spec"].get("podCIDRs") or ([n["spec"]["podCIDR"]]
                                                  if n["spec"].get("podCIDR") else []):
            want_routes[cidr] = name
        if not n["spec"].get("podCIDR"):
            out.append("node %s: no pod CIDR yet" % name)
    have_routes = {r["destinationCIDR"]: r["targetNode"] for r in state.get("routes", [])}
    if have_routes != want_routes:
        out.append("routes %s, want %s" % (sorted(have_routes.items()), sorted(want_routes.items())))
    for name, n in nodes.items():
        if not n["spec"].get("podCIDR"):
            continue
        conds = {x["type"]: x for x in n.get("status", {}).get("conditions") or []}
        nu = conds.get("NetworkUnavailable")
        if not nu or nu["status"] != "False" or nu.get("reason") != "RouteCreated":
            out.append("node %s: NetworkUnavailable %s" % (name, nu))
    return out


def main():
    seed = int(os.environ.get("CHURN_SEED", "20261121"))
    rng = random.Random(seed)
    print("seed", seed, flush=True)
    with Cluster(nodes=5) as c:
        cloud = c.fake_cloud(
            autoInstances={"zones": ["z1", "z2"]},
            loadBalancer={"ipPool": "10.99.0.0/16"},
            latency={"ensureLoadBalancer": "10ms", "updateLoadBalancer": "5ms",
                     "createRoute": "5ms"},
            faults=[
                {"op": "ensureLoadBalancer", "code": "UNAVAILABLE", "message": "injected",
                 "probability": 0.1, "retryAfter": "300ms"},
                {"op": "createRoute", "code": "UNAVAILABLE", "message": "injected",
                 "probability": 0.1, "retryAfter": "300ms"},
            ])
        extra = ["--configure-cloud-routes=true", "--allocate-node-cidrs=true",
                 "--cluster-cidr=10.244.0.0/16", "--kube-api-qps=1000", "--kube-api-burst=2000"]
        for ns in NAMESPACES:
            c.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": ns}})
        churn = Churn(c, rng)

        ccm = c.start_ccm(cloud, extra)
        for i in range(SERVICES // 2):
            churn.create(i)
            if i == 60:
                c.add_nodes(count=3)
        # Killed while ensuring: no ordering between the kill and the cloud calls.
        wait_for(lambda: len(c.cloud_state().get("loadBalancers", [])) >= 20,
                 "the first load balancers")
        ccm.kill()
        print("killed the first time", flush=True)
        for i in range(SERVICES // 2, SERVICES):
            churn.create(i)
        ccm = c.start_ccm(cloud, extra)

        # Updates while it runs: ports, LoadBalancer -> ClusterIP, ClusterIP -> LoadBalancer.
        lbs = churn.of_kind("lb")
        rng.shuffle(lbs)
        for ns, name in lbs[:30]:
            churn.patch(ns, name, {"spec": {"ports": [
                {"name": "p80", "protocol": "TCP", "port": 80, "targetPort": 8080},
                {"name": "p443", "protocol": "TCP", "port": 443, "targetPort": 8443}]}})
        for ns, name in lbs[30:50]:
            churn.patch(ns, name, {"spec": {"type": "ClusterIP"}})
            churn.services[(ns, name)] = "ClusterIP"
        flipped = set(lbs[30:50])
        for ns, name in [k for k in churn.of_kind("ClusterIP") if k not in flipped][:10]:
            churn.patch(ns, name, {"spec": {"type": "LoadBalancer"}})
            churn.services[(ns, name)] = "lb"
        nodes = sorted(n["metadata"]["name"] for n in c.nodes())
        for name in nodes[:2]:
            c.admin("DELETE", "/nodes/" + name)
        # Deletions, half of them while the host is down.
        victims = sorted(churn.services)
        rng.shuffle(victims)
        for ns, name in victims[:25]:
            churn.delete(ns, name)
        ccm.kill()
        print("killed the second time", flush=True)
        for ns, name in victims[25:50]:
            churn.delete(ns, name)
        c.add_nodes(count=2)
        ccm = c.start_ccm(cloud, extra)
        for i in range(SERVICES, SERVICES + 10):
            churn.create(i)

        # Faults off for the final convergence check (retries of the last failures still run).
        c.update_cloud(faults=[])
        last = []

        def settled():
            last[:] = problems(c, churn)
            return not last

        try:
            wait_for(settled, "everything to converge", timeout=240, interval=0.5)
        except AssertionError:
            print("still wrong (%d):" % len(last))
            for p in last[:60]:
                print("  " + p)
            print(ccm.output()[-8000:])
            raise
        state = c.cloud_state()
        stats = state.get("stats", {})
        print("services %d (load-balanced %d), load balancers %d, created %d, deleted %d, "
              "routes %d, route creates %d, duplicate route creates %d" % (
                  len(churn.services),
                  len(churn.of_kind("lb")), len(state["loadBalancers"]), stats.get("lbCreates"),
                  stats.get("lbDeletes"), len(state["routes"]), stats.get("routeCreates"),
                  stats.get("duplicateRouteCreates")), flush=True)
        assert len(state["loadBalancers"]) == len(churn.of_kind("lb"))
        assert stats.get("duplicateRouteCreates") == 0, stats
        ccm.kill()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
