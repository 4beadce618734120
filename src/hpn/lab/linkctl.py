"""Set lab links down and up at both ends, as a cut and a re-plugged cable do (``fail``,
``repair``): a repaired ToR brings its uplinks up first, and routes the kernel flushed with a
device are put back."""

from __future__ import annotations

import time

from hpn.lab import netns
from hpn.lab.plan import ENDPOINT_KINDS, LabPlan
from hpn.lab.routes import host_commands, static_commands


def _set(plan: LabPlan, links: list[int], state: str, hops: dict, want: dict) -> dict:
    """Set links down or up at both ends (a cut cable: both sides lose light at once). A ToR
    coming back brings its uplinks up first and holds its NIC ports down until BGP has given
    it the fabric's routes again (as switches hold ports at boot), so hosts do not send into
    a ToR that cannot forward yet."""
    lk, kind = plan.fabric.links, plan.fabric.nodes.kind
    up_first = [ln for ln in links if kind[lk.dst[ln]] not in ENDPOINT_KINDS]
    if state == "up" and up_first and plan.spec.control == "bgp" and len(up_first) < len(links):
        from hpn.lab import bgp

        _set_now(plan, up_first, "up", hops)
        t = time.monotonic()
        ns = int(plan.ns_of_node[int(lk.src[up_first[0]])])
        while time.monotonic() - t < 10:
            have = bgp.kernel_routes(plan.namespaces[ns])
            subnet = f"/{plan.subnet_len}"
            if all(have.get(p) == v for p, v in want[ns].items() if p.endswith(subnet)):
                break
            time.sleep(0.02)
        held = time.monotonic() - t
        _set_now(plan, [ln for ln in links if ln not in up_first], "up", hops)
        return {"nic_ports_held_s": round(held, 4)}
    _set_now(plan, links, state, hops)
    return {}


def _set_now(plan: LabPlan, links: list[int], state: str, hops: dict) -> None:
    src = plan.fabric.links.src
    by_ns: dict[int, list[str]] = {}
    for ln in links:
        for end in (ln, ln ^ 1):
            ns = int(plan.ns_of_node[int(src[end])])
            by_ns.setdefault(ns, []).append(f"link set {plan.ifname[end]} {state}")
    # down: the namespace holding the most ends first, in one batch. A port set down takes
    # its veth peer's carrier with it, and the lab's kernels skip a next hop without carrier
    # (ignore_routes_with_linkdown), so a failed switch's links all fail in that one batch;
    # one namespace after another (50-100 ms each on a loaded machine) would spread a core's
    # failure over 0.2-0.6 s, a gap the model's switch failure does not have
    order = sorted(by_ns, key=lambda ns: -len(by_ns[ns])) if state != "up" else list(by_ns)
    for ns in order:
        netns.ip_batch(by_ns[ns], plan.namespaces[ns])
    if state != "up":
        return
    # routes through a device that went down are flushed by the kernel: put them back
    for ns in by_ns:
        if plan.ns_role[ns] == "host":
            cmds = [c for c in host_commands(plan, ns) if c.startswith("route replace")]
        elif plan.spec.control == "static":
            cmds = static_commands(plan, ns, hops)
        else:
            continue
        netns.ip_batch(cmds, plan.namespaces[ns])
