"""One writer per run folder, the operating system's errors as one line, an unreadable index
rebuilt, and what killed runs leave behind (issue 28)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpn.errors import InputError
from hpn.store import Index, Run, record_run, runs_root
from hpn.store.record import check_out
from tests.cli.harness import invoke

SRC = Path(__file__).resolve().parents[2] / "src"


def _one_line(r) -> str:
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert r.code == 2 and len(lines) == 1 and "Traceback" not in r.err, (r.code, r.err)
    return lines[0]


def test_eight_runs_into_one_out_at_once_one_result(tmp_path: Path):
    out, store = tmp_path / "shared", tmp_path / "store"
    env = {**os.environ, "HPN_RUNS_DIR": str(store), "PYTHONPATH": str(SRC)}
    # a few seconds of compute each, so that the runs overlap (before: several "saved")
    args = [sys.executable, "-m", "hpn", "reliability", "--trials", "20000"]
    procs = [
        subprocess.Popen(
            [*args, "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(8)
    ]
    done = [(p.wait(300), p.stderr.read().decode()) for p in procs]
    won = [e for c, e in done if c == 0]
    lost = [e for c, e in done if c != 0]
    assert len(won) == 1 and "run saved to" in won[0], done
    assert len(lost) == 7 and {c for c, _ in done if c != 0} == {2}, done
    for err in lost:  # each refused in one line: held by another, or already holding the run
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and ("another run" in err or "already holds run" in err), err
    assert (Run(out).meta["status"], len(Index(store).rows())) == ("done", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared", "store"]  # no lock, no stage


def _record_after(barrier, out: Path, value: int, conn) -> None:
    """In a child: record a run into ``out``, its plots step waiting for the others'."""
    import contextlib
    import threading

    def meet(run) -> None:  # wait for the sibling; a refused one never comes
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(5)

    try:
        record_run("x", {"v": value}, {"v": value}, out=out, plots=meet)
        conn.send("saved")
    except InputError as e:
        conn.send(f"refused: {e}")


