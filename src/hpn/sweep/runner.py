"""Running a sweep resumably: reuse every completed point, compute the rest, never twice.

Points live at ``ROOT/sweeps/NAME/KEY/`` with a stable key per point; a point folder exists
only once complete (it is staged under a hidden name and renamed into place). On start the
runner removes what a killed driver left (staging folders, temp files), indexes any complete
folder the index missed (a kill between the rename and the index write), then runs only what
is left. A lock
file keeps two drivers off one sweep; the OS drops it when a driver dies, even by ``kill -9``.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpn.app import command as get
from hpn.errors import InputError
from hpn.store.atomic import is_temp, write_text
from hpn.store.index import Index, index_row
from hpn.store.paths import runs_root
from hpn.store.record import check_out, clear_stale
from hpn.store.run import read_meta
from hpn.sweep.spec import SweepSpec, points, sweep_id

Progress = Callable[[int, int], None]  # (completed, total)


def sweep_dir(spec: SweepSpec, root: Path | None = None) -> Path:
    return (root or runs_root()) / "sweeps" / sweep_id(spec)


def _recover(index: Index, folder: Path, keys: set[str], done: set[str]) -> int:
    """Index complete point folders the index does not know (killed between the two writes)."""
    n = 0
    for key in keys - done:
        meta = read_meta(folder / key)
        if meta and meta.get("status") == "done":
            index.upsert(index_row(folder / key, meta), computed=True)  # computed once, uncounted
            done.add(key)
            n += 1
    return n


def _validate(command: str, pts: list) -> None:
    """Parse every point's config with the command's model: a bad value or an unknown key in
    the grid is refused (naming the point) before any point runs."""
    try:
        runnable = get(command)
    except InputError:
        return  # unknown: refused when the first point runs
    for p in pts:
        try:
            runnable.parse(p.config)
        except InputError as e:
            raise InputError(f"sweep point {p.label}", str(e)) from None


def _clean(folder: Path) -> None:
    """With the lock held: drop what a killed driver left (staging folders, temp files)."""
    clear_stale(folder)
    for p in folder.iterdir():
        if p.is_file() and is_temp(p.name):
            p.unlink(missing_ok=True)


def run_sweep(
    spec: SweepSpec,
    *,
    workers: int = 1,
    dask: str | None = None,
    root: Path | None = None,
    source: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run what is left of a sweep; the summary (points, reused, computed, failed, wall)."""
    from hpn.sweep import executors

    if workers < 1:
        raise InputError("--workers", f"must be >= 1, got {workers}")
    get(spec.command)
    if dask:
        executors.check_address(dask)
    root = root or runs_root()
    name = sweep_id(spec)
    pts = points(spec)  # every point checked before anything is written
    _validate(spec.command, pts)
    check_out(None, root)
    folder = sweep_dir(spec, root)
    folder.mkdir(parents=True, exist_ok=True)
    lock = open(folder / ".lock", "w")  # noqa: SIM115 - held for the whole sweep
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise InputError("sweep", f"{name!r} is being run by another process") from None
    try:
        _clean(folder)
        if source is not None:
            write_text(folder / "sweep.toml", source)
        index = Index(root)
        done = {
            k
            for k in set(index.done_points(name)) & {p.key for p in pts}
            if (read_meta(folder / k) or {}).get("status") == "done"
        }
        recovered = _recover(index, folder, {p.key for p in pts}, done)
        todo = [p for p in pts if p.key not in done]
        tasks = [
            {
                "command": spec.command,
                "config": p.config,
                "folder": str(folder / p.key),
                "sweep": name,
                "key": p.key,
                "label": p.label,
                "root": str(root),
                "plot": spec.plot,
            }
            for p in todo
        ]
        t0 = time.perf_counter()
        if dask:
            stream = executors.run_dask(tasks, workers, dask)
        elif workers > 1 and len(tasks) > 1:
            stream = executors.run_processes(tasks, min(workers, len(tasks)))
        else:
            stream = executors.run_inline(tasks)
        failed: dict[str, str] = {}
        computed = 0
        if progress:
            progress(len(done), len(pts))
        for i, res in enumerate(stream, 1):
            if res["ok"]:
                computed += 1
            else:
                failed[res["key"]] = res["error"]
            if progress:
                progress(len(done) + i, len(pts))
        labels = {p.key: p.label for p in pts}
        return {
            "sweep": name,
            "command": spec.command,
            "folder": str(folder),
            "points": len(pts),
            "reused": len(done),
            "recovered": recovered,
            "computed": computed,
            "failed": len(failed),
            "errors": {labels[k]: v for k, v in list(failed.items())[:20]},
            "wall_s": time.perf_counter() - t0,
            "executor": f"dask {dask}" if dask else ("processes" if workers > 1 else "inline"),
            "workers": workers,
        }
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
