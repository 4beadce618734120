"""hpn fail and hpn reliability from the command line."""

from __future__ import annotations

import pytest

from tests.conftest import assert_input_error, run_cli

STEP = """
[iteration]
gpus = 8
per_host = 2
compute = "20ms"
allreduce = "64MB"

[fabric]
preset = "hpn"
segments = 1
gpus_per_host = 2
"""


@pytest.fixture()
def step(tmp_path):
    p = tmp_path / "step.toml"
    p.write_text(STEP)
    return str(p)


def test_fail_json_and_run_folder(step, tmp_path):
    out = tmp_path / "run"
    r = run_cli(
        "fail",
        step,
        "--fault",
        "link:host=1,nic=0,at=1s,repair=2s",
        "--routing",
        "hpn",
        "--json",
        "--out",
        str(out),
    )
    assert r.code == 0, r.err
    j = r.json()
    for k in (
        "baseline_samples_per_s",
        "samples_per_s_during_fault",
        "throughput_loss",
        "halted_s",
        "crashed",
        "lost_work_s",
    ):
        assert k in j
    assert j["design"] == "dual-tor" and not j["crashed"]
    assert (out / "tables").is_dir() and (out / "result.json").is_file()
    s = run_cli(
        "fail", step, "--fault", "link:host=1,nic=0,at=1s,repair=90s", "--single-tor", "--json"
    )
    assert s.code == 0 and s.json()["crashed"]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--fault", "link:host=1,nic=0"], "needs at"),
        (["--fault", "nonsense"], "expected KIND"),
        (["--fault", "link:host=500,nic=0,at=1s"], "no host 500"),
        ([], "at least one fault"),
        (["--fault", "link:host=1,nic=0,at=1s", "--timeout", "soon"], "timeout"),
        (["--fault", "tor:segment=0,rail=0,at=1s", "--stacked", "--single-tor"], "dual-ToR"),
    ],
)
def test_fail_refuses_bad_input(step, args, fragment):
    assert_input_error(run_cli("fail", step, *args), fragment)


def test_fail_refuses_a_missing_config():
    assert_input_error(run_cli("fail", "/nonexistent.toml", "--fault", "link:host=0,nic=0,at=0"))


def test_reliability_json():
    r = run_cli(
        "reliability",
        "--gpus",
        "256",
        "--months",
        "2",
        "--trials",
        "300",
        "--seed",
        "1",
        "--segments",
        "1",
        "--price",
        "2",
        "--json",
    )
    assert r.code == 0, r.err
    j = r.json()
    assert j["design"] == "dual-tor" and j["trials"] == 300
    assert {"mean", "p50", "p90", "p99"} <= set(j["crashes_per_month"])
    assert "cost_per_month" in j and "degraded_hours_per_month" in j
    again = run_cli(
        "reliability",
        "--gpus",
        "256",
        "--months",
        "2",
        "--trials",
        "300",
        "--seed",
        "1",
        "--segments",
        "1",
        "--price",
        "2",
        "--json",
    )
    assert again.json() == j
    assert j["routing"] == "hpn" and j["blackhole_s"] == pytest.approx({"link": 0.3, "tor": 0.3})
    ecmp = run_cli("reliability", "--gpus", "256", "--trials", "50", "--segments", "1",
                   "--routing", "ecmp", "--json")  # fmt: skip
    assert ecmp.code == 0 and ecmp.json()["blackhole_s"] == {"link": None, "tor": None}  # never
    assert ecmp.json()["crashes_per_month"]["mean"] > j["crashes_per_month"]["mean"]


def test_reliability_refuses_bad_input():
    assert_input_error(run_cli("reliability", "--routing", "x", "--json"), "routing")
    assert_input_error(run_cli("reliability", "--probe", "-1s", "--json"), "probe")
    assert_input_error(run_cli("reliability", "--trials", "0", "--json"), "trials")
    assert_input_error(run_cli("reliability", "--gpus", "999999", "--json"), "gpus")


def test_runnables():
    from hpn.app import example, run

    out = run("fail", example("fail") or {})
    assert out.result.to_json()["design"] == "dual-tor" and "throughput" in out.tables
    out = run(
        "reliability",
        {
            "fabric": {"preset": "hpn", "segments": 1},
            "reliability": {"gpus": 64, "trials": 50, "months": 1},
        },
    )
    assert out.result.to_json()["trials"] == 50


CROSS_POD = """
[iteration]
gpus = 16
per_host = 2
compute = "20ms"
allreduce = "64MB"

[fabric]
preset = "hpn"
pods = 2
segments = 1
gpus_per_host = 2
tor_active_ports = 4
tor_backup_ports = 0
tor_uplinks = 2
"""


def test_fail_a_core_of_a_two_pod_fabric(tmp_path):
    p = tmp_path / "cross.toml"
    p.write_text(CROSS_POD)
    r = run_cli("fail", str(p), "--fault", "core:index=0,at=1s,repair=2s", "--json")
    assert r.code == 0, r.err
    j = r.json()
    (fault,) = j["faults"]
    assert fault["flows_cut_off"] == 0 and fault["moved_by_sender_reselect"] == 0
    assert fault["moved_by_network"] == 0 and fault["held_max_s"] is None
    assert not j["crashed"] and j["halted_s"] == 0
    assert_input_error(
        run_cli("fail", str(p), "--fault", "core:index=999,at=1s", "--json"), "core with index=999"
    )
