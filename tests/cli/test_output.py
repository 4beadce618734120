"""Human output: values rounded for display only, no Python dicts or raw JSON in tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpn.app.display import display
from tests.cli.harness import invoke

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "value,text",
    [
        (1.6036511219999738, "1.604"),
        (1.0000000000000002, "1"),
        (122880.0, "122,880"),
        (1234.5678, "1,234.6"),
        (0.000123456, "0.0001235"),
        (12345, "12,345"),
        (None, "-"),
        (True, "True"),
        ({"8": 1.0, "16": 0.98791}, "8 1, 16 0.9879"),
        ([0.5, 2], "0.5, 2"),
        ({}, "-"),
        (float("inf"), "inf"),
    ],
)
def test_display_rounds_and_flattens(value, text):
    assert display(value) == text


def test_bom_with_prices_prints_no_raw_json_and_json_keeps_numbers(tmp_path):
    env = {"HPN_RUNS_DIR": str(tmp_path / "store")}
    prices = str(REPO / "examples/fabric/prices.toml")
    r = invoke(["topo", "bom", "--prices", prices], tmp_path, env)
    assert r.code == 0, r.err
    last = r.out.strip().splitlines()[-1]
    assert last.startswith("cost (USD): switches ") and "{" not in r.out
    j = invoke(["topo", "bom", "--prices", prices, "--json"], tmp_path, env)
    import json

    cost = json.loads(j.out)["cost"]
    assert f"total {cost['total']:,.0f}" in last


def test_pool_goodput_rows_are_readable(tmp_path):
    env = {"HPN_RUNS_DIR": str(tmp_path / "store")}
    args = ["pool", "goodput", "--gpus", "4", "--duration", "30s"]
    one = invoke([*args, "--policy", "aegaeon"], tmp_path, env, limit_s=120)
    assert one.code == 0, one.err
    assert "{" not in one.out and "'" not in one.out
    assert "attainment by models tried" in one.out and "%" in one.out
    every = invoke(args, tmp_path, env, limit_s=300)  # the five-policy comparison
    assert every.code == 0, every.err
    assert "{" not in every.out and "'" not in every.out
    assert all(p in every.out for p in ("aegaeon", "serverless-artifact", "muxserve", "dedicated"))


@pytest.mark.parametrize(
    "fault,warned",
    [
        ("link:host=20,nic=0,at=1s,repair=5s", True),  # a host outside the 4-host job
        ("agg:plane=0,index=0,at=1s,repair=5s", True),  # the job stays in one segment
        ("link:host=2,nic=3,at=1s,repair=5s", False),
        # rail 0's NICs at 200G: no warning, yet no loss either, as the ring is NVLink-bound
        # at NCCL's data rate (a ring channel's share of a 200G port still exceeds its
        # NVLink share); the 0.3 s blackhole of a link fault is what makes the line above lossy
        ("tor:segment=0,rail=0,plane=0,at=1s,repair=5s", None),
    ],
)
def test_a_fault_away_from_the_job_is_one_warning_line(tmp_path, fault, warned):
    import json

    env = {"HPN_RUNS_DIR": str(tmp_path / "store")}
    job = str(REPO / "examples/failures/dp-step.toml")
    r = invoke(["fail", job, "--fault", fault, "--json"], tmp_path, env, limit_s=120)
    assert r.code == 0, r.err
    loss = json.loads(r.out)["throughput_loss"]
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    if warned:
        assert lines == [
            f"warning: fault {fault!r} takes down nothing the job uses: "
            "its loss is 0 by construction"
        ]
        assert loss == 0
    else:
        assert lines == [] and (loss > 0 if warned is False else loss == 0)


def test_user_text_that_looks_like_console_markup_is_printed_as_is(tmp_path):
    """A query result (or a path, a name) with ``[/x]`` in it: printed, not a rich MarkupError
    (``runs query "SELECT * FROM duckdb_settings()"`` crashed on a ``[/tmp/...]`` value)."""
    pytest.importorskip("duckdb")
    env = {"HPN_RUNS_DIR": str(tmp_path / "store")}
    r = invoke(["runs", "query", "select '[/x]' as a, '[bold]b' as b"], tmp_path, env)
    assert r.code == 0 and "Traceback" not in r.err, r.err
    assert "[/x]" in r.out and "[bold]b" in r.out


def test_a_query_past_duckdbs_memory_is_refused_and_spills_nothing(tmp_path, monkeypatch):
    """Over the memory cap DuckDB spilled to ``./.tmp`` in the user's folder; now it refuses."""
    pytest.importorskip("duckdb")
    monkeypatch.setattr("hpn.store.query.MEMORY", "64MB")
    env = {"HPN_RUNS_DIR": str(tmp_path / "store")}
    sql = "select count(*) from (select * from range(20000000) order by random())"
    r = invoke(["runs", "query", sql], tmp_path, env)
    assert r.code == 2 and r.err.startswith("error: SQL:"), r.err
    assert not (tmp_path / ".tmp").exists()


def test_out_parser_takes_a_default_path_and_refuses_an_empty_name():
    """The demo's default ``--out`` (a Path) passes the parser unchanged (it broke make demo)."""
    import typer

    from hpn.cli.store_opts import folder_name

    assert folder_name(Path("out/demo")) == Path("out/demo")
    assert folder_name("runs/x") == Path("runs/x")
    with pytest.raises(typer.BadParameter):
        folder_name("  ")
