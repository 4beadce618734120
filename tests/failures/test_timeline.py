"""Fault semantics through the engine: failover, halts, crashes, repairs, per design."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hpn.engine import CapacityEvents, simulate
from hpn.errors import InputError
from hpn.failures import Recovery, SimpleStep, run_fail, simple_iteration
from hpn.failures.faults import fault_links, parse_fault
from hpn.failures.semantics import design_of
from hpn.topology import build

STEP = SimpleStep(gpus=8, per_host=2, compute="20ms", allreduce="64MB")
REC = Recovery(timeout=60, interval=3600, cost=100, restart=300, since_checkpoint=600)


def job(**fabric):
    f = build("hpn", segments=1, gpus_per_host=2, **fabric)
    return f, simple_iteration(f, STEP)


@pytest.fixture(scope="module")
def dual():
    return job()


@pytest.fixture(scope="module")
def single():
    return job(dual_tor=False)


def run(fj, faults, **kw):
    f, it = fj
    kw.setdefault("routing", "hpn")
    return run_fail(f, it, faults, recovery=REC, **kw)


def rates(tables):
    t = tables["throughput"]
    return np.asarray(t["time_s"]), np.asarray(t["throughput"])


def test_designs(dual, single):
    assert design_of(dual[0]) == "dual-tor"
    assert design_of(dual[0], stacked=True) == "stacked"
    assert design_of(single[0]) == "single-tor"
    with pytest.raises(InputError, match="dual-ToR"):
        design_of(single[0], stacked=True)


def test_dual_tor_link_fails_over_then_restores_full_rate(dual):
    r, tab = run(dual, ["link:host=1,nic=0,port=0,at=1s,repair=2s"])
    # dual-plane: the flows toward the NIC's dead port are blackholed until their senders
    # re-select the other plane (probe 0.1 s + search 0.2 s), then run on one 200G port
    assert not r.crashed and r.halted_s == 0 and r.blackholed_s == pytest.approx(0.3)
    assert r.faults[0]["moved_by_sender_reselect"] == 1 and r.faults[0]["flows_cut_off"]
    assert 0 < r.throughput_loss < 0.5  # slower on one 200G port, never stopped
    t, x = rates(tab)
    base = r.baseline_samples_per_s
    assert x[t < 0.95].min() == pytest.approx(base)
    assert x[(t > 1.4) & (t < 2.9)].max() < base  # degraded during the outage
    assert x[t > 3.1] == pytest.approx(base)  # full rate after the repair
    assert x[t > 3.1].size > 4


def test_dual_tor_failover_moves_traffic_to_the_other_port(dual):
    f, it = dual
    port0 = fault_links(f, parse_fault("link:host=1,nic=0,port=0,at=0"))
    port1 = fault_links(f, parse_fault("link:host=1,nic=0,port=1,at=0"))
    ev = CapacityEvents.of([(0.0, int(lk), 0.0) for lk in port0], reroute=True)
    from hpn.routing import make_router

    res = simulate(f, it.dag, make_router("hpn"), capacity_events=ev)
    assert res.link_bytes[port0].sum() == 0 and res.link_bytes[port1].sum() > 0


def test_single_tor_halts_for_the_outage_and_resumes(single):
    r, tab = run(single, ["link:host=1,nic=0,port=0,at=1s,repair=20s"])
    assert not r.crashed and r.halted_s == pytest.approx(20.0)
    assert r.job_time_lost_s == pytest.approx(20.0, abs=r.iteration_s)
    assert r.throughput_loss > 0.9
    t, x = rates(tab)
    assert x[t > 21.5] == pytest.approx(r.baseline_samples_per_s)


def test_single_tor_outage_past_timeout_crashes_and_restarts(single):
    r, tab = run(single, ["link:host=1,nic=0,port=0,at=5s,repair=90s"])
    assert r.crashed and r.crashes == 1
    assert r.halted_s == pytest.approx(REC.timeout)
    assert r.lost_work_s == pytest.approx(600 + 5)  # checkpoint age at 0 + time to fault
    assert r.job_time_lost_s == pytest.approx(605 + 60 + 300, abs=r.iteration_s)
    assert "crash" in tab["events"]["label"] and "restart" in tab["events"]["label"]
    t, x = rates(tab)
    assert (x[(t > 5.01) & (t < 5 + 60 + 300 - 0.01)] == 0).all()
    assert 0.0 in x[np.isclose(t, 5.0)] and 0.0 in x[np.isclose(t, 365.0)]
    assert x[t > 366] == pytest.approx(r.baseline_samples_per_s)


def test_never_repaired_single_tor_link_crashes(single):
    r, _ = run(single, ["link:host=1,nic=0,at=1s"])
    assert r.crashed


def test_flaps(dual, single):
    spec = "flap:host=1,nic=1,port=0,at=1s,down=2s,count=3,every=5s"
    s, _ = run(single, [spec])
    assert not s.crashed and s.halted_s == pytest.approx(6.0)
    d, _ = run(dual, [spec])
    assert d.halted_s == 0  # blackholed until re-selection, 3 times:
    assert d.blackholed_s == pytest.approx(3 * 0.3)
    assert d.job_time_lost_s < 0.5 * s.job_time_lost_s


def test_tor_fault_per_design(dual, single):
    spec = ["tor:segment=0,rail=0,plane=0,at=1s,repair=10s"]
    d, _ = run(dual, spec)
    # one segment: every sender to a NIC under the dead ToR sits under it too, sees its own
    # port go and moves at once; nothing comes down from the Aggs to be blackholed
    assert d.halted_s == 0 and not d.crashed
    s, _ = run(single, spec)
    assert s.halted_s == pytest.approx(10.0)
    st, _ = run(dual, spec, stacked=True)  # the pair goes down: every NIC of rail 0 cut off
    assert st.halted_s == pytest.approx(10.0)
    assert st.faults[0]["links_down"] == 2 * d.faults[0]["links_down"]


def test_uplink_faults_rehash_and_never_halt():
    f = build("hpn", segments=2, gpus_per_host=2)
    step = SimpleStep(gpus=8, per_host=2, first_host=126, compute="20ms", allreduce="64MB")
    it = simple_iteration(f, step)  # hosts 126, 127 (segment 0) and 128, 129 (segment 1)
    for spec in (
        "tor-agg:segment=0,rail=0,plane=0,uplink=3,at=0.5s,repair=2s",
        "agg:plane=0,index=3,at=0.5s,repair=2s",
    ):
        for routing in ("ecmp", "hpn"):
            r, _ = run_fail(f, it, [spec], recovery=REC, routing=routing)
            assert r.halted_s == 0 and not r.crashed, (spec, routing)
    links = fault_links(f, parse_fault("agg:plane=0,index=3,at=0"))
    ev = CapacityEvents.of([(0.0, int(lk), 0.0) for lk in links], reroute=True)
    res = simulate(f, it.dag, "ecmp", capacity_events=ev)
    assert res.link_bytes[links].sum() == 0


def test_same_inputs_same_result(dual):
    spec = ["link:host=1,nic=0,port=0,at=1s,repair=2s"]
    a, ta = run(dual, spec)
    b, tb = run(dual, spec)
    assert dataclasses.replace(a, wall_s=0.0) == dataclasses.replace(b, wall_s=0.0)
    assert np.array_equal(ta["throughput"]["throughput"], tb["throughput"]["throughput"])


@pytest.mark.parametrize(
    "spec, stacked",
    [
        ("link:host=1,nic=0,port=0,at=0s,repair=90s", False),
        ("tor:segment=0,rail=0,plane=0,at=0s,repair=90s", True),
    ],
)
def test_cut_off_from_time_zero_past_the_timeout_halts_then_crashes(single, dual, spec, stacked):
    r, tab = run(dual if stacked else single, [spec], stacked=stacked)
    assert r.crashed and r.crashes == 1
    (c,) = r.crash_events
    assert (c["cut_off_s"], c["crash_s"], c["restart_s"]) == (0.0, 60.0, 360.0)
    assert r.halted_s == pytest.approx(REC.timeout)
    assert r.lost_work_s == pytest.approx(600)  # checkpoint age at 0, no work since
    t, x = rates(tab)
    assert (x[(t > 0) & (t < 360 - 0.01)] == 0).all()
    assert x[t > 361] == pytest.approx(r.baseline_samples_per_s)


def test_cut_off_from_time_zero_within_the_timeout_halts_only(single):
    r, _ = run(single, ["link:host=1,nic=0,port=0,at=0s,repair=30s"])
    assert not r.crashed and r.halted_s == pytest.approx(30.0)
