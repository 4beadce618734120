"""Verdicts are computed from what a measure returns, never taken from the data file."""

from __future__ import annotations

from dataclasses import replace

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


def test_groups_on_a_mapper_give_the_same_rows_and_keep_claim_order(monkeypatch):
    # claims are grouped by the start of their command and measured on the mapper's
    # tasks (here run in reverse order); the outcomes come back in the claims' order
    from hpn.reproduce import runner

    values = {"test.a": 10.0, "test.b": 11.5, "test.c": 30.0}
    monkeypatch.setitem(MEASURES._items, "test_v", lambda ctx, jobs: Measured(0.0))
    claims = []
    for cid, cmd in (
        ("test.a", "hpn topo summary --x"),
        ("test.b", "hpn pool goodput"),
        ("test.c", "hpn topo summary"),
    ):
        claims.append(replace(_claim("test_v"), id=cid, command=cmd))
    seen: list[list[str]] = []

    def fake_group(ids, runner, root=None, record=True):
        seen.append(ids)
        return [(i, Measured(values[i]), "", 0.0) for i in ids], []

    monkeypatch.setattr(runner, "measure_group", fake_group)
    rep = measure_all(
        claims, Context(record=False), mapper=lambda fn, tasks: [fn(**t) for t in tasks[::-1]]
    )
    assert sorted(seen) == [["test.a", "test.c"], ["test.b"]]
    assert [o.claim.id for o in rep.outcomes] == ["test.a", "test.b", "test.c"]
    assert [o.verdict for o in rep.outcomes] == ["pass", "fail", "fail"]
