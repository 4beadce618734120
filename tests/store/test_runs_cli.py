"""`--out` on commands and `hpn runs list|show|compare|query`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import assert_input_error


def test_json_stays_one_object_and_run_is_named_on_stderr(cli, tmp_path: Path):
    r = cli("topo", "summary", "--json", "--preset", "dcn-plus")
    assert r.code == 0, r.err
    assert r.json()["preset"] == "dcn-plus"
    assert r.err == ""  # with --json the folder is named only when stderr is a terminal
    r = cli("topo", "summary", "--preset", "dcn-plus")
    assert r.code == 0 and "DCN+" in r.out
    folder = Path(r.err.strip().removeprefix("run saved to "))
    assert (folder / "run.json").exists() and json.loads((folder / "result.json").read_text())
    out = tmp_path / "mine"
    r = cli("topo", "summary", "--segments", "2", "--out", str(out))
    assert r.code == 0, r.err
    assert "segments = 2" in (out / "config.toml").read_text()
    assert (out / "tables" / "counts.parquet").exists()


def test_bad_out_is_refused_before_work(cli, tmp_path: Path):
    (tmp_path / "f").write_text("x")
    assert_input_error(cli("topo", "summary", "--out", str(tmp_path)), "--out")


def test_list_show_compare_query(cli):
    assert cli("topo", "summary", "--segments", "2").code == 0
    assert cli("topo", "summary", "--segments", "4").code == 0
    runs = cli("runs", "list", "--json").json()["runs"]
    assert [r["figures"]["gpus"] for r in runs] == [4096, 2048]
    a, b = runs[1]["id"], runs[0]["id"]
    show = cli("runs", "show", a, "--json").json()
    assert show["config"]["fabric"]["segments"] == 2 and show["tables"] == {"counts": 7}
    c = cli("runs", "compare", a, b, "--json").json()
    assert c["config"] == {"fabric.segments": [2, 4]}
    assert c["figures"]["gpus"] == [2048, 4096] and "gpus" in c["differing_figures"]
    assert c["tables"]["counts"][0]["rows"] == 7
    q = cli(
        "runs",
        "query",
        "select run_id, count from counts where tier = 'tor' order by count",
        "--json",
    )
    assert q.json()["rows"] == [[a, 32], [b, 64]]
    text = cli("runs", "compare", a, b)
    assert text.code == 0 and "fabric.segments" in text.out


def test_runs_errors(cli):
    assert_input_error(cli("runs", "show", "nope"), "RUN", "no run")
    assert_input_error(cli("runs", "query", "select * from nowhere"), "SQL")
    assert_input_error(cli("runs", "compare", "a"), "RUNS")
