"""Failures with real packets: break a NIC port's link, a whole ToR, or flap a link while
paced flows run to and from the NICs concerned, then measure per flow the longest gap
between arrivals, the packets lost, and whether the NIC was cut off until repair.

A link goes down as a cable pull does on a veth pair: the ToR's end is set down, so the host
sees carrier loss (its multipath default skips the port: ``ignore_routes_with_linkdown``)
and the ToR loses the interface (FRR withdraws the NIC's /32). A ToR failure downs every
interface of the ToR. Repair sets them up again (static mode re-applies the routes the
kernel flushed with the interface).
"""

from __future__ import annotations

import queue
import re
import threading
import time
from typing import Any, TypedDict

import numpy as np

from hpn.errors import InputError
from hpn.lab import netns
from hpn.lab.build import load
from hpn.lab.plan import ENDPOINT_KINDS, LabPlan
from hpn.lab.routes import host_commands, static_commands, switch_next_hops
from hpn.lab.sports import sports_for
from hpn.lab.udp import FlowSet, run_flows
from hpn.topology.fabric import NodeKind

_TARGET = re.compile(r"^(link|tor|flap):(.*)$")
_KEYS = {
    "link": ("host", "nic", "port"),
    "flap": ("host", "nic", "port", "period", "count"),
    "tor": ("segment", "rail", "plane"),
}


def parse_target(plan: LabPlan, text: str) -> tuple[str, list[int], dict[str, float]]:
    """``link:host=H,nic=N,port=P`` / ``tor:segment=S,rail=R,plane=P`` /
    ``flap:host=H,nic=N,port=P[,period=0.4,count=3]`` -> (kind, ToR-side links, extras)."""
    m = _TARGET.match(text.strip())
    if not m:
        raise InputError("target", f"expected link:..., tor:... or flap:..., got {text!r}")
    kind, body = m.groups()
    kv: dict[str, float] = {}
    allowed = _KEYS[kind]
    for part in filter(None, body.split(",")):
        k, _, v = part.partition("=")
        k = k.strip()
        if k not in allowed:
            raise InputError("target", f"{kind} takes {', '.join(allowed)}; not {k!r}")
        try:
            kv[k] = float(v)
        except ValueError:
            raise InputError("target", f"{k}: expected a number, got {v!r}") from None
        if not np.isfinite(kv[k]) or (k != "period" and kv[k] != int(kv[k])) or kv[k] < 0:
            raise InputError("target", f"{k}: expected a whole number >= 0, got {v!r}")
    if kind == "flap":
        period, count = kv.get("period", 0.4), kv.get("count", 3)
        if not 0.05 <= period <= 10:
            raise InputError("target", f"flap period must be 0.05..10 s, got {period:g}")
        if not 1 <= count <= 50:
            raise InputError("target", f"flap count must be 1..50, got {count:g}")
    f = plan.fabric
    nd, lk = f.nodes, f.links
    if kind in ("link", "flap"):
        host, nic, port = (int(kv.get(k, 0)) for k in ("host", "nic", "port"))
        gpu = [
            int(n)
            for n in plan.endpoints
            if max(nd.host[n], 0) == host
            and max(nd.index[n], 0) == nic
            and nd.kind[n] in ENDPOINT_KINDS
        ]
        if not gpu:
            raise InputError("target", f"no NIC host={host},nic={nic} in the lab")
        ports = [ln for ln in plan.nic_ports(gpu[0]) if max(int(lk.port[ln]), 0) == port]
        if not ports:
            raise InputError("target", f"NIC host={host},nic={nic} has no port {port}")
        return kind, [ports[0] ^ 1], kv
    seg, rail, plane = (int(kv.get(k, 0)) for k in ("segment", "rail", "plane"))
    tors = np.flatnonzero(
        (nd.kind == NodeKind.TOR)
        & (nd.segment == seg)
        & (np.maximum(nd.rail, 0) == rail)
        & (np.maximum(nd.plane, 0) == plane)
    )
    if not len(tors):
        raise InputError("target", f"no ToR segment={seg},rail={rail},plane={plane}")
    tor = int(tors[0])
    return "tor", [int(ln) for ln in f.out_links(tor) if int(ln) in plan.ifname], kv


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
            if all(have.get(p) == v for p, v in want[ns].items() if p.endswith("/24")):
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
    for ns, cmds in by_ns.items():
        netns.ip_batch(cmds, plan.namespaces[ns])
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


