"""The engine's commands end to end, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hpn.app.serve import MakeModelsResult
from tests.conftest import run_cli
from tests.serve.conftest import NEEDS
from tests.shapes import fits


def test_make_models_writes_loadable_checkpoints(tmp_path):
    pytest.importorskip("torch", reason=NEEDS)
    r = run_cli(
        "serve", "make-models", str(tmp_path / "m"), "--count", "2", "--sizes", "1m", "--json"
    )
    assert r.code == 0, r.err
    out = json.loads(r.out)
    fits(out, MakeModelsResult, "serve make-models")
    assert [m["arch"] for m in out["models"]] == ["llama", "qwen2"]
    from hpn.serve.store import scan

    assert sorted(scan(tmp_path / "m")) == sorted(m["name"] for m in out["models"])


@pytest.mark.parametrize(
    "args,field",
    [
        (["serve", "make-models", "X", "--count", "0"], "count"),
        (["serve", "make-models", "X", "--sizes", "lots"], "sizes"),
        (["serve", "start", "--models", "/nonexistent-hpn", "--port", "70000"], "port"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, field):
    pytest.importorskip("torch", reason=NEEDS)
    args = [str(tmp_path / "m") if a == "X" else a for a in args]
    r = run_cli(*args)
    assert r.code == 2, (r.out, r.err)
    assert field in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_replay_without_a_server_says_so(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("")
    r = run_cli("pool", "replay", str(trace), "--url", "http://127.0.0.1:9")
    assert r.code == 2 and "Traceback" not in r.err


_BEFORE_TORCH = """
import contextlib, io, json, sys
from hpn.cli import main
codes = []
for args in json.loads(sys.argv[1]):
    sys.argv = ["hpn", *args]
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            main()
        except SystemExit as e:
            codes.append(e.code)
print(json.dumps({"codes": codes, "torch": "torch" in sys.modules}))
"""


def test_bad_input_is_refused_before_torch_loads(tmp_path):
    # importing torch costs seconds: every check that can be made without it comes first
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        ["serve", "make-models", str(tmp_path / "m"), "--sizes", "10t"],
        ["serve", "profile", "--models", str(empty)],
        ["serve", "start", "--models", str(empty)],
        ["serve", "start", "--models", str(empty), "--policy", "nope"],
        ["serve", "start", "--models", str(tmp_path / "missing")],
    ]
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-c", _BEFORE_TORCH, json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
    )
    got = json.loads(out.stdout)
    assert got == {"codes": [2] * len(cases), "torch": False}
    assert not (tmp_path / "m").exists()
