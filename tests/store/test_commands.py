"""The computing commands record runs, and run through the registry as sweeps do."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpn.app import run as run_command
from hpn.app import runnables
from hpn.store import Index, Run, runs_root
from hpn.sweep import SweepSpec, run_sweep


def test_registry_lists_the_computing_commands():
    assert {"topo summary", "traffic", "pool simulate", "pool goodput", "pool capacity"} <= set(
        runnables()
    )


def test_traffic_records_flows_links_and_tier_utilization(cli, tmp_path: Path):
    out = tmp_path / "t"
    r = cli("traffic", "--segments", "2", "--size", "1MB", "--json", "--out", str(out))
    assert r.code == 0, r.err
    res = r.json()
    run = Run(out)
    assert run.result == res and run.config["traffic"]["size"] == "1MB"
    flows = run.table("flows")
    assert len(flows["fct_s"]) == res["flows"]
    np.testing.assert_allclose(np.median(flows["fct_s"]), res["fct_s"]["p50"])
    links = run.table("links")
    assert len(links["link_id"]) == res["links_used"]
    assert links["util_peak"].max() == res["link_peak_util_max"]
    util = run.table("tier_util")
    assert set(util["tier"]) >= {"nic_tor", "tor_agg"} and (util["util"] <= 1 + 1e-9).all()
    # the registry computes the same figures from the stored config
    again = run_command("traffic", run.config).result.to_json()
    assert again["fct_s"] == res["fct_s"] and again["flows"] == res["flows"]


def test_pool_commands_record_runs(cli):
    args = "pool goodput --policy aegaeon --rate 0.1 --gpus 4 --duration 60s --json"
    r = cli(*args.split())
    assert r.code == 0, r.err
    row = Index(runs_root()).rows("command = 'pool goodput'")[0]
    run = Run(Path(row["path"]))
    assert run.result == r.json() and run.config["pool"]["gpus"] == 4
    slo = run.table("slo")
    assert list(slo["models"]) == sorted(int(k) for k in r.json()["evaluated"])


def test_sweep_of_pool_simulate_then_an_xy_plot(cli, tmp_path: Path):
    spec = SweepSpec(
        name="pool",
        command="pool simulate",
        base={"pool": {"gpus": 4, "duration": "60s", "rate": 0.1}},
        grid={"pool.policy": ["aegaeon", "serverless"], "pool.models": [4, 16]},
    )
    out = run_sweep(spec)
    assert (out["computed"], out["failed"]) == (4, 0), out["errors"]
    rows = Index(runs_root()).rows("sweep = 'pool'")
    cli_run = cli(
        "pool",
        "simulate",
        "--models",
        "4",
        "--gpus",
        "4",
        "--duration",
        "60s",
        "--json",
        "--policy",
        "serverless",
    ).json()
    swept = next(
        r
        for r in rows
        if r["figures"]["policy"] == cli_run["policy"] and r["figures"]["models"] == 4
    )
    assert swept["figures"]["slo_attainment"] == cli_run["slo_attainment"]
    ids = [r["id"] for r in rows]
    r = cli(
        "plot",
        *ids,
        "--x",
        "pool.models",
        "--y",
        "slo_attainment",
        "--by",
        "pool.policy",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert r.code == 0, r.err
    assert (tmp_path / "xy.png").exists()