def affected_nics(plan: LabPlan, links: list[int]) -> list[int]:
    lk = plan.fabric.links
    return sorted({int(lk.dst[ln]) for ln in links if int(lk.dst[ln]) in set(plan.endpoints)})


def fail(
    name: str = "0",
    target: str = "link:host=0,nic=0,port=0",
    repair: float = 2.0,
    before: float = 1.0,
    after: float | None = None,
    connections: int = 4,
    routing: str = "ecmp",
    rate: float = 1e6,
    payload: int = 500,
    seed: int = 0,
    probe: float = 0.1,
) -> dict[str, Any]:
    """Run flows to and from the NICs the failure touches; fail at ``before`` s, repair
    ``repair`` s later; report gaps, losses and recovery per direction. With ``routing="hpn"``
    the hosts re-learn their connections' paths every ``probe`` s and move a connection whose
    path no longer reaches its peer to a live one (HPN's selection, re-run). ``after``:
    seconds of traffic after the repair (default 1, 3 for a ToR, which holds its NIC ports
    down until BGP is back). A lab with links down (a killed ``fail``) is refused: repair it."""
    if not 0.2 <= repair <= 60:
        raise InputError("repair", f"must be 0.2..60 s, got {repair}")
    plan, _ = load(name)
    kind, links, kv = parse_target(plan, target)
    if after is None:  # a repaired ToR holds its NIC ports down until BGP is back (~1.3 s)
        after = 3.0 if kind == "tor" else 1.0
    with netns.locked(plan.prefix, "name"):
        from hpn.lab.ops import link_state

        if link_state(plan)[1]:
            raise InputError("name", f"lab {name!r} has links down: hpn lab repair --name {name}")
        return _fail(plan, name, target, kind, links, kv, repair, before, after, connections,
                     routing, rate, payload, seed, probe)  # fmt: skip


def _fail(plan, name, target, kind, links, kv, repair, before, after, connections, routing,
          rate, payload, seed, probe) -> dict[str, Any]:  # fmt: skip
    """:func:`fail` once the lab is locked and whole."""
    nics = affected_nics(plan, links)
    f = plan.fabric
    others = [int(n) for n in plan.endpoints if f.nodes.segment[n] != f.nodes.segment[nics[0]]]
    others = others or [int(n) for n in plan.endpoints if n not in nics]
    if not others:
        raise InputError("target", "the lab has no NIC outside the failure to talk to")
    src_l: list[int] = []
    dst_l: list[int] = []
    dir_l: list[str] = []
    for k, nic in enumerate(nics):
        peer = others[k % len(others)]
        for _ in range(connections):
            src_l += [peer, nic]
            dst_l += [nic, peer]
            dir_l += ["to_nic", "from_nic"]
    src, dst = np.array(src_l, np.int64), np.array(dst_l, np.int64)
    sport, _ = sports_for(plan, src, dst, routing, seed)
    t_fail, t_repair = before, before + repair
    total = t_repair + after
    size = np.full(len(src), rate / 8 * total)
    events = []
    if kind == "flap":
        period, count = float(kv.get("period", 0.4)), int(kv.get("count", 3))
        t = t_fail
        for _ in range(count):
            events += [
                (t, _action(plan, links, "down")),
                (t + period / 2, _action(plan, links, "up")),
            ]
            t += period
        t_repair = t - period / 2
    else:
        events = [(t_fail, _action(plan, links, "down")), (t_repair, _action(plan, links, "up"))]
    flows = FlowSet(src, dst, sport.copy(), size)
    rebinds: queue.SimpleQueue = queue.SimpleQueue()
    if routing == "hpn":  # the hosts re-run path selection every `probe` seconds
        t, reselect = t_fail + probe, _reselect(plan, flows, rebinds, seed)
        while t < total:
            events.append((t, reselect))
            t += probe
    tr = run_flows(plan, flows, rate, payload, events, rebinds=rebinds)
    interval = 8 * payload / rate
    direction = np.array(dir_l)
    out: dict[str, Any] = {
        "lab": name,
        "target": target,
        "kind": kind,
        "dual_tor": bool(getattr(f.spec, "dual_tor", False)),
        "dual_plane": bool(getattr(f.spec, "dual_plane", False)),
        "control": plan.spec.control,
        "routing": routing,
        "links_down": [plan.ifname[ln] for ln in links],
        "nics": [f.node_name(n) for n in nics],
        "failed_at_s": t_fail,
        "repaired_at_s": t_repair,
        "packet_interval_s": interval,
        "events": tr.events,
        "loop_stall_max_s": round(tr.loop_stall_max_s, 4),
    }
    for d in ("to_nic", "from_nic"):
        idx = np.flatnonzero(direction == d)
        out[d] = _summary(tr, idx, t_fail, t_repair, interval)
    out["flows_keep_going"] = all(out[d]["flows_cut_off"] == 0 for d in ("to_nic", "from_nic"))
    out["nic_cut_off"] = all(
        out[d]["flows_cut_off"] == out[d]["flows"] for d in ("to_nic", "from_nic")
    )
    return out


