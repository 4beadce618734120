"""Bring a lab up and down.

``up`` first removes whatever a previous lab of the same name left (a crash or ``kill -9``
mid-build), writes its state file before touching the kernel (so ``down`` always knows what
to remove), then creates namespaces, veth pairs, addresses, ``tbf`` rate limits, sysctls
(forwarding, L4 multipath hashing with the namespace's seed) and routes: static, or FRR's
BGP on every switch, waiting until every switch's kernel holds the equal-cost routes the
fabric implies.
"""

from __future__ import annotations

import time
from typing import Any

from hpn.errors import InputError
from hpn.lab import netns
from hpn.lab.plan import LabPlan, LabSpec, make_plan
from hpn.lab.routes import host_commands, static_commands, switch_next_hops

STATE_FILE = "state.json"
_TBF_LATENCY = "100ms"


def _sysctls(plan: LabPlan, ns: int) -> dict[str, str | int]:
    node = plan.nodes_in_ns[ns][0]
    values: dict[str, str | int] = {
        "ipv6/conf/all/disable_ipv6": 1,
        "ipv6/conf/default/disable_ipv6": 1,
        "ipv4/conf/all/rp_filter": 0,
        "ipv4/conf/default/rp_filter": 0,
        "ipv4/conf/all/ignore_routes_with_linkdown": 1,
        "ipv4/conf/default/ignore_routes_with_linkdown": 1,
        "ipv4/fib_multipath_hash_policy": 1,  # L4: addresses, ports, protocol
        "ipv4/fib_multipath_use_neigh": 1,
        # ARP from a link's own /31, not the NIC address on lo (as hosts with a loopback
        # address are configured), so a ToR answers on a port the host never used before
        "ipv4/conf/all/arp_announce": 2,
        "ipv4/fib_multipath_hash_seed": int(plan.kernel_seed[node]),
        "ipv4/ip_forward": 0 if plan.ns_role[ns] == "host" else 1,
    }
    return values


def _link_commands(plan: LabPlan) -> list[str]:
    src = plan.fabric.links.src
    cmds = []
    for ln in plan.links[0::2] if len(plan.links) else []:
        ln = int(ln)
        a, b = plan.ns(int(src[ln])), plan.ns(int(src[ln ^ 1]))
        near, far = plan.ifname[ln], plan.ifname[ln ^ 1]
        cmds.append(f"link add {near} netns {a} type veth peer name {far} netns {b}")
    return cmds


