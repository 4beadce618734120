"""Verdicts are computed from what a measure returns, never taken from the data file."""

from __future__ import annotations

from hpn.reproduce.catalog import Claim
from hpn.reproduce.context import Context
from hpn.reproduce.measure import MEASURES, Measured
from hpn.reproduce.runner import measure_all


def _claim(measure: str, cause: str = "") -> Claim:
    return Claim(
        id="test.claim",
        paper="hpn",
        source="test",
        title="t",
        value=10.0,
        unit="u",
        precision="exact",
        band={"rel": 0.1},
        measure=measure,
        basis="emergent",
        command="hpn test",
        cause=cause,
    )


def test_verdict_follows_the_measured_value(monkeypatch):
    values = iter([10.5, 12.0, 12.0])
    monkeypatch.setitem(MEASURES._items, "test_m", lambda ctx, jobs: Measured(next(values)))
    ctx = Context(record=False)
    rep = measure_all([_claim("test_m"), _claim("test_m"), _claim("test_m", "known")], ctx)
    assert [o.verdict for o in rep.outcomes] == ["pass", "fail", "explained"]
    assert [o.cause for o in rep.outcomes] == ["", "", "known"]
    assert rep.counts() == {"pass": 1, "explained": 1, "fail": 1}


def test_a_measure_that_raises_fails_with_its_error(monkeypatch):
    def broken(ctx, jobs):
        raise RuntimeError("no such table")

    monkeypatch.setitem(MEASURES._items, "test_broken", broken)
    rep = measure_all(
        [_claim("test_broken", "a cause that must not excuse an error")], Context(record=False)
    )
    (o,) = rep.outcomes
    assert o.verdict == "fail" and o.measured is None
    assert o.cause == "measure failed: RuntimeError: no such table"
    assert o.row()["model"] is None
