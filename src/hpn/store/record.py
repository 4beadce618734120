"""Recording a run: config, result, tables and plots into a folder, then the index.

A run is written into a hidden staging folder next to its final place (``.NAME.part-PID``)
and renamed into place only when complete, then indexed. So a run folder that exists is
complete (its ``run.json`` says ``done``); a kill at any moment leaves at most a staging
folder, which the next run into the same parent folder removes once its writer is dead. A
complete folder that the index missed (a kill between the rename and the index write) is
indexed on the next look (a sweep's resume, ``--out`` onto it, ``hpn runs reindex``).
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpn.config import dump_toml
from hpn.errors import InputError
from hpn.store.atomic import is_temp, write_json, write_text
from hpn.store.dotted import config_hash, find_key, flatten
from hpn.store.index import Index, index_row
from hpn.store.paths import new_run_dir, root_field, runs_root
from hpn.store.run import CONFIG, META, RESULT, TABLES, Run, read_meta
from hpn.store.tables import write_table

MAX_FIGURES = 40
PART = ".part-"


def key_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The scalar figures of a result (dotted keys, at most ``MAX_FIGURES``)."""
    flat = flatten(result)
    return {k: v for k, v in list(flat.items())[:MAX_FIGURES]}


def check_folder(path: Path, field: str) -> None:
    """Refuse a folder that cannot be created or written (a file in the way, read-only)."""
    if path.exists() and not path.is_dir():
        raise InputError(field, f"{path} is a file, not a folder")
    anc = path
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InputError(field, f"{anc} is a file, so {path} cannot be created")
    if not os.access(anc, os.W_OK | os.X_OK):  # also false on a read-only file system
        why = "read-only file system" if _read_only_fs(anc) else "permission denied"
        raise InputError(field, f"{anc} is not writable ({why})")


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _adopt(root: Path, folder: Path, meta: dict[str, Any]) -> str:
    """Index a complete run folder the index does not know; its id."""
    index = Index(root)
    known = index.rows("path = ?", (str(folder),))
    if known:
        return known[0]["id"]
    return index.upsert(index_row(folder, meta), computed=True)  # computed, never counted


def check_out(out: Path | None, root: Path | None = None, *, overwrite: bool = False) -> None:
    """Refuse, before any work, a store or ``--out`` the run could not be written to.

    The store root must be a writable folder (or creatable); ``--out`` must be new, empty, an
    unfinished run, or (only with ``overwrite``) a finished run.
    """
    root = Path(root) if root else runs_root()
    check_folder(root, root_field())
    if out is None:
        return
    out = Path(out).absolute()
    check_folder(out, "--out")
    if not out.exists():
        return
    meta = read_meta(out)
    if meta is not None and meta.get("status") == "done":
        if overwrite:
            return
        run_id = _adopt(root, out, meta)
        raise InputError(
            "--out", f"{out} already holds run {run_id}; give a new folder or remove that one"
        )
    if meta is None and any(not is_temp(p.name) for p in out.iterdir()):
        raise InputError("--out", f"{out} is a non-empty folder that is not a run folder")


def check_out_file(path: Path, field: str = "--out", suffixes: tuple[str, ...] = ()) -> Path:
    """Refuse, before any work, an output file that cannot be written: a folder in its place,
    a missing or read-only folder above it, or (with ``suffixes``) a name the writer cannot
    make."""
    path = Path(path)
    if path.is_dir():
        raise InputError(field, f"{path} is a folder; give a file name")
    if suffixes and path.suffix.lower() not in suffixes:
        raise InputError(field, f"{path.name}: give a name ending in {', '.join(suffixes)}")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise InputError(field, f"folder {parent} does not exist")
    check_folder(parent, field)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clear_stale(parent: Path, name: str = "*") -> int:
    """Remove staging folders (``.NAME.part-PID``) under ``parent`` whose writer is dead."""
    n = 0
    if not parent.is_dir():
        return 0
    for p in parent.glob(f".{name}{PART}*"):
        pid = p.name.rsplit(PART, 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)
            n += 1
    return n


def record_run(
    command: str,
    config: dict[str, Any],
    result: dict[str, Any],
    tables: dict[str, Any] | None = None,
    *,
    plots: Callable[[Run], object] | None = None,
    out: str | Path | None = None,
    root: Path | None = None,
    wall_s: float | None = None,
    sweep: str | None = None,
    point: str | None = None,
    label: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a finished run and index it; returns its folder.

    ``plots``: draws the run's plots into its folder before it is finished (the CLI, sweeps
    and the dashboard pass :func:`hpn.plots.render_run`; the store does not draw).
    ``overwrite``: replace a finished run at ``out`` (else refused). If anything fails, no run
    folder and no index row are left behind.
    """
    root = Path(root) if root else runs_root()
    folder = Path(out).absolute() if out else new_run_dir(command, root)
    check_out(folder, root, overwrite=overwrite)
    clear_stale(folder.parent)
    stage = folder.parent / f".{folder.name}{PART}{os.getpid()}"
    now = time.time()
    meta: dict[str, Any] = {
        "id": (f"{sweep}-{point}" if sweep else folder.name),
        "command": command,
        "config_hash": config_hash(config),
        "seed": find_key(config, "seed"),
        "status": "done",
        "created": now,
        "wall_s": wall_s,
        "sweep": sweep,
        "point": point,
        "label": label or folder.name,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
    try:
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        write_text(stage / CONFIG, dump_toml(config))
        for name, table in (tables or {}).items():
            write_table(stage / TABLES, name, table)
        write_json(stage / RESULT, result)
        if plots is not None:
            plots(Run(stage))
        meta.update(finished=time.time(), figures=key_figures(result))
        write_json(stage / META, meta)
        row = index_row(folder, meta)
        if folder.exists():  # an unfinished run, an empty folder, or an overwrite
            shutil.rmtree(folder)
        os.rename(stage, folder)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    try:
        Index(root).upsert(row, computed=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder
