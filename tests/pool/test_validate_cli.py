"""`hpn pool validate` and the policy knobs on the command line, end to end."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from hpn.cli import app

runner = CliRunner()
HEADER = "Request Time,Model Name,Input Length,Output Length\n"
ROWS = "00:00:00.054,synth_model_03,512,64\n00:00:01.500,synth_model_01,128,32\n"


def folder(tmp_path):
    d = tmp_path / "synth"
    d.mkdir()
    for n in ("synth-2-0.1-1.0-1.0.csv", "synth-2-0.1-2.0-1.0.csv"):
        (d / n).write_text(HEADER + ROWS)
    return d


def hpn(*args):
    return subprocess.run([sys.executable, "-m", "hpn", *args], capture_output=True, text=True)


def test_validate_table_json_and_stored_run(tmp_path):
    d = folder(tmp_path)
    ref = tmp_path / "ref.csv"
    ref.write_text("file,policy,attainment\nsynth-2-0.1-1.0-1.0,aegaeon,99.0\n")
    out = tmp_path / "run"
    args = ["pool", "validate", str(d), "--policy", "aegaeon", "--policy", "serverless-artifact"]
    r = runner.invoke(app, [*args, "--gpus", "4", "--reference", str(ref), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "synth-2-0.1-2.0-1.0.csv" in r.output and "ref %" in r.output
    assert (out / "result.json").is_file()
    r = runner.invoke(app, [*args, "--gpus", "4", "--workers", "2", "--json"])
    rows = json.loads(r.output)["rows"]
    assert [(x["file"][:15], x["policy"]) for x in rows] == [
        ("synth-2-0.1-1.0", "aegaeon"),
        ("synth-2-0.1-1.0", "serverless-artifact"),
        ("synth-2-0.1-2.0", "aegaeon"),
        ("synth-2-0.1-2.0", "serverless-artifact"),
    ]
    assert all(x["requests"] == 2 and x["failed"] == 0 for x in rows)


@pytest.mark.parametrize(
    "extra, needle",
    [
        ("empty", "no Aegaeon workload CSV"),
        ("policy", "unknown policy 'vllm'"),
        ("file", "not in the folder"),
    ],
)
def test_validate_bad_input_is_one_line_exit_2(tmp_path, extra, needle):
    d = folder(tmp_path)
    ref = tmp_path / "ref.csv"
    args = ["pool", "validate", str(d), "--gpus", "4"]
    if extra == "empty":
        args[2] = str(tmp_path)
        (tmp_path / "notes.csv").write_text("a,b\n")
    else:
        name = "synth-2-0.1-1.0-1.0" if extra == "policy" else "synth-9-0.1-1.0-1.0"
        pol = "vllm" if extra == "policy" else "aegaeon"
        ref.write_text(f"file,policy,attainment\n{name},{pol},90\n")
        args += ["--reference", str(ref)]
    p = hpn(*args)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and p.stdout == "" and len(lines) == 1 and needle in lines[0]


def test_policy_knobs_on_the_command_line():
    base = ["pool", "simulate", "--models", "4", "--rate", "0.1", "--duration", "120s"]
    cold = runner.invoke(app, [*base, "--policy", "serverless", "--gpus", "4", "--json"])
    warm = runner.invoke(
        app,
        [*base, "--policy", "serverless", "--gpus", "4", "--keep-alive", "600s", "--json"],
    )
    assert cold.exit_code == 0 and warm.exit_code == 0, cold.output + warm.output
    assert json.loads(warm.output)["switches"] < json.loads(cold.output)["switches"]
    p = hpn(*base, "--policy", "aegaeon", "--gpus", "4", "--target", "2")
    assert p.returncode == 2 and "--target" in p.stderr and "serverless" in p.stderr
    p = hpn(*base, "--policy", "serverless", "--gpus", "4", "--tier", "tape")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_validate_on_the_simulators_own_costs(tmp_path):
    # the artifact folder's profiles (written from a known line): every decode step is
    # int(1000 * 10.5 ms) = 10 ms, so the token gaps are exactly 10 ms; the default stays
    # the fitted profile
    from tests.pool.artifact_profiles import write_profiles

    d = folder(tmp_path)
    art = write_profiles(tmp_path / "artifact")
    args = ["pool", "validate", str(d), "--policy", "serverless-artifact", "--gpus", "4"]
    r = runner.invoke(app, [*args, "--costs", "artifact", "--artifact", str(art), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["rows"]
    assert [x["tbt_p50_s"] for x in rows] == [0.01, 0.01]
    r = runner.invoke(app, [*args, "--json"])
    assert all(x["tbt_p50_s"] != 0.01 for x in json.loads(r.output)["rows"])


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--costs", "artifact"], "--artifact DIR"),
        (["--costs", "artifact", "--artifact", "."], "no simulator profiles"),
        (["--artifact", "."], "only with costs = artifact"),
        (
            ["--costs", "artifact", "--policy", "aegaeon"],
            "applies to policy aegaeon-artifact or serverless-artifact",
        ),
        (["--costs", "sim"], "--costs"),
    ],
)
def test_validate_costs_bad_input_is_one_line_exit_2(tmp_path, extra, needle):
    d = folder(tmp_path)
    pol = [] if "--policy" in extra else ["--policy", "serverless-artifact"]
    p = hpn("pool", "validate", str(d), "--gpus", "4", *pol, *extra)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and p.stdout == "" and len(lines) == 1 and needle in lines[0], p.stderr
