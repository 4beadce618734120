"""SLO attainment on hand-made token timelines; closed-form runs equal the token loop."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.pool.metrics import slo_attainment, slo_attainment_artifact, weighted_quantile
from hpn.pool.requests import Request


def test_all_on_time():
    assert slo_attainment(0.0, [1.0, 1.1, 1.2], 10.0, 0.1) == 1.0


def test_late_first_token_then_catch_up():
    # TTFT 2 s, TBT 1 s; deadlines 2, 3, 4, 5. Tokens at 3 (late), 3.5 (late), 4 and 4.5
    # (on time): credited (4-3.5) + (4.5-4) = 1.0 of 4.5 s
    assert slo_attainment(0.0, [3.0, 3.5, 4.0, 4.5], 2.0, 1.0) == pytest.approx(1.0 / 4.5)


def test_slack_absorbs_a_stall():
    # deadlines 10, 10.1, 10.2; an early first token leaves slack for a 5 s stall
    assert slo_attainment(0.0, [1.0, 6.0, 6.05], 10.0, 0.1) == 1.0
    # the same stall after a late start is not absorbed
    att = slo_attainment(0.0, [9.9, 15.0, 15.05], 10.0, 0.1)
    assert att == pytest.approx(9.9 / 15.05)


def test_artifact_accounting_resets_after_a_miss():
    # TTFT 2, TBT 1: token 1 at 1 (on time, credit 2); token 2 at 10 (late: bank 2,
    # start=10); tokens 3, 4 at 10.5, 11 on time vs the new start; end adds 1.0.
    assert slo_attainment_artifact(0.0, [1.0, 10.0, 10.5, 11.0], 2.0, 1.0) == pytest.approx(3 / 11)


def test_weighted_quantile():
    assert weighted_quantile([1.0, 2.0, 3.0], [1, 1, 98], 0.5) == 3.0
    assert weighted_quantile([1.0, 2.0, 3.0], [98, 1, 1], 0.5) == 1.0


runs = st.lists(
    st.tuples(st.floats(0.0, 20.0), st.floats(0.0, 0.3), st.integers(1, 40)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(runs, st.floats(0.5, 10.0), st.floats(0.01, 0.3))
def test_closed_form_runs_match_token_loop(spec, ttft, tbt):
    out = sum(n for _, _, n in spec)
    r = Request(0, "m", 0.0, 10, out, ttft, tbt)
    times, t = [], 0.0
    for wait, d, n in spec:
        t1 = t + wait + 1e-3
        r.emit(t1, d, n)
        times += [t1 + j * d for j in range(n)]
        t = times[-1]
    assert r.done_t == pytest.approx(times[-1])
    assert r.attainment() == pytest.approx(slo_attainment(0.0, times, ttft, tbt), abs=1e-6)
    assert r.attainment_artifact() == pytest.approx(
        slo_attainment_artifact(0.0, times, ttft, tbt), abs=1e-6
    )


def test_unfinished_or_failed_scores_zero():
    r = Request(0, "m", 0.0, 10, 5, 10.0, 0.1)
    r.emit(1.0, 0.01, 3)
    assert r.attainment() == 0.0
    r.emit(2.0, 0.01, 2)
    assert r.attainment() == 1.0
    r.failed = True
    assert r.attainment() == 0.0