def _ns_commands(plan: LabPlan) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """Per namespace: ip commands (addresses, links up) and tc commands (rate limits)."""
    src = plan.fabric.links.src
    ipc: dict[int, list[str]] = {i: ["link set lo up"] for i in range(len(plan.namespaces))}
    tcc: dict[int, list[str]] = {i: [] for i in range(len(plan.namespaces))}
    for ln in plan.links:
        ln = int(ln)
        ns = int(plan.ns_of_node[src[ln]])
        name = plan.ifname[ln]
        ipc[ns].append(f"addr add {plan.link_ip(ln)}/31 dev {name}")
        ipc[ns].append(f"link set {name} up")
        rate = max(int(plan.rate_bps(ln)), 8000)
        burst = max(rate // 8 // 100, 16 * 1514)  # 10 ms of bytes, at least 16 frames
        tcc[ns].append(
            f"qdisc add dev {name} root tbf rate {rate}bit burst {burst} latency {_TBF_LATENCY}"
        )
    return ipc, tcc


def up(spec: LabSpec, wait_s: float = 60.0, replace: bool = False) -> dict[str, Any]:
    """Build the lab; returns its status. Any failure removes what was built. A lab of that
    name that is up is refused unless ``replace``; one a killed command left half-built is
    removed first. One command at a time per lab name (:func:`netns.locked`)."""
    netns.require()
    plan = make_plan(spec)
    if spec.control == "bgp":
        from hpn.lab import bgp

        bgp.require(spec.bfd)
    elif spec.bfd:
        raise InputError("bfd", "BFD runs with BGP: drop --control static")
    with netns.locked(plan.prefix, "name"):
        st = status(spec.name)
        if st["status"] == "up" and not replace:
            raise InputError(
                "name",
                f"lab {spec.name!r} is up; hpn lab down --name {spec.name} first, "
                "or hpn lab up --replace",
            )
        return _up(plan, spec, wait_s)


def _up(plan: LabPlan, spec: LabSpec, wait_s: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    prefix = plan.prefix
    netns.remove_lab(prefix)
    d = netns.state_dir(prefix)
    d.mkdir(parents=True, exist_ok=True)
    state = {"spec": spec.model_dump(), "status": "building", "started": time.time()}
    netns.write_json(d / STATE_FILE, state)
    try:
        netns.ip_batch([f"netns add {n}" for n in plan.namespaces])
        for i, name in enumerate(plan.namespaces):
            netns.write_sysctls(name, _sysctls(plan, i))
        netns.ip_batch(_link_commands(plan))
        ipc, tcc = _ns_commands(plan)
        hops = switch_next_hops(plan)
        for i, name in enumerate(plan.namespaces):
            cmds = ipc[i]
            if plan.ns_role[i] == "host":
                cmds = cmds + host_commands(plan, i)
            elif spec.control == "static":
                cmds = cmds + static_commands(plan, i, hops)
            netns.ip_batch(cmds, name)
            netns.tc_batch(tcc[i], name)
        t_links = time.perf_counter() - t0
        converge = None
        if spec.control == "bgp":
            from hpn.lab import bgp

            bgp.start(plan, d)
            converge = bgp.wait_converged(plan, hops, wait_s)
        state.update(status="up", built_s=round(time.perf_counter() - t0, 3))
        state["links_s"] = round(t_links, 3)
        state["converge_s"] = converge
        netns.write_json(d / STATE_FILE, state)
    except BaseException:
        netns.remove_lab(prefix)
        raise
    return status(spec.name)


def load(name: str) -> tuple[LabPlan, dict]:
    """The plan and state of a running lab."""
    import json

    netns.require()
    spec = LabSpec(name=name)
    path = netns.state_dir(spec.prefix) / STATE_FILE
    if not path.exists():
        raise InputError("lab", f"no lab named {name!r} is up (hpn lab up --name {name})")
    state = json.loads(path.read_text())
    return make_plan(LabSpec(**state["spec"])), state


def status(name: str = "0") -> dict[str, Any]:
    """What is up: namespaces, links, processes, and whether it is complete."""
    netns.require()
    spec = LabSpec(name=name)
    present = netns.lab_namespaces(spec.prefix)
    try:
        plan, state = load(name)
    except Exception:
        return {
            "name": name,
            "status": "down" if not present else "partial",
            "namespaces": len(present),
        }
    pids = sum(len(netns.ns_pids(n)) for n in present)
    s = plan.spec
    st = state["status"] if len(present) == len(plan.namespaces) else "partial"
    extra: dict[str, Any] = {}
    if st == "up":
        from hpn.lab import ops
        from hpn.lab.impair import impaired

        rows, down = ops.link_state(plan)
        sessions = ops.bgp_sessions(plan)
        extra = {
            "links_down": down,
            "links_dropping": impaired(plan),
            "bgp_sessions": len(sessions),
            "bgp_established": sum(x["state"] == "Established" for x in sessions),
            "routes": ops.route_counts(plan),
            "link_state": rows,
            "sessions": sessions,
        }
        if down or extra["links_dropping"] or extra["bgp_established"] < len(sessions):
            st = "degraded"  # `hpn lab repair` brings the links back
    return {
        "name": name,
        "prefix": plan.prefix,
        "status": st,
        "preset": s.preset,
        "control": s.control,
        "ecmp_seeds": s.ecmp_seeds,
        "rate_scale": s.rate_scale,
        "namespaces": len(present),
        "namespaces_expected": len(plan.namespaces),
        "hosts": plan.ns_role.count("host"),
        "switches": len(plan.namespaces) - plan.ns_role.count("host"),
        "nics": int(len(plan.endpoints)),
        "links": int(len(plan.links) // 2),
        "link_rates_bps": sorted({int(plan.rate_bps(int(ln))) for ln in plan.links}),
        "processes": pids,
        "built_s": state.get("built_s"),
        "converge_s": state.get("converge_s"),
        "subnets": [plan.cidr(n) for n, _ in plan.subnets],
        **extra,
    }


def down(name: str = "0") -> dict[str, Any]:
    """Remove the lab (also one left half-built by a killed ``up``)."""
    netns.require()
    prefix = LabSpec(name=name).prefix
    with netns.locked(prefix, "name"):
        removed = netns.remove_lab(prefix)
    return {
        "name": name,
        "prefix": prefix,
        "removed": removed,
        "left": len(netns.lab_namespaces(prefix)),
    }
