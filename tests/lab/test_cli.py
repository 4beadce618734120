"""``hpn lab ...`` end to end, as a user runs it."""

from __future__ import annotations

import pytest

from hpn.app.lab import StatusResult, TrafficResult
from tests.conftest import run_cli
from tests.shapes import fits

from .leftovers import NOTHING, leftovers


def test_configs_without_root(tmp_path):
    r = run_cli("lab", "configs", "--single-plane", "--out", str(tmp_path / "c"), "--json")
    assert r.code == 0, r.err
    out = r.json()
    assert out["switches"] == 6  # 4 ToRs, 2 Aggs in one plane
    assert (tmp_path / "c" / "t0.conf").read_text().count("remote-as") == 2


@pytest.mark.lab
def test_up_traffic_fail_down(lab_name, tmp_path):
    env_runs = str(tmp_path / "runs")
    r = run_cli("lab", "up", "--name", lab_name, "--control", "static", "--json")
    assert r.code == 0, r.err
    assert r.json()["status"] == "up"
    fits(r.json(), StatusResult, "lab up")
    r = run_cli(
        "lab",
        "traffic",
        "--name",
        lab_name,
        "--size",
        "40kB",
        "--rate",
        "1Mbps",
        "--out",
        env_runs + "/t",
        "--json",
    )
    assert r.code == 0, r.err
    out = r.json()
    fits(out, TrafficResult, "lab traffic")
    assert out["packets_lost"] <= 0.01 * out["packets_sent"]
    assert out["model_vs_measured"]["max_rel_error"] < 0.02
    r = run_cli("lab", "fail", "--name", lab_name, "--target", "cable:1")
    assert r.code == 2 and "target" in r.err and "Traceback" not in r.err
    r = run_cli("lab", "down", "--name", lab_name, "--json")
    assert r.code == 0 and r.json()["left"] == 0
    assert leftovers("hl" + lab_name) == NOTHING
    r = run_cli("lab", "traffic", "--name", lab_name)
    assert r.code == 2 and "no lab" in r.err
