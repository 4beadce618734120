"""The run store: atomic writes, run folders, the index, reading runs back."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hpn.errors import InputError
from hpn.store import Index, Run, open_run, record_run, runs_root
from hpn.store.atomic import write_text, write_with
from hpn.store.dotted import config_hash
from hpn.store.record import check_out


def test_atomic_write_leaves_nothing_on_failure(tmp_path: Path):
    target = tmp_path / "a.txt"
    write_text(target, "old")

    def boom(p: Path) -> None:
        p.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_with(target, boom)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_record_and_read_back():
    cfg = {"fabric": {"preset": "hpn", "segments": 2}, "traffic": {"seed": 7}}
    res = {"makespan_s": 1.5, "fct_s": {"p50": 0.1, "p99": 0.2}, "name": "x", "big": [1, 2]}
    tables = {
        "flows": {"fct_s": np.array([0.1, 0.2, 0.3]), "size": np.array([1, 2, 3])},
        "rows": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}],
    }
    folder = record_run("traffic", cfg, res, tables)
    assert folder.parent == runs_root()
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["config.toml", "result.json", "run.json", "tables"]
    run = open_run(folder.name)
    assert run.config == cfg and run.result == res
    assert run.meta["seed"] == 7 and run.meta["status"] == "done"
    assert run.meta["config_hash"] == config_hash(cfg)
    assert set(run.tables) == {"flows", "rows"}
    assert all(p.suffix == ".parquet" for p in run.tables.values())
    np.testing.assert_allclose(run.table("flows")["fct_s"], [0.1, 0.2, 0.3])
    assert list(run.table("rows")["b"]) == ["x", "y"]
    row = Index(runs_root()).get(run.id)
    assert row["command"] == "traffic" and row["computed"] == 1
    assert row["figures"]["fct_s.p99"] == 0.2 and "big" not in row["figures"]


def test_overwrite_counts_computations_and_keeps_one_row(tmp_path: Path):
    out = tmp_path / "r"
    record_run("x", {"a": 1}, {"y": 1}, out=out)
    with pytest.raises(InputError, match="already holds run r"):
        record_run("x", {"a": 1}, {"y": 2}, out=out)
    assert Run(out).result == {"y": 1}
    record_run("x", {"a": 1}, {"y": 2}, out=out, overwrite=True)
    rows = Index(runs_root()).rows()
    assert len(rows) == 1 and rows[0]["computed"] == 2
    assert Run(out).result == {"y": 2}


def test_config_hash_ignores_key_order():
    assert config_hash({"a": 1, "b": {"c": 2, "d": 3}}) == config_hash(
        {"b": {"d": 3, "c": 2}, "a": 1}
    )
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_out_must_be_a_run_folder_or_new(tmp_path: Path):
    check_out(tmp_path / "new")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "f").write_text("x")
    with pytest.raises(InputError, match="not a run folder"):
        check_out(tmp_path / "junk")


def test_unfinished_folder_is_not_a_run_and_reindex_skips_it():
    folder = record_run("x", {"a": 1}, {"y": 1})
    broken = runs_root() / "broken"
    broken.mkdir()
    (broken / "run.json").write_text('{"status": "running", "command": "x"}')
    os.remove(runs_root() / "index.sqlite")
    assert Index(runs_root()).reindex() == 1
    assert [r["path"] for r in Index(runs_root()).rows()] == [str(folder)]


def test_open_run_errors():
    with pytest.raises(InputError, match="no run"):
        open_run("nope")
    record_run("x", {"a": 1}, {"y": 1})
    record_run("x", {"a": 2}, {"y": 1})
    assert open_run("latest").config == {"a": 2}
    with pytest.raises(InputError, match="matches 2 runs"):
        open_run(str(open_run("latest").id)[:4])
