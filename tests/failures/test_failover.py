"""Plane-aware failover (hpn.failures.failover): who routes around a dead NIC-ToR link, which
flows are blackholed until their sender re-selects, and for how long (hand-computed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpn.engine import CapacityEvents, FlowDAG, simulate
from hpn.errors import InputError
from hpn.failures.failover import Failover, hold_times, who_moves
from hpn.failures.faults import fault_links, nic_link, parse_fault
from hpn.failures.semantics import outages
from hpn.routing import make_router
from hpn.topology import build
from hpn.topology.fabric import NodeKind

FO = Failover(withdraw=0.14, probe=0.1, search=0.2)
LINK = "link:host=0,nic=0,port=0,at=0s,repair=2s"


def fabric(dual_plane: bool):
    return build("hpn", segments=2, gpus_per_host=2, dual_plane=dual_plane)


def gpu(f, host: int, nic: int) -> int:
    n = f.nodes
    return int(np.flatnonzero((n.kind == NodeKind.GPU) & (n.host == host) & (n.index == nic))[0])


def senders(f):
    """NIC 0 of every host but host 0: the other hosts of segment 0 and all of segment 1."""
    n = f.nodes
    hosts = np.unique(n.host[(n.kind == NodeKind.GPU) & (n.host > 0)])
    return np.array([gpu(f, int(h), 0) for h in hosts[:40]])


@pytest.mark.parametrize("dual_plane", [True, False])
def test_who_moves_a_dead_nic_link(dual_plane):
    f = fabric(dual_plane)
    links = fault_links(f, parse_fault(LINK))
    up = nic_link(f, 0, 0, 0)  # NIC -> ToR: the host's bond moves its own flows at once
    who = dict(zip(links.tolist(), who_moves(f, links).tolist(), strict=True))
    assert who[up] == 0
    # ToR -> NIC: single-plane, every ToR still reaches the NIC's other ToR through any Agg
    # (the network re-routes after the /32's withdrawal); dual-plane, no plane-0 switch does
    assert who[up ^ 1] == (2 if dual_plane else 1)


@pytest.mark.parametrize("dual_plane", [True, False])
@pytest.mark.parametrize("routing", ["hpn", "ecmp"])
def test_cut_off_flows_and_for_how_long(dual_plane, routing):
    """Tiny flows to NIC 0 of host 0 start at 10 ms; its port-0 link is down from 0 to 2 s.
    Hand-computed: a flow is cut off iff its path ends over the dead port, i.e. (dual-plane)
    its sender sent it on port 0; it then arrives after the hold: the probe + search (0.3 s)
    with HPN, the repair (2 s) with ECMP; single-plane: the BGP withdrawal (0.14 s)."""
    f = fabric(dual_plane)
    x = gpu(f, 0, 0)
    src = senders(f)
    dag = FlowDAG()
    dag.add_flows(src, np.full(len(src), x), 1000.0, delay=0.01)
    router = make_router(routing, seed=3)
    outs = outages(f, [parse_fault(LINK)], "dual-tor", routing, FO)
    o = outs[0]
    ev = [(0.0, int(lk), 0.0) for lk in o.links]
    hold = [bool(h > 0) for h in o.hold]
    for lk, h in zip(o.links, o.hold, strict=True):
        if 0 < h < o.end:
            ev.append((float(h), int(lk), 0.0))  # the hold ends: the flows move
            hold.append(False)
        ev.append((o.end, int(lk), float(f.links.capacity[lk])))
        hold.append(False)
    res = simulate(f, dag, router, capacity_events=CapacityEvents.of(ev, True, hold))
    paths = router.route(f, src, np.full(len(src), x), dag.tasks.keys)
    dead = nic_link(f, 0, 0, 0) ^ 1
    last = paths.links[paths.offsets[1:] - 1]
    via_dead = last == dead
    first_port = f.links.port[paths.links[paths.offsets[:-1]]]
    if dual_plane:  # plane isolation: the sender's port is the destination's port
        assert (via_dead == (first_port == 0)).all()
    assert 0 < via_dead.sum() < len(src)
    expect = {"hpn": 0.3, "ecmp": 2.0}[routing] if dual_plane else 0.14
    assert res.finish[~via_dead] == pytest.approx(0.01, abs=1e-4)
    assert res.finish[via_dead] == pytest.approx(expect, abs=1e-4)
    assert (np.asarray(res.size) > 0).all()


def test_dead_tor_dual_plane_needs_reselection():
    f = fabric(True)
    links = fault_links(f, parse_fault("tor:segment=0,rail=0,plane=0,at=0"))
    hold, who = hold_times(f, links, "hpn", FO)
    lk, kind = f.links, f.nodes.kind
    into = (kind[lk.src[links]] == NodeKind.AGG) & (kind[lk.dst[links]] == NodeKind.TOR)
    assert (who[into] == 2).all() and (hold[into] == pytest.approx(0.3))
    assert (who[~into] == 0).all()  # hosts and ToRs move their own flows; nothing enters it
    f1 = fabric(False)
    links = fault_links(f1, parse_fault("tor:segment=0,rail=0,plane=0,at=0"))
    _, who = hold_times(f1, links, "ecmp", FO)
    assert set(who.tolist()) == {0, 1}  # single-plane: the other ToR, through any Agg


def test_tor_uplink_and_agg_faults():
    f = fabric(True)
    links = fault_links(f, parse_fault("tor-agg:segment=0,rail=0,plane=0,uplink=0,at=0"))
    who = who_moves(f, links).tolist()
    assert sorted(who) == [0, 1]  # up: the ToR re-hashes; down: the other Aggs, after BGP
    links = fault_links(f, parse_fault("agg:plane=0,index=0,at=0"))
    assert (who_moves(f, links) == 0).all()  # every ToR sees its uplink go and re-hashes


def test_failover_bounds():
    assert math.isinf(Failover().reselect("ecmp"))
    assert Failover().reselect("hpn") == pytest.approx(0.3)
    assert Failover(ecmp_reselect=5.0).reselect("ecmp") == 5.0
    for bad in ({"probe": -1.0}, {"withdraw": math.inf}, {"search": math.nan}):
        with pytest.raises(InputError):
            Failover(**bad)


def test_silent_failure_holds_everything_until_detected():
    """Carrier up, packets dropped: even the host waits for LACP (3 s by default), then the
    dual-plane re-selection (0.3 s) for the flows toward the dead port."""
    f = fabric(True)
    (o,) = outages(f, [parse_fault("silent:host=0,nic=0,port=0,at=1s,repair=10s")], "dual-tor",
                   "hpn", FO)  # fmt: skip
    up = nic_link(f, 0, 0, 0)
    hold = dict(zip(o.links.tolist(), o.hold.tolist(), strict=True))
    assert hold[up] == pytest.approx(3.0) and hold[up ^ 1] == pytest.approx(3.3)
    (o,) = outages(f, [parse_fault("silent:host=0,nic=0,at=0,detect=900ms")], "dual-tor", "ecmp")
    assert math.isinf(max(o.hold)) and min(o.hold) == pytest.approx(0.9)


def test_gray_failure_is_a_capacity_share_never_detected():
    from hpn.failures import SimpleStep, run_fail, simple_iteration

    f = build("hpn", segments=1, gpus_per_host=2)
    it = simple_iteration(f, SimpleStep(gpus=8, per_host=2, compute="20ms", allreduce="64MB"))
    with pytest.raises(InputError, match="loss"):
        parse_fault("gray:host=1,nic=0,at=0,loss=1.5")
    r10, _ = run_fail(f, it, ["gray:host=1,nic=0,port=0,at=1s,repair=2s,loss=0.1"], routing="hpn")
    r50, _ = run_fail(f, it, ["gray:host=1,nic=0,port=0,at=1s,repair=2s,loss=0.5"], routing="hpn")
    assert r10.halted_s == r10.blackholed_s == 0 and not r10.crashed
    assert 0 < r10.throughput_loss < r50.throughput_loss < 0.9
    assert r10.faults[0]["moved_by_host"] == 0  # nobody sees it


def test_core_faults_are_routed_around_at_once_and_cut_nothing_off():
    """Two pods, dual-plane: a dead core's links all go with its carrier; every Agg linked to
    it hashes over the plane's other cores at once; a core's link to one Agg: the core
    hashes over the pod's other Aggs of its plane, the Agg over its other cores."""
    f = build("hpn", pods=2, segments=1, gpus_per_host=2)
    n, lk = f.nodes, f.links
    links = fault_links(f, parse_fault("core:index=3,at=0"))
    core = int(np.flatnonzero((n.kind == NodeKind.CORE) & (n.index == 3))[0])
    assert set(links.tolist()) == set(np.flatnonzero((lk.src == core) | (lk.dst == core)))
    assert len(links) == 2 * int((lk.src == core).sum()) > 0
    hold, who = hold_times(f, links, "ecmp", FO)
    assert (who == 0).all() and (hold == 0).all()
    links = fault_links(f, parse_fault("core-link:pod=1,plane=0,agg=0,uplink=0,at=0"))
    assert len(links) == 2 and (who_moves(f, links) == 0).all()
    plane = int(n.plane[core])
    assert parse_fault(f"core:index=3,plane={plane},at=0").keys == {"index": 3, "plane": plane}
    with pytest.raises(InputError, match="core with index=3 plane"):
        fault_links(f, parse_fault(f"core:index=3,plane={1 - plane},at=0"))
    with pytest.raises(InputError, match="--pods 2"):
        fault_links(fabric(True), parse_fault("core:index=0,at=0"))
