"""Verdicts from bands: closed forms and invariants."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from hpn.reproduce.verdict import band_range, band_text, verdict

finite = st.floats(-1e6, 1e6, allow_nan=False)


def test_band_forms():
    assert band_range(70, {"rel": 0.1}) == (63.0, 77.0)
    assert band_range(6.25, {"abs": 1.0}) == (5.25, 7.25)
    assert band_range(1.5, {"min": 1, "max": 2}) == (1, 2)
    assert band_range(9, {"min": 9}) == (9, math.inf)
    assert band_range(32, {"max": 32}) == (-math.inf, 32)
    assert band_text(1024, {"rel": 0.0}) == "exact"
    assert band_text(70, {"rel": 0.15}) == "±15 %"


def test_verdicts():
    assert verdict(70, 63, {"rel": 0.1}, "") == "pass"  # the edge is inside
    assert verdict(70, 62.9, {"rel": 0.1}, "") == "fail"
    assert verdict(70, 62.9, {"rel": 0.1}, "a documented cause") == "explained"
    assert verdict(70, 62.9, {"rel": 0.1}, "   ") == "fail"  # blank is no cause
    assert verdict(70, None, {"rel": 0.1}, "cause") == "fail"  # no value: never explained
    assert verdict(3, math.inf, {"rel": 0.25}, "cause") == "fail"


@given(paper=finite, model=finite, a=st.floats(0, 1e3), cause=st.sampled_from(["", "why"]))
def test_pass_iff_inside(paper, model, a, cause):
    lo, hi = band_range(paper, {"abs": a})
    v = verdict(paper, model, {"abs": a}, cause)
    inside = lo - 1e-9 <= model <= hi + 1e-9
    assert (v == "pass") == inside
    if not inside:
        assert v == ("explained" if cause else "fail")


@given(paper=finite, r=st.floats(0, 1))
def test_paper_value_always_passes(paper, r):
    assert verdict(paper, paper, {"rel": r}, "") == "pass"
