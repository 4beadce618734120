"""Aegaeon's decode quotas (Eq. 2-3) against hand-computed rounds and their invariants."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpn.pool.policies.quotas import Q_MAX, quotas, round_length


def test_worked_example_two_batches():
    # 2 batches, d = 25 ms, TBT = 100 ms -> n = 4, sum 1/n = 0.5; c = 2 s
    # alpha = max(2/(4*4) + 0.5, 0.5) = 0.625; q = 2 / (4 * 0.125) = 4 s; R = 10 s
    q, alpha = quotas([0.025, 0.025], 2.0, 0.1)
    assert alpha == pytest.approx(0.625)
    assert q == pytest.approx([4.0, 4.0])
    assert round_length([0.025, 0.025], 2.0, 0.1) == pytest.approx(10.0)


def test_hand_computed_floor_case():
    # 3 batches d = 10, 20, 10 ms -> n = 10, 5, 10; sum 1/n = 0.4; c = 0.6 s
    # first term 0.6 / (5 * 4) = 0.03 -> 0.43 < 0.5, so alpha = 0.5
    # q = 0.6 / (n * 0.1) -> 0.6, 1.2, 0.6 s; R = 0.6 + 2.4 = 3.0 s
    q, alpha = quotas([0.01, 0.02, 0.01], 0.6, 0.1)
    assert alpha == 0.5
    assert q == pytest.approx([0.6, 1.2, 0.6])
    assert round_length([0.01, 0.02, 0.01], 0.6, 0.1) == pytest.approx(3.0)


@given(
    st.lists(st.floats(0.002, 0.2), min_size=1, max_size=12),
    st.floats(0.01, 30.0),
    st.floats(0.01, 1.0),
)
def test_quota_invariants(d, c, tbt):
    q, alpha = quotas(d, c, tbt)
    inv = sum(di / tbt for di in d)
    assert alpha >= 0.5 and alpha > inv
    assert max(q) <= Q_MAX * (1 + 1e-9)
    r = c + sum(q)
    assert r == pytest.approx(c * alpha / (alpha - inv), rel=1e-9)
    for qi, di in zip(q, d, strict=True):
        # each batch emits q_i / d_i tokens per round: on average one per alpha * TBT
        assert r / (qi / di) == pytest.approx(alpha * tbt, rel=1e-9)