def test_runs_that_reach_the_rename_together_one_wins(tmp_path: Path):
    """Deterministic: both runs pass every check, then write at the same moment (before: both
    said saved and one result was gone)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    out, barrier = tmp_path / "shared", ctx.Barrier(2)
    pipes = [ctx.Pipe(duplex=False) for _ in range(2)]
    procs = [
        ctx.Process(target=_record_after, args=(barrier, out, i, pipes[i][1])) for i in range(2)
    ]
    for p in procs:
        p.start()
    said = sorted(pipes[i][0].recv() for i in range(2))
    for p in procs:
        p.join(30)
    assert said[1] == "saved" and said[0].startswith("refused: "), said
    assert "another run" in said[0] and len(Index(runs_root()).rows()) == 1


def test_a_held_out_is_refused_before_the_compute(tmp_path: Path):
    from hpn.store.claim import claim, lock_path

    out = tmp_path / "held"
    with claim(out.absolute()):
        pid = os.getpid()
        # another process would be refused; in this one the claim is re-entrant, so ask a child
        code = (
            "import sys; from hpn.store.claim import claim\n"
            f"try:\n    claim({str(out.absolute())!r}).__enter__()\n"
            "except Exception as e:\n    print(e); sys.exit(2)\n"
        )
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert r.returncode == 2 and f"another run (pid {pid}) is writing" in r.stdout, r
    assert not lock_path(out.absolute()).exists()


def test_a_replaced_run_is_moved_aside_never_deleted_first(tmp_path: Path, monkeypatch):
    import hpn.store.record as rec

    out = tmp_path / "r"
    record_run("x", {"a": 1}, {"y": 1}, out=out)
    real = os.rename

    def fail_second(src, dst):  # the new run cannot be renamed in: the old one comes back
        if ".part-" in str(src) and ".old" not in str(src):
            raise OSError(errno.EIO, "Input/output error", str(dst))
        return real(src, dst)

    monkeypatch.setattr(rec.os, "rename", fail_second)
    with pytest.raises(InputError, match=r"input/output error"):
        record_run("x", {"a": 2}, {"y": 2}, out=out, overwrite=True)
    assert Run(out).result == {"y": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


@pytest.mark.parametrize(
    "code, says",
    [
        (errno.ENOSPC, "no space left on device"),
        (errno.EIO, "input/output error"),
        (errno.EROFS, "read-only file system"),
        (errno.EACCES, "permission denied"),
    ],
)
def test_os_errors_while_writing_are_one_line_naming_the_run(
    tmp_path: Path, monkeypatch, code: int, says: str
):
    import hpn.store.record as rec

    def boom(*a, **k):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(rec, "write_table", boom)
    out = tmp_path / "r"
    with pytest.raises(InputError) as e:
        record_run("x", {"a": 1}, {"y": 1}, {"t": {"a": [1]}}, out=out)
    assert str(e.value).lower() == f"{out}: {says}"
    assert list(tmp_path.iterdir()) == [] and not (runs_root() / "index.sqlite").exists()


def test_no_space_is_refused_before_the_compute(tmp_path: Path, monkeypatch):
    import hpn.store.record as rec

    real = os.statvfs

    class Full:
        def __init__(self, st):
            self.f_flag, self.f_blocks, self.f_files = st.f_flag, st.f_blocks, st.f_files
            self.f_bavail, self.f_frsize, self.f_favail = 3, 4096, st.f_favail

    monkeypatch.setattr(rec.os, "statvfs", lambda p: Full(real(p)))
    with pytest.raises(InputError, match="no space left on the device"):
        check_out(tmp_path / "r")


def test_read_only_mount_refused_for_plot_out(tmp_path: Path, monkeypatch):
    import hpn.store.record as rec

    assert invoke(["topo", "summary", "--out", str(tmp_path / "r")], tmp_path, {}).code == 0
    monkeypatch.setattr(rec, "_read_only_fs", lambda p: True)
    r = invoke(["plot", str(tmp_path / "r"), "--out", str(tmp_path / "x.png")], tmp_path, {})
    assert "--out" in _one_line(r) and "read-only file system" in r.err


def test_a_symlinked_out_folder_works(tmp_path: Path):
    target = tmp_path / "real"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    r = invoke(["topo", "summary", "--out", str(tmp_path / "link")], tmp_path, {})
    assert r.code == 0, r.err
    assert Run(target).meta["status"] == "done" and (tmp_path / "link").is_symlink()
    assert Index(runs_root()).rows()[0]["path"] == str(target)


def test_an_unreadable_index_is_said_before_work_and_reindex_rebuilds_it(tmp_path: Path):
    record_run("x", {"a": 1}, {"y": 1})
    record_run("x", {"a": 2}, {"y": 2})
    index = runs_root() / "index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"garbage, not a database" * 40)
    r = invoke(["runs", "list"], tmp_path, {})
    assert "index.sqlite" in _one_line(r) and "runs reindex" in r.err
    r = invoke(["topo", "summary"], tmp_path, {})
    assert "index.sqlite" in _one_line(r)
    r = invoke(["runs", "reindex"], tmp_path, {})
    assert r.code == 0 and "unreadable: moved to" in r.out and "indexed 2" in r.out, r
    assert len(Index(runs_root()).rows()) == 2
    assert any(p.name.startswith("index.sqlite.corrupt-") for p in runs_root().iterdir())


def test_a_folder_index_is_reported_and_rebuilt(tmp_path: Path):
    record_run("x", {"a": 1}, {"y": 1})
    index = runs_root() / "index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.mkdir()
    assert "is a folder" in _one_line(invoke(["runs", "list"], tmp_path, {}))
    assert invoke(["runs", "reindex"], tmp_path, {}).code == 0
    assert len(Index(runs_root()).rows()) == 1


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_gc_and_the_next_run_remove_what_killed_runs_left(tmp_path: Path):
    root = runs_root()
    root.mkdir(parents=True, exist_ok=True)
    dead = _dead_pid()
    (root / f".a.part-{dead}").mkdir()
    (root / f".a.part-{os.getpid()}").mkdir()  # a live writer's: kept
    (root / ".b.lock").write_text(f"{dead}\n")  # nobody holds it
    r = invoke(["runs", "gc"], tmp_path, {})
    assert r.code == 0 and "removed 1 staging folder(s), 1 lock(s)" in r.out, r
    assert sorted(p.name for p in root.iterdir()) == [f".a.part-{os.getpid()}"]
    (root / f".c.part-{dead}").mkdir()
    record_run("x", {"a": 1}, {"y": 1})
    assert not (root / f".c.part-{dead}").exists()


def test_plots_are_drawn_with_the_runs_name_not_its_staging_folder(tmp_path: Path):
    seen = []
    out = record_run(
        "x",
        {"a": 1},
        {"y": 1},
        out=tmp_path / "my-run",
        plots=lambda r: seen.append((r.id, r.label)),
    )
    assert seen == [("my-run", "my-run")] and out.name == "my-run"


def test_collect_leaves_a_held_lock(tmp_path: Path):
    from hpn.store.claim import claim, collect, lock_path

    folder = (tmp_path / "x").absolute()
    with claim(folder):
        assert collect(tmp_path) == {"staging": 0, "locks": 0}
        assert lock_path(folder).exists()
