"""DCQCN's fixed point: the fluid model's derivatives vanish there, its small-p closed form,
the RED curve, and a hand-computed case."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.workload.dcqcn import Dcqcn, marking_probability, small_p_limit, standing_queue


def derivatives(p: float, capacity: float, flows: int, d: Dcqcn) -> tuple[float, float]:
    """dR_T/dt and dR_C/dt of the fluid model (Zhu et al. 2015, Eq. 4-5, with the fast-recovery
    factors of CoNEXT 2016 Eq. 11) at R_C = C / N, alpha from dα/dt = 0 and R_T from
    dR_T/dt = 0: written out term by term, independently of the module's reduction to one
    equation."""
    rc = capacity / (8 * d.packet) / flows
    r_ai = d.r_ai / (8 * d.packet)
    b = d.byte_counter / d.packet
    alpha = 1 - (1 - p) ** (d.tau_alpha * rc)
    a = 1 - (1 - p) ** (d.tau * rc)
    f, bt = d.fast_recovery, d.timer * rc
    by_bytes, by_timer = p / ((1 - p) ** (-b) - 1), p / ((1 - p) ** (-bt) - 1)
    inc = rc * (by_bytes + by_timer)  # R_C's increases
    inc_t = rc * (by_bytes * (1 - p) ** (f * b) + by_timer * (1 - p) ** (f * bt))  # R_T's
    rt = rc + d.tau * r_ai * inc_t / a  # dR_T/dt = 0
    d_rt = -(rt - rc) / d.tau * a + r_ai * inc_t
    d_rc = -rc * alpha / (2 * d.tau) * a + (rt - rc) / 2 * inc
    return d_rt, d_rc / (rc * alpha / (2 * d.tau) * a)  # the second relative to its cut term


@pytest.mark.parametrize("capacity", [40e9, 200e9, 400e9])
@pytest.mark.parametrize("flows", [1, 2, 7, 16])
def test_fixed_point_zeroes_the_fluid_model(capacity, flows):
    d = Dcqcn()
    p = marking_probability(capacity, flows, d)
    assert 0 < p < 1
    d_rt, rel_rc = derivatives(p, capacity, flows, d)
    assert d_rt == pytest.approx(0, abs=1e-3)
    assert rel_rc == pytest.approx(0, abs=1e-6)
    # off the point the current rate's balance has a sign: more marking cuts more
    assert (
        derivatives(p * 1.1, capacity, flows, d)[1]
        < 0
        < derivatives(p / 1.1, capacity, flows, d)[1]
    )


def test_hand_computed_small_p_case():
    """40 Gbps, 2 flows, 1 KB packets: R_C = 2.5e6 pkt/s, R_AI = 5,000 pkt/s, B = 10^4 pkt,
    T R_C = 137.5; p^3 = 5000 (1e-4 + 1/137.5)^2 / (55e-6 * 2.5e6^2) = 7.906e-10."""
    p3 = 5000 * (1e-4 + 1 / 137.5) ** 2 / (55e-6 * 2.5e6**2)
    assert small_p_limit(40e9, 2) == pytest.approx(p3 ** (1 / 3), rel=1e-9)
    assert p3 ** (1 / 3) == pytest.approx(9.247e-4, rel=1e-3)
    # here p B ~ 8: the byte counter's increases are rare, so the exact p* lies below the limit
    assert 0.8 * p3 ** (1 / 3) < marking_probability(40e9, 2) < p3 ** (1 / 3)


def test_small_p_limit_where_it_holds():
    """A slow additive increase keeps F p B and F p T R_C << 1: the limit is the answer."""
    d = Dcqcn(r_ai=40, byte_counter=1e6)
    p = marking_probability(40e9, 2, d)
    rc = 40e9 / 8e3 / 2
    f = d.fast_recovery
    assert f * p * d.byte_counter / d.packet < 0.06 and f * p * d.timer * rc < 0.01
    assert p == pytest.approx(small_p_limit(40e9, 2, d), rel=0.02)


def test_red_curve_and_queue():
    d = Dcqcn()
    assert d.queue_at(0) == d.kmin
    assert d.queue_at(d.pmax / 2) == pytest.approx((d.kmin + d.kmax) / 2)
    assert d.queue_at(0.5) == d.kmax
    assert standing_queue(200e9, 0) == 0.0
    p = marking_probability(200e9, 4)
    assert standing_queue(200e9, 4) == pytest.approx(d.kmin + p / d.pmax * (d.kmax - d.kmin))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([25e9, 100e9, 200e9, 400e9]), st.integers(1, 200))
def test_queue_grows_with_flows_and_stays_on_the_curve(capacity, flows):
    q1, q2 = standing_queue(capacity, flows), standing_queue(capacity, flows + 1)
    d = Dcqcn()
    assert d.kmin <= q1 <= q2 <= d.kmax
    assert math.isfinite(q2)


def test_bad_input():
    with pytest.raises(ValueError):
        marking_probability(0, 1)
    with pytest.raises(ValueError):
        marking_probability(1e9, 0)


def integrate(capacity: float, flows: int, d: Dcqcn, until: float = 0.3) -> float:
    """The fluid model's queue (bytes) after ``until`` seconds from line rate and an empty
    queue: Eq. 1-5 with the queue's own dynamics (dq/dt = N R_C - C, q >= 0), no delay."""
    import numpy as np
    from scipy.integrate import solve_ivp

    pk = d.packet
    cp, rai, b, f = capacity / (8 * pk), d.r_ai / (8 * pk), d.byte_counter / pk, d.fast_recovery
    kmin, kmax = d.kmin / pk, d.kmax / pk

    def rhs(t, y):
        q, al, rt, rc = y
        p = 0.0 if q <= kmin else (q - kmin) / (kmax - kmin) * d.pmax if q <= kmax else 1.0
        p = min(max(p, 1e-12), 1 - 1e-12)
        lq = np.log1p(-p)
        a = -np.expm1(d.tau * rc * lq)
        bt = d.timer * rc
        sb, st = p / np.expm1(-b * lq), p / np.expm1(-bt * lq)
        sf = sb * np.exp(f * b * lq) + st * np.exp(f * bt * lq)
        dq = flows * rc - cp if q > 0 or flows * rc > cp else 0.0
        dal = d.g / d.tau_alpha * (-np.expm1(d.tau_alpha * rc * lq) - al)
        drt = -(rt - rc) / d.tau * a + rai * rc * sf
        drc = -rc * al / (2 * d.tau) * a + (rt - rc) / 2 * rc * (sb + st)
        return [dq, dal, drt, drc]

    y0 = [0.0, 1.0, cp / flows * 1.2, cp / flows * 1.2]
    atol = [1e-6, 1e-9, 1e-3, 1e-3]
    sol = solve_ivp(rhs, (0, until), y0, method="LSODA", rtol=1e-8, atol=atol)
    return float(sol.y[0, -1] * pk)


@pytest.mark.parametrize(("capacity", "flows"), [(40e9, 8), (200e9, 7)])
def test_the_dynamics_settle_at_the_fixed_point(capacity, flows):
    """Integrating the fluid model in time (not the algebra) ends at the same queue."""
    d = Dcqcn()
    assert integrate(capacity, flows, d) == pytest.approx(
        standing_queue(capacity, flows, d), rel=1e-3
    )
