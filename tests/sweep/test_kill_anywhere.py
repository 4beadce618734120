"""Kill-anywhere: a run or a sweep stopped at every step of writing a run, then rerun.

Each step is a call that touches the disk while a run is written: creating a temp file,
renaming it into place, renaming the staged run folder, writing the index. A forked child
runs the write and dies (``os._exit``, no cleanup, like ``kill -9``) just before or just after
step k, for every k; the parent then reruns and checks that every point is there once, with
one index row each, and that no temp file or staging folder is left.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from hpn.errors import InputError
from hpn.store import Index, record_run
from hpn.sweep import SweepSpec, run_sweep

if not hasattr(os, "fork"):
    pytest.skip("needs fork", allow_module_level=True)


@pytest.fixture(autouse=True)
def _plugin(plugin):
    """The plug-in command ``test square``, installed (an entry point)."""


def _instrument(die_at: int | None, counter: list[int]) -> None:
    """Wrap each disk step; ``os._exit`` on tick ``die_at`` (before/after each step)."""

    def tick() -> None:
        counter[0] += 1
        if counter[0] == die_at:
            os._exit(137)

    def wrap(owner, name):
        real = getattr(owner, name)

        def step(*a, **k):
            tick()
            out = real(*a, **k)
            tick()
            return out

        setattr(owner, name, step)

    wrap(tempfile, "mkstemp")
    wrap(os, "replace")
    wrap(os, "rename")
    wrap(Index, "upsert")


def _in_child(die_at: int | None, work) -> int:
    """Run ``work()`` in a forked child instrumented to die at tick ``die_at``; ticks seen."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 0
        try:
            os.close(r)
            counter = [0]
            _instrument(die_at, counter)
            work()
            os.write(w, str(counter[0]).encode())
        except BaseException:  # noqa: BLE001
            code = 3
        finally:
            os._exit(code)
    os.close(w)
    deadline = time.time() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"child stuck (die_at={die_at})")
        time.sleep(0.005)
    ticks = os.read(r, 64).decode()
    os.close(r)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 137), f"child failed with {code} at die_at={die_at}"
    return int(ticks) if ticks else -1


def _stray(root: Path) -> list[str]:
    """Temp files and staging folders anywhere under ``root`` (the index's own files aside)."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob(".*")
        if p.name.endswith(".tmp") or ".part-" in p.name
    )


def _spec(n: int) -> SweepSpec:
    return SweepSpec(name="ka", command="test square", grid={"p.x": list(range(n))})


def test_sweep_killed_at_every_step_resumes_with_every_point_once(tmp_path: Path, monkeypatch):
    n = 3
    total = _in_child(None, lambda: run_sweep(_spec(n), source="x = 1\n"))
    assert total >= 20 * n  # 4 files x (temp + rename) + stage rename + index, before/after
    for k in range(1, total + 1):
        root = tmp_path / f"k{k}"
        monkeypatch.setenv("HPN_RUNS_DIR", str(root))
        _in_child(k, lambda: run_sweep(_spec(n), source="x = 1\n"))
        out = run_sweep(_spec(n), source="x = 1\n")
        assert out["failed"] == 0, (k, out["errors"])
        assert out["reused"] + out["computed"] == n  # reused counts the recovered
        rows = Index(root).rows("sweep = 'ka'")
        assert len(rows) == n == len({r["point"] for r in rows}), k
        assert {r["status"] for r in rows} == {"done"}
        assert sorted(r["figures"]["y"] for r in rows) == [x * x for x in range(n)], k
        assert {r["computed"] for r in rows} == {1}, k  # none computed twice
        assert _stray(root) == [], k
        points = [p for p in (root / "sweeps" / "ka").iterdir() if not p.name.startswith(".")]
        assert sorted(p.name for p in points if p.is_dir()) == sorted(r["point"] for r in rows)


def _single(out: Path | None) -> None:
    record_run("test square", {"p": {"x": 3}}, {"y": 9}, {"t": {"i": [0, 1, 2]}}, out=out)


@pytest.mark.parametrize("with_out", [True, False])
def test_single_run_killed_at_every_step_then_rerun(tmp_path: Path, monkeypatch, with_out: bool):
    total = _in_child(None, lambda: _single(tmp_path / "probe" if with_out else None))
    # config, table, result, run.json (temp file, rename); stage rename; index
    assert total == 2 * (2 * 4 + 1 + 1)
    for k in range(1, total + 1):
        root = tmp_path / f"k{k}"
        monkeypatch.setenv("HPN_RUNS_DIR", str(root))
        out = root / "mine" if with_out else None
        _in_child(k, lambda out=out: _single(out))
        if with_out:
            try:
                _single(out)
            except InputError as e:  # the killed run had completed: it is kept and indexed
                assert "already holds run mine" in str(e)
            rows = Index(root).rows()
            assert [r["path"] for r in rows] == [str(out)], k
        else:
            _single(None)
            Index(root).reindex()  # a run finished but not indexed is found again
            rows = Index(root).rows()
            folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
            assert sorted(r["path"] for r in rows) == sorted(str(p) for p in folders), k
            assert 1 <= len(rows) <= 2
        assert all(r["status"] == "done" and r["figures"]["y"] == 9 for r in rows)
        assert _stray(root) == [], k
