"""What Octavia refuses when a load balancer's provider is ovn (ovn-octavia-provider).

The ovn driver is an L4 load balancer: listeners and pools speak TCP, UDP or SCTP only, the
one algorithm is SOURCE_IP_PORT, health monitors are TCP or UDP-CONNECT, members have no
separate monitor address or port, listeners take no allowed_cidrs, and a load balancer gets
no additional VIPs. Octavia answers a request the driver refuses with 501 and the driver's
reason ("Provider 'ovn' does not support a requested option: ..."), before anything is
stored. L7 policies are not served by the simulator at all.
"""

OVN = "ovn"
PROTOCOLS = ("TCP", "UDP", "SCTP")
ALGORITHMS = ("SOURCE_IP_PORT",)
MONITOR_TYPES = ("TCP", "UDP-CONNECT")


class ProviderRefusal(Exception):
    """Octavia's ProviderUnsupportedOptionError: the HTTP status and the fault string."""

    def __init__(self, reason):
        self.status = 501
        self.message = "Provider '%s' does not support a requested option: %s" % (OVN, reason)
        super().__init__(self.message)


def _protocol(protocol):
    if protocol not in PROTOCOLS:
        raise ProviderRefusal("OVN provider does not support %s protocol" % protocol)


def check_listener(spec):
    """A listener to create (or the fields of an update that the driver checks)."""
    if "protocol" in spec:
        _protocol(spec["protocol"])
    if spec.get("allowed_cidrs"):
        raise ProviderRefusal("OVN provider does not support allowed_cidrs option")


def check_pool(spec):
    """A pool to create or the fields of an update; with its monitor and members."""
    if "protocol" in spec:
        _protocol(spec["protocol"])
    if "lb_algorithm" in spec and spec["lb_algorithm"] not in ALGORITHMS:
        raise ProviderRefusal("OVN provider does not support %s algorithm"
                              % spec["lb_algorithm"])
    if spec.get("healthmonitor"):
        check_monitor(spec["healthmonitor"])
    for member in spec.get("members") or []:
        check_member(member)


def check_monitor(spec):
    kind = spec.get("type")
    if kind not in MONITOR_TYPES:
        raise ProviderRefusal("OVN provider does not support %s health monitor type. "
                              "Supported types: %s" % (kind, ", ".join(MONITOR_TYPES)))


def check_member(spec):
    if spec.get("monitor_address") or spec.get("monitor_port"):
        raise ProviderRefusal("OVN Load Balancer does not support different member monitor "
                              "address or port.")


def check_load_balancer(spec):
    """A load balancer to create, fully populated or not."""
    if spec.get("additional_vips"):
        raise ProviderRefusal("OVN provider does not support additional VIPs")
    for listener in spec.get("listeners") or []:
        check_listener(listener)
        if listener.get("default_pool"):
            check_pool(listener["default_pool"])
    for pool in spec.get("pools") or []:
        check_pool(pool)
