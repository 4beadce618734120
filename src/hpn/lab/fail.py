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
from hpn.lab.linkctl import _set
from hpn.lab.plan import ENDPOINT_KINDS, LabPlan
from hpn.lab.routes import switch_next_hops
from hpn.lab.routewatch import RouteWatch, last_changes
from hpn.lab.sports import sports_for
from hpn.lab.udp import FlowSet, run_flows
from hpn.topology.fabric import NodeKind

_TARGET = re.compile(r"^(link|tor|flap|uplink|agg|core|silent|gray):(.*)$")
_NIC = ("host", "nic", "port")
_UP = ("segment", "rail", "plane", "uplink")
_KEYS = {
    "link": _NIC,
    "flap": (*_NIC, "period", "count"),
    "tor": ("segment", "rail", "plane"),
    "uplink": _UP,
    "agg": ("plane", "index"),
    "core": ("index",),
    "silent": (*_NIC, *_UP, "dir"),
    "gray": (*_NIC, *_UP, "dir", "loss"),
}
_DIRS = ("both", "down", "up")
BGP_HOLD_S = 3.0  # ``timers bgp 1 3`` (hpn.lab.bgp)
CONVERGE_S = 30.0  # the longest fail() waits for BGP to hold every route before it starts


def parse_target(plan: LabPlan, text: str) -> tuple[str, list[int], dict[str, float]]:
    """``link:host=H,nic=N,port=P`` / ``tor:segment=S,rail=R,plane=P`` /
    ``flap:host=H,nic=N,port=P[,period=0.4,count=3]`` / ``uplink:segment=S,rail=R,plane=P,
    uplink=U`` (a ToR's U-th Agg link) / ``agg:plane=P,index=I`` / ``core:index=I`` (as
    ``core-pP-I`` names it: a lab of two pods or more) / ``silent:`` and
    ``gray:`` on a NIC link or (with ``uplink=``) a ToR uplink, ``dir=both|down|up``, gray
    ``loss=0.1`` -> (kind, links, extras): carrier failures give the links by their upper
    (ToR, Agg) side, silent and gray the directed links that drop."""
    m = _TARGET.match(text.strip())
    if not m:
        raise InputError(
            "target", f"expected one of {', '.join(_KEYS)} then :key=value,..., got {text!r}"
        )
    kind, body = m.groups()
    kv: dict[str, float] = {}
    allowed = _KEYS[kind]
    direction = "both"
    for part in filter(None, body.split(",")):
        k, _, v = part.partition("=")
        k = k.strip()
        if k not in allowed:
            raise InputError("target", f"{kind} takes {', '.join(allowed)}; not {k!r}")
        if k == "dir":
            if v.strip() not in _DIRS:
                raise InputError("target", f"dir must be one of {', '.join(_DIRS)}, got {v!r}")
            direction = v.strip()
            continue
        if k == "loss":
            try:
                kv[k] = float(v)
            except ValueError:
                raise InputError("target", f"loss: expected a number, got {v!r}") from None
            if not 0 < kv[k] < 1:
                raise InputError("target", f"loss must be in (0, 1), got {v!r}")
            continue
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
    if kind == "gray" and "loss" not in kv:
        raise InputError("target", "gray needs loss=SHARE (0 < SHARE < 1)")
    if kind in ("silent", "gray"):
        base = "uplink" if "uplink" in kv else "link"
        _, (ln,), _ = parse_target(plan, base + ":" + ",".join(
            f"{k}={int(v)}" for k, v in kv.items() if k in _KEYS[base]))  # fmt: skip
        # ln leaves the upper end (ToR -> NIC, Agg -> ToR): "down" is that direction
        dirs = {"both": [ln, ln ^ 1], "down": [ln], "up": [ln ^ 1]}[direction]
        return kind, dirs, {**kv, "dir": float(_DIRS.index(direction))}
    f = plan.fabric
    nd, lk = f.nodes, f.links
    if kind == "agg":
        plane, index = int(kv.get("plane", 0)), int(kv.get("index", 0))
        aggs = np.flatnonzero((nd.kind == NodeKind.AGG) & (np.maximum(nd.plane, 0) == plane))
        if not 0 <= index < len(aggs):
            raise InputError("target", f"plane {plane} has Aggs 0..{len(aggs) - 1}, not {index}")
        agg = int(aggs[index])
        return kind, [int(ln) for ln in f.out_links(agg) if int(ln) in plan.ifname], kv
    if kind == "core":
        index = int(kv.get("index", 0))
        cores = np.flatnonzero(nd.kind == NodeKind.CORE)
        if not len(cores):
            raise InputError("target", "this lab has no cores: build it with --pods 2")
        hit = cores[nd.index[cores] == index]
        if not len(hit):
            raise InputError("target", f"the lab has cores 0..{len(cores) - 1}, not {index}")
        return kind, [int(ln) for ln in f.out_links(int(hit[0])) if int(ln) in plan.ifname], kv
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
    if kind == "uplink":
        ups = [int(ln) for ln in f.out_links(tor)
               if int(ln) in plan.ifname and nd.kind[lk.dst[ln]] == NodeKind.AGG]  # fmt: skip
        u = int(kv.get("uplink", 0))
        if not 0 <= u < len(ups):
            raise InputError("target", f"the ToR has uplinks 0..{len(ups) - 1}, not {u}")
        return kind, [ups[u] ^ 1], kv  # by its upper (Agg) side
    return "tor", [int(ln) for ln in f.out_links(tor) if int(ln) in plan.ifname], kv


