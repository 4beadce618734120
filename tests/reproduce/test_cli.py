"""`hpn reproduce` end to end: the JSON shape, the report folder stored as a run, sub-runs
stored, and bad input (one line, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpn.reproduce.runner import ROW_KEYS
from tests.conftest import assert_input_error, run_cli

FAST = "hpn.tab2.tier1,hpn.fig7.aggs,hpn.tab2.baseline-pod,hpn.fig9.heat-sinks"


def test_json_shape_report_and_runs(tmp_path, monkeypatch):
    store = tmp_path / "store"
    monkeypatch.setenv("HPN_RUNS_DIR", str(store))
    out = tmp_path / "report"
    r = run_cli("reproduce", "hpn", "--only", FAST, "--out", str(out), "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    rows = {c["id"]: c for c in data["claims"]}
    assert set(rows) == set(FAST.split(","))
    for c in data["claims"]:
        assert tuple(c) == ROW_KEYS
        assert c["verdict"] in ("pass", "fail", "explained")
    # the port-budget arithmetic: 1,024 GPUs per segment (pass), 4K baseline pod vs the
    # paper's 2K, outside its exact band, with the documented cause (explained)
    assert rows["hpn.tab2.tier1"]["model"] == 1024 and rows["hpn.tab2.tier1"]["verdict"] == "pass"
    base = rows["hpn.tab2.baseline-pod"]
    assert base["model"] == 4096 and base["verdict"] == "explained" and "64 ToRs" in base["cause"]
    assert rows["hpn.fig7.aggs"]["band"] == [120, 120] and rows["hpn.fig7.aggs"]["cause"] == ""
    # the report folder is a finished run; every figure is a PNG
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "done" and meta["command"] == "reproduce"
    report = json.loads((out / "report.json").read_text())
    assert report["claims"] == data["claims"]
    for cid in rows:
        png = out / report["details"][cid]["figure"]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (out / "report.html").read_text()
    assert all(f"id='{cid}'" in html for cid in rows) and "Not computed by the model" in html
    # each sub-run is stored too (one topo summary per distinct fabric, one bom)
    subs = [json.loads(p.read_text()) for p in store.glob("*/run.json")]
    assert {s["command"] for s in subs} == {"topo summary", "topo bom"}
    assert len(report["runs"]) == len(subs) == 5  # tab2: 3 fabrics, + the HPN pod, + bom
    # again onto the same folder: the previous report run is replaced
    again = run_cli("reproduce", "hpn", "--only", "hpn.fig7.aggs", "--out", str(out))
    assert again.code == 0, again.err
    assert "1 claims: 1 pass" in again.out
    assert json.loads((out / "report.json").read_text())["claims"][0]["id"] == "hpn.fig7.aggs"


def test_table_names_every_claim(tmp_path):
    r = run_cli("reproduce", "--only", "hpn.fig7.*", "--out", str(tmp_path / "r"))
    assert r.code == 0, r.err
    for cid in ("hpn.fig7.tor-agg-links", "hpn.fig7.aggs", "hpn.fig7.tor-oversubscription"):
        assert cid in r.out
    assert "3 claims: 3 pass, 0 explained, 0 fail" in r.out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--only", "hpn.nope"], "error: --only: unknown claim 'hpn.nope'"),
        (["--only", ""], "error: --only:"),
        (["--only", "hpn.fig7.aggs,"], "error: --only: empty claim id"),
        (["nope"], "error: paper: choose hpn, aegaeon or all"),
        (["aegaeon", "--only", "hpn.fig7.aggs"], "error: --only: no claim"),
    ],
)
def test_bad_input(args, fragment):
    assert_input_error(run_cli("reproduce", *args), fragment)


def test_out_is_a_file(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    assert_input_error(
        run_cli("reproduce", "--only", "hpn.fig7.aggs", "--out", str(f)),
        "error: --out:",
        "is a file",
    )
    assert f.read_text() == "x"


def test_out_not_a_run_folder(tmp_path):
    (tmp_path / "mine.txt").write_text("keep")
    assert_input_error(
        run_cli("reproduce", "--only", "hpn.fig7.aggs", "--out", str(tmp_path)),
        "error: --out:",
        "not a run folder",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


def test_out_holding_another_commands_run(tmp_path):
    other = tmp_path / "summary"
    assert run_cli("topo", "summary", "--out", str(other)).code == 0
    assert_input_error(
        run_cli("reproduce", "--only", "hpn.fig7.aggs", "--out", str(other)),
        "error: --out:",
        "holds a topo summary run",
    )
    assert (other / "result.json").is_file()


def test_list(tmp_path):
    r = run_cli("reproduce", "aegaeon", "--list")
    assert r.code == 0 and "aegaeon.fig11a.ratio" in r.out and "hpn.tab2" not in r.out
    assert not list(Path(tmp_path).iterdir())


def test_quick_subset_end_to_end(tmp_path):
    """What CI runs: every quick claim of both papers measured, none failing (a measure that
    breaks, or a model change that moves a value out of its band without a documented
    cause, fails here)."""
    from hpn.reproduce import select

    out = tmp_path / "quick"
    r = run_cli("reproduce", "--quick", "--out", str(out), "--json", timeout=600)
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [c["id"] for c in data["claims"]] == [c.id for c in select("all", quick=True)]
    failed = [c["id"] for c in data["claims"] if c["verdict"] == "fail"]
    assert not failed, failed
    assert all(c["model"] is not None for c in data["claims"])
    assert len(list((out / "figures").glob("*.png"))) == len(data["claims"])


def test_executor_processes_gives_the_inline_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("HPN_RUNS_DIR", str(tmp_path / "store"))
    rows = {}
    for ex in ("inline", "processes"):
        r = run_cli(
            "reproduce",
            "hpn",
            "--only",
            FAST,
            "--executor",
            ex,
            "--out",
            str(tmp_path / ex),
            "--json",
        )
        assert r.code == 0, r.err
        rows[ex] = json.loads(r.out)["claims"]
    assert rows["processes"] == rows["inline"]
    report = json.loads((tmp_path / "processes" / "report.json").read_text())
    assert report["executor"] == "processes" and len(report["runs"]) == 5


def test_bad_executor():
    assert_input_error(
        run_cli("reproduce", "--only", "hpn.fig7.aggs", "--executor", "cloud"), "executor"
    )