def _reselect(plan: LabPlan, flows: FlowSet, rebinds: queue.SimpleQueue, seed: int):
    from hpn.lab.learn import learn_paths
    from hpn.lab.select import select

    busy = threading.Lock()

    def run() -> dict:
        if not busy.acquire(blocking=False):  # the previous probe is still learning
            return {"action": "probe skipped"}
        try:
            return probe()
        finally:
            busy.release()

    def probe() -> dict:
        t = time.monotonic()
        _, ok = learn_paths(plan, flows.src, flows.dst, flows.sport)
        bad = np.flatnonzero(~ok)
        if not len(bad):
            return {"action": "probe", "moved": 0}
        sport, _ = select(plan, flows.src[bad], flows.dst[bad], seed=seed + 1)
        for i, port in zip(bad, sport, strict=True):
            rebinds.put((int(i), int(port)))
        return {
            "action": "reselect",
            "moved": int(len(bad)),
            "took_s": round(time.monotonic() - t, 4),
        }

    return run


def _action(plan: LabPlan, links: list[int], state: str):
    hops = switch_next_hops(plan)
    want = {}
    if plan.spec.control == "bgp":
        from hpn.lab import bgp

        want = bgp.expected_routes(plan, hops)

    def run() -> dict:
        t = time.monotonic()
        extra = _set(plan, links, state, hops, want)
        return {"action": state, "took_s": round(time.monotonic() - t, 4), **extra}

    return run


class DirectionSummary(TypedDict):
    """The flows of one direction across a failure (``to_nic`` or ``from_nic``)."""

    flows: int
    packets_sent: int
    packets_lost: int
    send_errors: int
    packets_undelivered: int
    flows_with_gap: int
    max_gap_s: float | None
    max_gap_after_repair_s: float | None
    flows_cut_off: int
    recovery_after_repair_s: float | None  # None: none cut off, or one never came back
    recovered_by_end: bool


def _summary(
    tr, idx: np.ndarray, t_fail: float, t_repair: float, interval: float
) -> DirectionSummary:
    """Per direction: gaps around the failure and around the repair, losses, cut-off flows."""
    gaps, gaps_repair, cut, recover = [], [], 0, []
    for i in idx:
        a = tr.arrivals[i]
        # a flow is cut off when nothing arrives once the failure took effect (packets
        # already past the break still arrive during the first moments)
        grace = min(0.2, (t_repair - t_fail) / 4)
        during = a[(a > t_fail + grace) & (a < t_repair)]
        later = a[a >= t_repair]
        if len(later) > 1 or len(later) and len(during):
            w = np.concatenate([during[-1:], later])
            gaps_repair.append(float(np.diff(w).max()) if len(w) > 1 else 0.0)
        if not len(during):
            cut += 1
            recover.append(float(later[0] - t_repair) if len(later) else float("inf"))
            continue
        w = a[(a > t_fail - 0.2) & (a <= (later[0] if len(later) else np.inf))]
        gaps.append(float(np.diff(w).max()) if len(w) > 1 else 0.0)
    affected = [g for g in gaps if g > 5 * interval]
    worst = max(recover) if recover else None
    return DirectionSummary(
        flows=int(len(idx)),
        packets_sent=int(tr.sent[idx].sum()),
        packets_lost=int(tr.lost[idx].sum()),
        send_errors=int(tr.send_errors[idx].sum()),
        packets_undelivered=int((tr.sent + tr.send_errors - tr.received)[idx].sum()),
        flows_with_gap=len(affected),
        max_gap_s=round(max(gaps), 4) if gaps else None,
        max_gap_after_repair_s=round(max(gaps_repair), 4) if gaps_repair else None,
        flows_cut_off=cut,
        recovery_after_repair_s=round(worst, 4) if worst is not None and worst < 1e9 else None,
        recovered_by_end=worst is None or worst < 1e9,
    )