def affected_nics(plan: LabPlan, links: list[int]) -> list[int]:
    """The NICs a failure touches: those on its links, else those under its ToRs, else (an
    Agg) those of segment 0."""
    lk, nd = plan.fabric.links, plan.fabric.nodes
    ends = set(plan.endpoints)
    nics = {int(x) for ln in links for x in (lk.src[ln], lk.dst[ln]) if int(x) in ends}
    if nics:
        return sorted(nics)
    tors = {int(x) for ln in links for x in (lk.src[ln], lk.dst[ln]) if nd.kind[x] == NodeKind.TOR}
    under = sorted({int(n) for n in plan.endpoints for ln in plan.nic_ports(int(n))
                    if int(lk.dst[ln]) in tors})  # fmt: skip
    return under or sorted(int(n) for n in plan.endpoints if nd.segment[n] == 0)


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
    down until BGP is back). A lab with links down (a killed ``fail``) is refused: repair it.
    A BGP lab is first waited for until every switch holds its converged routes: sessions a
    previous repair brought back take seconds to re-establish, and a failure before that hits
    switches short of next hops (measured on a loaded machine: an Agg's sessions back 2.2-3.3
    s after its repair; an uplink failure 2.6 s after it found the far ToR and the NIC's ToR
    with that uplink's Agg as their only next hop: a 0.7 s gap both ways, a cut-off had the
    sessions taken 0.5 s longer)."""
    if not 0.2 <= repair <= 60:
        raise InputError("repair", f"must be 0.2..60 s, got {repair}")
    plan, _ = load(name)
    kind, links, kv = parse_target(plan, target)
    if after is None:  # a repaired ToR holds its NIC ports down until BGP is back (~1.3 s)
        after = 3.0 if kind == "tor" else 1.0
    with netns.locked(plan.prefix, "name"):
        from hpn.lab.impair import impaired
        from hpn.lab.ops import link_state

        if link_state(plan)[1] or impaired(plan):
            raise InputError("name", f"lab {name!r} has links down: hpn lab repair --name {name}")
        if plan.spec.control == "bgp":  # a previous failure's repair may still re-converge
            from hpn.lab import bgp

            bgp.wait_converged(plan, switch_next_hops(plan), CONVERGE_S)
        return _fail(plan, name, target, kind, links, kv, repair, before, after, connections,
                     routing, rate, payload, seed, probe)  # fmt: skip


def _fail(plan, name, target, kind, links, kv, repair, before, after, connections, routing,
          rate, payload, seed, probe) -> dict[str, Any]:  # fmt: skip
    """:func:`fail` once the lab is locked and whole."""
    nics = affected_nics(plan, links)
    f = plan.fabric
    others = [int(n) for n in plan.endpoints if f.nodes.segment[n] != f.nodes.segment[nics[0]]]
    if kind == "core":  # flows that cross the cores: pod 0's NICs with pod 1's
        pod = f.nodes.pod
        nics = [int(n) for n in plan.endpoints if pod[n] == 0]
        others = [int(n) for n in plan.endpoints if pod[n] != 0]
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
    elif kind in ("silent", "gray"):
        from hpn.lab import impair

        impair.require()
        loss = kv.get("loss", 1.0)
        events = [
            (t_fail, _impair(plan, links, "down", loss)),
            (t_repair, _impair(plan, links, "up", loss)),
        ]
    else:
        events = [(t_fail, _action(plan, links, "down")), (t_repair, _action(plan, links, "up"))]
    walls: dict[str, float] = {}  # wall-clock time the failure and the repair ran
    events[0] = (events[0][0], _stamped(walls, "fail", events[0][1]))
    events[-1] = (events[-1][0], _stamped(walls, "repair", events[-1][1]))
    predicted = _predict(plan, src, dst, sport, links, routing, probe, kind)
    flows = FlowSet(src, dst, sport.copy(), size)
    rebinds: queue.SimpleQueue = queue.SimpleQueue()
    if routing == "hpn":  # the hosts re-run path selection every `probe` seconds
        t, reselect = t_fail + probe, _reselect(plan, flows, rebinds, seed)
        while t < total:
            events.append((t, reselect))
            t += probe
    with RouteWatch(plan) as watch:
        tr = run_flows(plan, flows, rate, payload, events, rebinds=rebinds)
    for e in tr.events:  # the repair reports when each switch had last re-routed
        if e["at_s"] == round(t_repair, 4) and e.get("action") in ("up", "undrop"):
            e["switches_rerouted_s"] = last_changes(watch.texts, walls["fail"], walls["repair"])
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
    out["model"] = _compare(tr, predicted, t_fail, t_repair, kind)
    out["flows_keep_going"] = all(out[d]["flows_cut_off"] == 0 for d in ("to_nic", "from_nic"))
    out["nic_cut_off"] = all(
        out[d]["flows_cut_off"] == out[d]["flows"] for d in ("to_nic", "from_nic")
    )
    return out


class ModelCheck(TypedDict):
    """The model's failure layer (:mod:`hpn.failures.failover`) on the kernel's own paths of
    this run's connections, against what the packets did: the connections it says only their
    sender can move (their path crosses a link no switch of their plane routes around), how
    long it holds them, and per connection whether the lab agrees (cut off until repair with
    ``ecmp``, a gap of at least the probe period with ``hpn``)."""

    flows_crossing: int  # connections whose path (before the failure) crosses its links
    flows_sender_must_move: int
    flows_measured: int
    flows_agree: int
    flows: int
    hold_s: float | None
    measured_gap_s: float | None


def _predict(plan: LabPlan, src, dst, sport, links, routing, probe, kind) -> dict[str, Any]:
    """Which connections the model's failover says are blackholed until their sender moves
    (silent: every one crossing a dropping link, until BGP's hold time or BFD detects it;
    gray: none)."""
    from hpn.failures.failover import Failover, who_moves
    from hpn.lab.learn import learn_paths

    both = np.unique(np.concatenate([np.asarray(links), np.asarray(links) ^ 1]))
    hold = Failover(probe=probe).reselect(routing)
    if kind == "silent":
        blocked = {int(x) for x in links}
        s = plan.spec
        hold = s.bfd_interval_ms * s.bfd_multiplier / 1e3 if s.bfd else BGP_HOLD_S
    elif kind == "gray":
        blocked = set()
    else:
        who = who_moves(plan.fabric, both)
        blocked = set(both[who == 2].tolist())
    paths, _ = learn_paths(plan, src, dst, sport)
    off = paths.offsets
    cut = np.array(
        [
            bool(blocked.intersection(paths.links[off[i] : off[i + 1]].tolist()))
            for i in range(len(src))
        ]
    )
    crossing = {int(x) for x in both}
    via = [
        bool(crossing.intersection(paths.links[off[i] : off[i + 1]].tolist()))
        for i in range(len(src))
    ]
    return {"cut": cut, "hold": hold, "crossing": int(sum(via))}


def _compare(tr, predicted: dict, t_fail: float, t_repair: float, kind: str) -> ModelCheck:
    cut, hold = predicted["cut"], predicted["hold"]
    measured = np.zeros(len(cut), bool)
    gaps: list[float] = []
    grace = min(0.2, (t_repair - t_fail) / 4)
    for i, a in enumerate(tr.arrivals):
        during = a[(a > t_fail + grace) & (a < t_repair)]
        w = a[(a > t_fail - 0.2) & (a < t_repair)]
        gap = float(np.diff(w).max()) if len(w) > 1 else float(t_repair - t_fail)
        if not len(during):
            gap = float(t_repair - t_fail)
        # the sender had to move it: where the model holds it for good (ecmp: nobody
        # moves it), cut off until the repair; where the model's hold ends (hpn's
        # re-selection, BFD or BGP finding a silent link), a gap past the BGP withdrawal's
        # 0.14 s. An ecmp connection's shorter gap is the fabric re-routing it (a withdrawal
        # late on a loaded machine), not its sender.
        measured[i] = not len(during) or (bool(np.isfinite(hold)) and gap >= 0.2)
        if cut[i]:
            gaps.append(gap)
    return ModelCheck(
        flows_crossing=predicted["crossing"],
        flows_sender_must_move=int(cut.sum()),
        flows_measured=int(measured.sum()),
        flows_agree=int((cut == measured).sum()),
        flows=int(len(cut)),
        hold_s=None if not cut.any() else (None if np.isinf(hold) else round(hold, 4)),
        measured_gap_s=round(max(gaps), 4) if gaps else None,
    )


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


def _stamped(walls: dict[str, float], key: str, fn):
    """``fn``, noting in ``walls[key]`` the wall-clock time it started."""

    def run() -> dict:
        walls[key] = time.time()
        return fn()

    return run


def _impair(plan: LabPlan, links: list[int], state: str, loss: float):
    from hpn.lab import impair

    def run() -> dict:
        t = time.monotonic()
        if state == "down":
            impair.drop(plan, links, loss)
        else:
            impair.clear(plan, links)
        return {
            "action": "drop" if state == "down" else "undrop",
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
