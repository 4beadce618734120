"""Valid inputs that used to be refused: a byte-order mark, CRLF line ends, quoted CSV fields, a
config from a pipe; and no NaN or Infinity in any JSON output (issue 28)."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import pytest

from tests.cli.harness import invoke

BOM = "\ufeff"


def _ok(r) -> None:
    assert r.code == 0 and "Traceback" not in r.err, (r.code, r.err)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_toml_config_with_bom_and_either_line_end(tmp_path: Path, eol: str):
    cfg = tmp_path / "fabric.toml"
    cfg.write_bytes((BOM + eol.join(["[fabric]", 'preset = "hpn"', "segments = 2", ""])).encode())
    r = invoke(["topo", "summary", "--config", str(cfg), "--json"], tmp_path, {})
    _ok(r)
    assert json.loads(r.out)["segments"] == 2


def test_a_config_from_a_pipe(tmp_path: Path):
    fifo = tmp_path / "cfg.toml"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as f:
            f.write('[fabric]\npreset = "hpn"\nsegments = 3\n')

    t = threading.Thread(target=feed)
    t.start()
    r = invoke(["topo", "summary", "--config", str(fifo), "--json"], tmp_path, {})
    t.join(10)
    _ok(r)
    assert json.loads(r.out)["segments"] == 3


HEAD = "Request Time,Model Name,Input Length,Output Length"


def test_a_trace_with_bom_crlf_and_quoted_fields(tmp_path: Path):
    from hpn.pool.traces import load_trace

    rows = [HEAD, '00:00:00.000,"qwen, 7b",10,10', "00:00:01.000,m2,20,5", ""]
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join([HEAD, "00:00:00.000,qwen; 7b,10,10", "00:00:01.000,m2,20,5", ""]))
    odd = tmp_path / "odd.csv"
    odd.write_bytes((BOM + "\r\n".join(rows)).encode())
    a, b = load_trace(odd), load_trace(plain)
    assert a.names == ("qwen, 7b", "m2") and len(a) == len(b) == 2
    assert list(a.input_len) == list(b.input_len) and list(a.arrival) == list(b.arrival)
    r = invoke(["pool", "simulate", "--trace", str(odd), "--gpus", "8", "--json"], tmp_path, {})
    _ok(r)


def test_a_matrix_csv_with_bom_and_crlf(tmp_path: Path):
    from hpn.workload.matrix import read_matrix

    p = tmp_path / "m.csv"
    p.write_bytes((BOM + 'src,dst,bytes\r\n0,1,1000\r\n"1",0,2000\r\n').encode())
    m = read_matrix(p)
    assert list(m.src) == [0, 1] and list(m.size) == [1000, 2000]


def test_a_mix_with_bom(tmp_path: Path):
    from hpn.pool.mixes import load_mix

    p = tmp_path / "mix.toml"
    p.write_bytes(
        (BOM + '[[model]]\r\nmodel = "qwen2.5-7b"\r\nrate = 0.5\r\ncount = 2\r\n').encode()
    )
    assert load_mix(p).rates == (0.5, 0.5)


def test_json_output_has_no_nan_or_infinity():
    import numpy as np

    from hpn.store.atomic import finite, json_text

    obj = {"a": math.inf, "b": [1.0, math.nan, -math.inf], "c": np.float64("inf"), "d": 2.5}
    assert finite(obj) == {"a": None, "b": [1.0, None, None], "c": None, "d": 2.5}
    text = json_text(obj)
    assert "Infinity" not in text and "NaN" not in text and json.loads(text)["d"] == 2.5


def test_the_cli_prints_strict_json(tmp_path: Path, monkeypatch, capsys):
    from hpn.cli.output import emit_json

    emit_json({"x": math.inf, "y": [math.nan]})
    assert json.loads(capsys.readouterr().out) == {"x": None, "y": [None]}


def test_a_stored_result_with_infinity_serves_as_json(tmp_path: Path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hpn.store import record_run, runs_root
    from hpn.store.run import Run
    from hpn.web import create_app

    run = Run(record_run("x", {"a": 1}, {"never": math.inf}))
    (run.path / "result.json").write_text('{"never": Infinity}')  # an older run's file
    with TestClient(create_app(runs_root()), base_url="http://127.0.0.1") as c:
        r = c.get(f"/api/runs/{run.id}")
        assert r.status_code == 200 and json.loads(r.text)["result"] == {"never": None}
