"""Checkpoint arithmetic and the Monte Carlo against closed forms (rate x exposure)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.failures import Recovery
from hpn.failures.montecarlo import MONTH_S, Rates, exposure, reliability
from hpn.topology import build
from hpn.workload.collectives import place


def test_lost_work_closed_forms():
    r = Recovery(timeout=60, interval=1000, cost=100, restart=50, since_checkpoint=200)
    assert r.lost_work(0) == 200
    assert r.lost_work(650) == 850  # inside the next write: that write is lost too... capped
    assert r.lost_work(700) == 900 and r.lost_work(750) == 900  # during the write at 900-1000
    assert r.lost_work(800) == 0  # the checkpoint completed at 800
    assert r.crash_cost(0) == 60 + 50 + 200
    assert r.overhead == 0.1
    t = np.linspace(0, 1000, 200_001)[:-1]
    assert np.mean([r.lost_work(x) for x in t[::100]]) == pytest.approx(r.mean_lost_work, 1e-3)
    assert r.mean_lost_work == pytest.approx((1000**2 - 100**2) / 2000)


@given(st.floats(0, 1e6), st.floats(1, 1e4), st.floats(0, 0.99))
def test_lost_work_is_bounded(t, interval, share):
    r = Recovery(interval=interval, cost=share * interval)
    assert 0 <= r.lost_work(t) <= interval - r.cost + 1e-9


def test_recovery_refuses_nonsense():
    with pytest.raises(InputError, match="timeout"):
        Recovery(timeout=-1)
    with pytest.raises(InputError, match="exceed"):
        Recovery(interval=10, cost=20)


@pytest.fixture(scope="module")
def exposures():
    d = build("hpn", segments=2)
    s = build("hpn", segments=4, dual_tor=False)
    return exposure(d, place(d, 512).ranks), exposure(s, place(s, 512).ranks)


def test_exposure_counts(exposures):
    d, s = exposures
    assert (d.links, d.tors, d.sides, d.host_ports) == (1024, 16, 2, 16)
    assert (s.links, s.sides, s.host_ports) == (512, 1, 8)
    assert s.tors == 8  # 64 hosts per single-ToR segment: 512 GPUs fill one segment


NO_FLAPS = dict(flaps_per_day=0.0, repair_sigma=0.0)


def test_single_tor_crashes_are_rate_times_exposure(exposures):
    _, s = exposures
    rates = Rates(link_per_month=0.002, tor_per_month=0.0, link_repair=600.0, **NO_FLAPS)
    r = reliability(s, "single-tor", 1.0, 20_000, seed=3, rates=rates)
    mean, expect = r["crashes_per_month"]["mean"], 0.002 * 512
    sd = np.sqrt(expect / 20_000)
    assert abs(mean - expect) < 4 * sd + 0.01 * expect  # merged overlaps: a little fewer
    assert r["degraded_hours_per_month"]["mean"] == 0
    rec = Recovery()
    assert r["halted_hours_per_month"]["mean"] == pytest.approx(mean * rec.timeout / 3600, 1e-3)


def test_short_repairs_halt_without_crashing(exposures):
    _, s = exposures
    rates = Rates(link_per_month=0.002, tor_per_month=0.0, link_repair=30.0, **NO_FLAPS)
    r = reliability(s, "single-tor", 1.0, 5000, seed=1, rates=rates)
    assert r["crashes_per_month"]["mean"] == 0
    assert r["halted_hours_per_month"]["mean"] == pytest.approx(0.002 * 512 * 30 / 3600, 0.05)


def test_dual_tor_degrades_instead(exposures):
    d, _ = exposures
    rates = Rates(link_per_month=0.002, tor_per_month=0.0, link_repair=3600.0, **NO_FLAPS)
    r = reliability(d, "dual-tor", 1.0, 5000, seed=2, rates=rates)
    assert r["crashes_per_month"]["mean"] < 0.01
    assert r["degraded_hours_per_month"]["mean"] == pytest.approx(0.002 * 1024 * 1.0, 0.05)
    loss = r["goodput_loss_fraction"]["mean"]
    assert loss == pytest.approx(r["degraded_hours_per_month"]["mean"] / 16 * 3600 / MONTH_S)


def test_stacked_pairs_crash_on_tor_failures(exposures):
    d, _ = exposures
    rates = Rates(
        link_per_month=0.0, tor_per_month=0.01, tor_repair=3600.0, stacked_pair=0.5, **NO_FLAPS
    )
    r = reliability(d, "stacked", 1.0, 20_000, seed=4, rates=rates)
    expect = 0.01 * 16 * 0.5
    assert r["crashes_per_month"]["mean"] == pytest.approx(expect, rel=0.1)
    nd = reliability(d, "dual-tor", 1.0, 2000, seed=4, rates=rates)
    assert nd["crashes_per_month"]["mean"] == 0


def test_flaps_and_cost(exposures):
    d, s = exposures
    rates = Rates(link_per_month=0.0, tor_per_month=0.0, flaps_per_day=100.0, fleet_links=1000)
    r = reliability(s, "single-tor", 1.0, 2000, seed=5, rates=rates, price=2.0)
    flaps = 100 / 1000 * 512 * MONTH_S / 86400
    assert r["expected_per_month"]["flaps"] == pytest.approx(flaps)
    assert r["halted_hours_per_month"]["mean"] == pytest.approx(flaps * 10 / 3600, 0.02)
    g = r["gpu_hours_lost_per_month"]["mean"]
    assert r["cost_per_month"]["mean"] == pytest.approx(2.0 * g)
    assert g == pytest.approx(r["halted_hours_per_month"]["mean"] * 512)


def test_seeds_reproduce(exposures):
    d, _ = exposures
    a = reliability(d, "dual-tor", 2.0, 500, seed=7)
    b = reliability(d, "dual-tor", 2.0, 500, seed=7)
    c = reliability(d, "dual-tor", 2.0, 500, seed=8)
    assert a == b and a != c


def test_bad_arguments(exposures):
    d, _ = exposures
    with pytest.raises(InputError, match="trials"):
        reliability(d, "dual-tor", 1.0, 0)
    with pytest.raises(InputError, match="link_per_month"):
        Rates(link_per_month=-1)


def test_dual_cut_off_needs_both_sides_at_once():
    from hpn.failures.montecarlo import _cut_offs_dual

    trial = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    nic = np.array([5, 5, 6, 6, 7, 5, 5, 5])
    side = np.array([0, 1, 0, 0, -1, 0, 1, 1])
    s = np.array([0.0, 5, 0, 5, 50, 0, 2, 20])
    e = np.array([10.0, 20, 10, 20, 60, 10, 4, 30])
    t, a, b = _cut_offs_dual(trial, nic, side, s, e, 8)
    got = sorted(zip(t.tolist(), a.tolist(), b.tolist(), strict=True))
    # nic 5 of trial 0 overlaps 5-10; nic 6 has one side only; nic 7 lost both (stacked pair);
    # trial 1, nic 5: three rows, side 0 overlaps the first side-1 row only
    assert got == [(0, 5.0, 10.0), (0, 50.0, 60.0), (1, 2.0, 4.0)]


def test_dual_plane_blackhole_holds_from_the_failure_layer():
    from hpn.failures.failover import Failover
    from hpn.failures.montecarlo import holds

    dp, sp = build("hpn", segments=2), build("hpn", segments=2, dual_plane=False)
    g = place(dp, 512).ranks
    fo = Failover(withdraw=0.14, probe=0.1, search=0.2)
    assert holds(dp, g, "hpn", fo).link == pytest.approx(0.3)  # re-selection
    assert holds(dp, g, "hpn", fo).tor == pytest.approx(0.3)
    assert np.isinf(holds(dp, g, "ecmp", fo).link)  # never before the repair
    assert holds(sp, place(sp, 512).ranks, "ecmp", fo).link == pytest.approx(0.14)  # BGP


def test_dual_plane_blackhole_halts_then_degrades(exposures):
    """Link failures only, 60 s each, no flaps. Hand-computed per failure: HPN re-selects
    after 0.3 s: halted 0.3 s, then degraded 59.7 s; ECMP blackholes the plane's inbound
    flows until the repair: halted 60 s (not past the 60 s timeout), never degraded; with a
    120 s repair every failure crashes the job after the timeout."""
    from hpn.failures.montecarlo import Holds

    d, _ = exposures
    rates = Rates(link_per_month=0.002, tor_per_month=0.0, link_repair=60.0, **NO_FLAPS)
    n = 0.002 * 1024  # failures per month on the exposure
    hpn = reliability(d, "dual-tor", 1.0, 2000, seed=4, rates=rates, hold=Holds(0.3, 0.3))
    halted, degraded = hpn["halted_hours_per_month"]["mean"], hpn["degraded_hours_per_month"]
    assert halted / degraded["mean"] == pytest.approx(0.3 / 59.7, rel=1e-3)
    assert halted == pytest.approx(n * 0.3 / 3600, rel=0.05)  # Poisson: 2000 trials, ~2 each
    assert hpn["crashes_per_month"]["mean"] == 0
    assert hpn["blackhole_s"] == {"link": 0.3, "tor": 0.3}
    inf = Holds(float("inf"), float("inf"))
    ecmp = reliability(d, "dual-tor", 1.0, 4000, seed=4, rates=rates, hold=inf)
    assert ecmp["degraded_hours_per_month"]["mean"] == 0
    assert ecmp["crashes_per_month"]["mean"] == 0  # 60 s is not past the 60 s timeout
    assert ecmp["halted_hours_per_month"]["mean"] == pytest.approx(n * 60 / 3600, rel=0.05)
    long = Rates(link_per_month=0.002, tor_per_month=0.0, link_repair=120.0, **NO_FLAPS)
    crash = reliability(d, "dual-tor", 1.0, 4000, seed=4, rates=long, hold=inf)
    c, h = crash["crashes_per_month"]["mean"], crash["halted_hours_per_month"]["mean"]
    assert c == pytest.approx(n, rel=0.05) and h * 3600 == pytest.approx(c * 60, rel=1e-9)
    # the same seed without the blackhole: degraded the whole outage, never halted
    none = reliability(d, "dual-tor", 1.0, 2000, seed=4, rates=rates)  # one chunk: same draws
    assert none["halted_hours_per_month"]["mean"] == 0
    assert none["degraded_hours_per_month"]["mean"] == pytest.approx(halted + degraded["mean"])


def test_flap_blackholes(exposures):
    """Flaps only: each halts the job for min(hold, 10 s), degrades it for the rest."""
    from hpn.failures.montecarlo import Holds

    d, _ = exposures
    rates = Rates(link_per_month=0.0, tor_per_month=0.0, flaps_per_day=5000.0)
    a = reliability(d, "dual-tor", 1.0, 2000, seed=5, rates=rates, hold=Holds(0.3, 0.3))
    b = reliability(d, "dual-tor", 1.0, 2000, seed=5, rates=rates, hold=Holds(1e9, 1e9))
    ha, da = a["halted_hours_per_month"]["mean"], a["degraded_hours_per_month"]["mean"]
    assert ha / (ha + da) == pytest.approx(0.03)  # 0.3 of every 10 s
    assert b["degraded_hours_per_month"]["mean"] == 0
    assert b["halted_hours_per_month"]["mean"] == pytest.approx(ha + da)
