"""The claims data file: complete, consistent, every measure registered; selection."""

from __future__ import annotations

import pytest

from hpn.errors import InputError
from hpn.reproduce import load, select, uncovered
from hpn.reproduce.measure import MEASURES
from hpn.reproduce.runner import measure_all  # noqa: F401  (registers the measures)


def test_every_claim_has_a_measure_and_source():
    claims, jobs = load()
    assert len(claims) >= 30
    for c in claims:
        assert c.measure in MEASURES, c.id
        assert c.source and c.command and c.unit and c.title, c.id
        assert c.id.startswith(c.paper + "."), c.id
        if c.figure.get("kind") == "curve":
            assert c.points, f"{c.id}: a curve claim draws the paper's points"
    assert {"llama-7b", "llama-13b", "gpt3-175b"} <= set(jobs)


def test_both_papers_in_quick_and_demo():
    quick = select("all", quick=True)
    assert {c.paper for c in quick} == {"hpn", "aegaeon"}
    assert {c.paper for c in quick if c.demo} == {"hpn", "aegaeon"}
    assert len(select("all")) > len(quick)


def test_select_only_and_prefix():
    assert [c.id for c in select("all", only="hpn.fig7.aggs")] == ["hpn.fig7.aggs"]
    fig18 = {c.id for c in select("hpn", only="hpn.fig18.*")}
    assert fig18 == {c.id for c in load()[0] if c.id.startswith("hpn.fig18.")}
    assert select("aegaeon", only="hpn.fig7.aggs") == []  # another paper's claim


@pytest.mark.parametrize(
    ("paper", "only", "field"),
    [
        ("all", "hpn.nope", "--only"),
        ("all", "", "--only"),
        ("all", ",", "--only"),
        ("x", None, "paper"),
    ],
)
def test_select_bad_input(paper, only, field):
    with pytest.raises(InputError) as e:
        select(paper, only=only)
    assert e.value.field == field


def test_uncovered_names_why():
    rows = uncovered()
    assert any(r["id"] == "aegaeon.h20-9x" for r in rows)
    assert all(r["why"] and r["source"] for r in rows)
