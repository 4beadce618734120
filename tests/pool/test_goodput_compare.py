"""`hpn pool goodput` with no policy: the paper's five-policy comparison (A Fig 11a)."""

from __future__ import annotations

import json

from tests.conftest import run_cli

POLICIES = ["aegaeon", "serverless-artifact", "serverless", "muxserve", "dedicated"]
SMALL = [
    "pool",
    "goodput",
    "--gpus",
    "2",
    "--rate",
    "0.05",
    "--duration",
    "60s",
    "--metric",
    "deadline",
]
"""A small comparison: every policy, one accounting, a minute of trace."""


def test_default_is_the_papers_comparison():
    """No option given: 16 H800 at 0.1 req/s, both accountings; Aegaeon holds at least 1.5x
    the paper's ServerlessLLM baseline on both (emergent: nothing in the policies knows it)."""
    r = run_cli("pool", "goodput", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [p["policy"] for p in data["policies"]] == POLICIES
    assert data["metrics"] == ["deadline", "artifact"] and data["gpus"] == "16"
    by = {p["policy"]: p for p in data["policies"]}
    assert "ServerlessLLM" in by["serverless-artifact"]["name"]
    assert "vanilla ServerlessLLM" in by["serverless"]["name"]
    for metric, key in (("deadline", "max_models"), ("artifact", "max_models_artifact")):
        base, ours = by["serverless-artifact"][key], by["aegaeon"][key]
        assert base > 0 and ours >= 1.5 * base, (metric, ours, base)
        assert data["aegaeon_over_baseline"][metric] == round(ours / base, 3)
    # dedicated: one GPU per model, exactly; zero models has no attainment
    assert by["dedicated"]["max_models"] == 16
    for p in data["policies"]:
        if p["max_models"] == 0:
            assert p["attainment_at_max"] is None
        else:
            assert p["attainment_at_max"] >= 0.9


def test_table_shows_a_dash_for_zero_models():
    r = run_cli(*SMALL)
    assert r.code == 0, r.err
    rows = {ln.split()[0]: ln.split() for ln in r.out.splitlines() if ln.split()}
    assert set(POLICIES) <= set(rows)
    assert rows["serverless"][1:3] == ["0", "-"]  # vanilla ServerlessLLM: every cold start late
    assert rows["dedicated"][1] == "2"
    assert "artifact" not in r.out.splitlines()[1]  # one accounting asked for: one column pair


def test_single_policy_zero_models_shows_a_dash():
    r = run_cli("pool", "goodput", "--policy", "serverless", "--gpus", "2", "--duration", "60s")
    assert r.code == 0, r.err
    line = next(ln for ln in r.out.splitlines() if "SLO attainment at max" in ln)
    assert line.split()[-1].strip("│ ") == "-" or "-" in line.split("max")[-1]
    assert "%" not in line


def test_a_knob_applies_to_its_own_policy_in_the_comparison():
    r = run_cli(*SMALL, "--qs", "1", "--json")
    assert r.code == 0, r.err
    assert len(json.loads(r.out)["policies"]) == 5
