"""The engine's commands end to end, as a user runs them."""

from __future__ import annotations

import json

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
