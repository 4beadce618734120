"""Goodput/capacity searches and the `hpn pool` CLI end to end."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from hpn.cli import app
from hpn.errors import InputError
from hpn.pool.mixes import load_mix, production
from hpn.pool.search import capacity, goodput, largest_ok, smallest_ok

FIX = Path(__file__).parent / "fixtures"
runner = CliRunner()


@given(st.integers(0, 300), st.integers(1, 40))
def test_monotone_searches_find_the_threshold(k, start):
    assert largest_ok(lambda n: n <= k, start, 300) == k
    found = smallest_ok(lambda n: n >= k, start, 300)
    assert found == (max(k, start) if max(k, start) <= 300 else None)


def test_searches_probe_by_galloping_then_bisecting_in_this_order():
    # hand-computed: doubling from start until the predicate flips, then halving the gap
    # (the order matters: goodput's memo and its 'evaluated' table follow it)
    for search, ok, start, limit, want, probes in (
        (largest_ok, lambda n: n <= 37, 8, 1024, 37, [8, 16, 32, 64, 48, 40, 36, 38, 37]),
        (smallest_ok, lambda n: n >= 37, 1, 512, 37, [1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37]),
        (largest_ok, lambda n: n <= 0, 4, 64, 0, [4, 2, 1]),
        (smallest_ok, lambda n: n >= 100, 8, 64, None, [8, 16, 32, 64]),
    ):
        seen: list[int] = []
        assert search(lambda n, ok=ok, seen=seen: seen.append(n) or ok(n), start, limit) == want
        assert seen == probes


def test_dedicated_goodput_is_one_model_per_gpu():
    # light load: dedicated serves exactly as many models as it has instances
    out = goodput("dedicated", 0.05, duration=120, gpus=3, gpu="h800", start=2)
    assert out["max_models"] == 3


def test_production_mix_statistics():
    m = production()
    assert len(m.names) == 47
    assert min(m.rates) == pytest.approx(0.01, abs=1e-4) and max(m.rates) == pytest.approx(1.13)
    assert sum(m.rates) / 47 == pytest.approx(0.037)
    g = m.groups()
    assert len(g[1]) == 28 and len(g[4]) == 19


def test_capacity_small_mix_file():
    mix = load_mix(FIX / "mix_small.toml")
    assert mix.names == ("chat", "model_01_0", "model_01_1") and mix.gpu == "h800"
    ded = capacity(mix, "dedicated", duration=600)
    assert ded["gpus"] == 3  # one GPU per model at these rates
    pooled = capacity(mix, "aegaeon", duration=600)
    assert pooled["gpus"] <= ded["gpus"]
    # ServerlessLLM's shipped keep-alive of 0 cold-starts (>= 22.3 s) every request that
    # follows an idle gap, past the 10 s TTFT SLO however many GPUs it gets
    with pytest.raises(InputError, match="serverless needs more than 8 GPUs"):
        capacity(mix, "serverless", duration=600, limit=8)


def test_bad_mix_file(tmp_path):
    p = tmp_path / "m.toml"
    p.write_text('[[model]]\nmodel = "7b"\nrate = -1\n')
    with pytest.raises(InputError, match="rate"):
        load_mix(p)
    p.write_text('[[model]]\nmodel = "gpt-9"\nrate = 1\n')
    with pytest.raises(InputError, match="unknown model"):
        load_mix(p)


def test_cli_simulate_json():
    r = runner.invoke(
        app,
        [
            "pool",
            "simulate",
            "--models",
            "6",
            "--rate",
            "0.1",
            "--duration",
            "60s",
            "--prefill-gpus",
            "1",
            "--decode-gpus",
            "1",
            "--seed",
            "3",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    for key in (
        "slo_attainment",
        "requests",
        "ttft_p50_s",
        "ttft_p99_s",
        "tbt_p99_s",
        "switches",
        "gpu_utilization",
    ):
        assert key in out
    assert out["requests"] > 0


def test_cli_simulate_trace_file_and_policies():
    r = runner.invoke(
        app,
        [
            "pool",
            "simulate",
            "--policy",
            "muxserve",
            "--gpus",
            "2",
            "--trace",
            str(FIX / "aegaeon_small.csv"),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["requests"] == 4
    r = runner.invoke(app, ["pool", "policies"])
    assert "aegaeon" in r.output and "serverless" in r.output


def test_cli_goodput_and_capacity_json():
    r = runner.invoke(
        app,
        [
            "pool",
            "goodput",
            "--policy",
            "dedicated",
            "--gpus",
            "2",
            "--rate",
            "0.05",
            "--duration",
            "60s",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["max_models"] == 2
    r = runner.invoke(
        app,
        [
            "pool",
            "capacity",
            "--mix",
            str(FIX / "mix_small.toml"),
            "--policy",
            "dedicated",
            "--duration",
            "5min",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["gpus"] == 3


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--policy", "nope", "--models", "2", "--gpus", "1"], "policy"),
        (["--models", "2", "--gpus", "1", "--gpu", "v100"], "gpu"),
        (["--models", "2", "--gpus", "1", "--ttft-slo", "10 parsecs"], "ttft-slo"),
        (["--gpus", "1"], "trace"),
        (["--trace", str(FIX / "nope.csv"), "--gpus", "1"], "no such file"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args, needle):
    p = subprocess.run(
        [sys.executable, "-m", "hpn", "pool", "simulate", *args], capture_output=True, text=True
    )
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr
