"""The store under failure: nothing half-written, nothing unindexed, modes, read-only SQL."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hpn.errors import InputError
from hpn.store import Index, Run, record_run, runs_root
from hpn.store.record import check_out, clear_stale


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name != "index.sqlite")


def test_huge_seed_is_recorded_and_indexed_with_null_seed():
    folder = record_run("traffic", {"traffic": {"seed": 10**23}}, {"y": 1})
    row = Index(runs_root()).rows()[0]
    assert row["path"] == str(folder) and row["seed"] is None
    assert Run(folder).meta["seed"] == 10**23 and Run(folder).meta["status"] == "done"


def test_a_failing_write_leaves_no_folder_and_no_row(tmp_path: Path, monkeypatch):
    import hpn.store.record as rec

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rec, "write_table", boom)
    out = tmp_path / "r"
    with pytest.raises(InputError, match=rf"^{out}: no space left on device"):
        record_run("x", {"a": 1}, {"y": 1}, {"t": {"a": [1]}}, out=out)
    assert list(tmp_path.iterdir()) == [] and Index(runs_root()).rows() == []


def test_a_failing_index_write_removes_the_folder(tmp_path: Path, monkeypatch):
    def boom(self, row, computed=False):
        raise KeyboardInterrupt

    monkeypatch.setattr(Index, "upsert", boom)
    with pytest.raises(KeyboardInterrupt):
        record_run("x", {"a": 1}, {"y": 1}, out=tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_files_respect_the_umask(tmp_path: Path):
    old = os.umask(0o022)
    try:
        folder = record_run("x", {"a": 1}, {"y": 1}, {"t": {"a": [1, 2]}}, out=tmp_path / "r")
    finally:
        os.umask(old)
    for p in [folder / "run.json", folder / "result.json", folder / "tables" / "t.parquet"]:
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755


def test_stale_staging_and_temp_files_do_not_block_out(tmp_path: Path):
    out = tmp_path / "r"
    out.mkdir()
    (out / ".run.json.abc.tmp").write_text("{")  # an old atomic write cut short
    dead = tmp_path / ".r.part-999999999"  # a pid that cannot be alive
    dead.mkdir()
    (dead / "config.toml").write_text("a = 1\n")
    check_out(out)
    record_run("x", {"a": 1}, {"y": 1}, out=out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    assert sorted(p.name for p in out.iterdir()) == ["config.toml", "result.json", "run.json"]


def test_live_staging_is_kept(tmp_path: Path):
    live = tmp_path / f".r.part-{os.getppid()}"
    live.mkdir()
    assert clear_stale(tmp_path) == 0 and live.exists()


def test_out_onto_a_finished_unindexed_run_indexes_it_and_refuses(tmp_path: Path):
    out = tmp_path / "r"
    record_run("x", {"a": 1}, {"y": 1}, out=out)
    os.remove(runs_root() / "index.sqlite")
    with pytest.raises(InputError, match="already holds run r"):
        check_out(out)
    assert [r["path"] for r in Index(runs_root()).rows()] == [str(out)]


@pytest.mark.parametrize("where", ["root", "out"])
def test_a_file_in_the_way_is_refused_before_work(tmp_path: Path, monkeypatch, where: str):
    f = tmp_path / "file"
    f.write_text("x")
    if where == "root":
        monkeypatch.setenv("HPN_RUNS_DIR", str(f))
        with pytest.raises(InputError, match=r"^\$HPN_RUNS_DIR: .* is a file, not a folder"):
            check_out(None)
    else:
        with pytest.raises(InputError, match=r"^--out: .*file is a file, so .* cannot be created"):
            check_out(f / "sub")


def test_read_only_folder_is_refused(tmp_path: Path, monkeypatch):
    import hpn.store.record as rec

    monkeypatch.setattr(rec.os, "access", lambda p, mode: False)
    monkeypatch.setattr(rec, "_read_only_fs", lambda p: True)
    with pytest.raises(InputError, match=r"^\$HPN_RUNS_DIR: .* not writable \(read-only"):
        check_out(tmp_path / "r")


def test_checks_leave_an_existing_folder_untouched(tmp_path: Path):
    out = tmp_path / "new"
    before = tmp_path.stat().st_mtime_ns
    check_out(out)
    assert tmp_path.stat().st_mtime_ns == before and not out.exists()


def test_reindex_skips_staging_folders(tmp_path: Path):
    record_run("x", {"a": 1}, {"y": 1})
    stage = runs_root() / ".other.part-1"
    (stage).mkdir()
    (stage / "run.json").write_text('{"status": "done", "command": "x"}')
    os.remove(runs_root() / "index.sqlite")
    assert Index(runs_root()).reindex() == 1


duckdb = pytest.importorskip("duckdb")


@pytest.mark.parametrize(
    "sql, says",
    [
        ("copy (select 1) to 'out.csv'", "only SELECT"),
        ("attach 'x.db'", "only SELECT"),
        ("install httpfs", "only SELECT"),
        ("set enable_external_access = true", "only SELECT"),
        ("create table t as select 1", "only SELECT"),
        ("select 1; select 2", "exactly one SELECT"),
        ("select * from read_csv('/etc/passwd')", "disabled by configuration"),
        ("select * from 'out.parquet'", "disabled by configuration"),
        ("select frm", "SQL:"),
    ],
)
def test_query_is_read_only(tmp_path: Path, monkeypatch, sql: str, says: str):
    from hpn.store.query import query

    monkeypatch.chdir(tmp_path)
    record_run("x", {"a": 1}, {"y": 1}, {"t": {"a": [1, 2]}})
    with pytest.raises(InputError, match=r"^SQL: ") as e:
        query(sql)
    assert says in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_query_reads_tables_and_caps_rows():
    from hpn.store.query import query

    record_run("x", {"a": 1}, {"y": 1}, {"t": {"a": [1, 2]}})
    assert query("select sum(a) from t")["rows"] == [[3]]
    big = query("select * from range(50)", max_rows=10)
    assert len(big["rows"]) == 10 and big["truncated"]


def test_output_files_are_checked_before_work(tmp_path: Path):
    from hpn.store.record import check_out_file

    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match=r"^--out: .*/d is a folder; give a file name"):
        check_out_file(tmp_path / "d")
    with pytest.raises(InputError, match=r"^--out: folder .*/missing does not exist"):
        check_out_file(tmp_path / "missing" / "x.png")
    with pytest.raises(InputError, match=r"^--out: x.bmp: give a name ending in .png, .svg"):
        check_out_file(tmp_path / "x.bmp", suffixes=(".png", ".svg"))
    assert check_out_file(tmp_path / "x.png", suffixes=(".png",)) == tmp_path / "x.png"


def test_a_store_that_is_a_file_is_refused_when_read(tmp_path: Path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv("HPN_RUNS_DIR", str(f))
    with pytest.raises(InputError, match=r"^\$HPN_RUNS_DIR: .* is a file, not a folder"):
        Index(runs_root()).rows()


def test_runs_list_keeps_ids_whole_when_piped_and_counts_in_json(cli):
    ids = [
        Run(record_run("topo summary", {"a": i}, {"gpus": i}, label=f"r{i}")).id for i in range(3)
    ]
    r = cli("runs", "list")  # piped: 80 columns
    assert r.code == 0, r.err
    for i in ids:
        assert i in r.out, (i, r.out)
    out = cli("runs", "list", "--limit", "2", "--json").json()
    assert (out["total"], out["shown"], len(out["runs"])) == (3, 2, 2)
    assert cli("runs", "list", "--limit", "0", "--json").json()["shown"] == 3
