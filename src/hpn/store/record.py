"""Recording a run: config, result, tables and plots into a folder, then the index.

A run is written into a hidden staging folder next to its final place (``.NAME.part-PID``)
and renamed into place only when complete, then indexed. So a run folder that exists is
complete (its ``run.json`` says ``done``); a kill at any moment leaves at most a staging
folder, which the next run into the same parent folder (or ``hpn runs gc``) removes once its
writer is dead. One writer per folder (:mod:`hpn.store.claim`): of concurrent runs into one
``--out``, one writes and the others are refused; nothing is deleted before the rename (a
replaced run is moved aside first). A complete folder that the index missed (a kill between
the rename and the index write) is indexed on the next look (a sweep's resume, ``--out`` onto
it, ``hpn runs reindex``). Operating-system errors are one line naming the path; what can be
checked before the compute is (a name too long, no space, read-only, a broken symlink).
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hpn.config import dump_toml
from hpn.errors import InputError, os_error
from hpn.result import RunOutcome
from hpn.store.atomic import is_temp, write_json, write_text
from hpn.store.claim import PART, alive, claim, clear_stale
from hpn.store.dotted import config_hash, find_key, flatten
from hpn.store.index import Index, index_row
from hpn.store.paths import new_run_dir, root_field, runs_root
from hpn.store.run import CONFIG, META, RESULT, TABLES, Run, read_meta
from hpn.store.tables import write_table

MAX_FIGURES = 40
MIN_FREE = 1 << 20  # bytes free on the device below which a write is refused before the work
SUFFIX_ROOM = 32  # bytes a name needs for its staging form (.NAME.part-PID, .NAME.lock)
__all__ = [
    "PART",
    "alive",
    "check_folder",
    "check_out",
    "clear_stale",
    "record_outcome",
    "record_run",
    "reserve_out",
]


def key_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The scalar figures of a result (dotted keys, at most ``MAX_FIGURES``)."""
    flat = flatten(result)
    return {k: v for k, v in list(flat.items())[:MAX_FIGURES]}


def check_folder(path: Path, field: str) -> None:
    """Refuse a folder that cannot be created or written: a file in the way, a broken or
    looping symlink, a name too long, a read-only or full file system, no permission (tried by
    creating and removing a file in the nearest folder that exists)."""
    path = Path(path).absolute()
    try:
        if path.is_symlink() and not path.exists():
            raise InputError(field, f"{path} is a broken or looping symlink")
        if path.exists() and not path.is_dir():
            raise InputError(field, f"{path} is a file, not a folder")
        anc = path
        while not anc.exists() and not anc.is_symlink() and anc != anc.parent:
            anc = anc.parent
        if anc.is_symlink() and not anc.exists():
            raise InputError(field, f"{anc} is a broken or looping symlink")
        if not anc.is_dir():
            raise InputError(field, f"{anc} is a file, so {path} cannot be created")
        _check_names(path, anc, field)
        _probe(anc, path, field)
    except OSError as e:
        raise InputError(field, str(os_error(e, path))) from None


def _check_names(path: Path, anc: Path, field: str) -> None:
    try:
        name_max = os.pathconf(anc, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in path.parts[len(anc.parts) - 1 :]:
        if len(os.fsencode(part)) + SUFFIX_ROOM > name_max:
            room = name_max - SUFFIX_ROOM
            raise InputError(
                field, f"{path}: a name of more than {room} bytes (file name too long)"
            )
    if len(os.fsencode(str(path))) + SUFFIX_ROOM > 4096:
        raise InputError(field, f"{path}: the path is too long (at most 4,000 bytes)")


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _probe(anc: Path, path: Path, field: str) -> None:
    """Whether ``anc`` takes new files, asked without writing (its mtime stays): permission,
    a read-only or virtual file system (``/proc``), free space and inodes."""
    if _read_only_fs(anc) or not os.access(anc, os.W_OK | os.X_OK):
        why = "read-only file system" if _read_only_fs(anc) else "permission denied"
        raise InputError(field, f"{anc} is not writable ({why})")
    try:
        st = os.statvfs(anc)
    except OSError:
        return
    if st.f_blocks == 0:
        raise InputError(field, f"{anc} is not writable (a virtual file system: no files)")
    if st.f_bavail * st.f_frsize < MIN_FREE:
        raise InputError(field, f"{anc}: no space left on the device (under 1 MiB free)")
    if st.f_files and not st.f_favail:
        raise InputError(field, f"{anc}: no space left on the device (no free inodes)")


def resolve_out(out: str | Path) -> Path:
    """``--out`` as an absolute path, a symlink to a folder followed (the run is written where
    it points)."""
    p = Path(out).absolute()
    try:
        if p.is_symlink() and p.is_dir():
            return p.resolve()
    except (OSError, RuntimeError):
        pass
    return p


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
    Index(root).check()  # an unreadable index: said now, not after the compute
    if out is None:
        return
    out = resolve_out(out)
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
    try:
        foreign = meta is None and any(not is_temp(p.name) for p in out.iterdir())
    except OSError as e:
        raise os_error(e, out) from None
    if foreign:
        raise InputError("--out", f"{out} is a non-empty folder that is not a run folder")


@contextmanager
def reserve_out(out: Path | None) -> Iterator[None]:
    """Check ``out`` and hold it from before the compute until the run is saved, so that of
    runs into one folder at once one writes and the others are refused at the start."""
    check_out(out)
    if out is None:
        yield
        return
    folder = resolve_out(out)
    if not folder.parent.is_dir():  # nothing to lock in yet: record_run claims it
        yield
        return
    with claim(folder):
        check_out(out)  # a run that finished while another held it
        yield


def check_out_file(path: Path, field: str = "--out", suffixes: tuple[str, ...] = ()) -> Path:
    """Refuse, before any work, an output file that cannot be written: a folder in its place,
    a missing or read-only folder above it, or (with ``suffixes``) a name the writer cannot
    make."""
    path = Path(path)
    try:
        if path.is_dir():
            raise InputError(field, f"{path} is a folder; give a file name")
        if suffixes and path.suffix.lower() not in suffixes:
            raise InputError(field, f"{path.name}: give a name ending in {', '.join(suffixes)}")
        parent = path.absolute().parent
        if not parent.is_dir():
            raise InputError(field, f"folder {parent} does not exist")
        _check_names(path.absolute(), parent, field)
    except OSError as e:
        raise InputError(field, str(os_error(e, path))) from None
    check_folder(parent, field)
    return path


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
    folder = resolve_out(out) if out else new_run_dir(command, root)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise os_error(e, folder.parent) from None
    with claim(folder):
        check_out(folder, root, overwrite=overwrite)  # again, under the claim
        return _record(
            command, config, result, tables, plots, root, folder, wall_s, sweep, point, label
        )


def record_outcome(
    command: str,
    outcome: RunOutcome,
    config: dict[str, Any] | None = None,
    **kw: Any,
) -> Path:
    """Record a command's outcome (its result's JSON form, tables, resolved config and wall
    time) as a run: :func:`record_run` with the outcome unpacked in one place.

    Parameters
    ----------
    command
        The command's name (``"traffic"``).
    outcome
        What the command's service returned (:class:`hpn.app.base.Outcome`).
    config
        The config given, recorded when the outcome carries no resolved one.
    **kw
        :func:`record_run`'s keyword arguments (``out``, ``root``, ``plots``, ``label``, ...).

    Returns
    -------
    Path
        The run's folder.
    """
    return record_run(
        command,
        outcome.config or config or {},
        outcome.result.to_json(),
        outcome.tables,
        wall_s=outcome.wall_s,
        **kw,
    )


def _record(
    command: str,
    config: dict[str, Any],
    result: dict[str, Any],
    tables: dict[str, Any] | None,
    plots: Callable[[Run], object] | None,
    root: Path,
    folder: Path,
    wall_s: float | None,
    sweep: str | None,
    point: str | None,
    label: str | None,
) -> Path:
    clear_stale(folder.parent)
    stage = folder.parent / f".{folder.name}{PART}{os.getpid()}"
    aside = folder.parent / f".{folder.name}.old{PART}{os.getpid()}"
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
    moved = False
    try:
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        write_text(stage / CONFIG, dump_toml(config))
        for name, table in (tables or {}).items():
            write_table(stage / TABLES, name, table)
        write_json(stage / RESULT, result)
        meta["figures"] = key_figures(result)
        if plots is not None:
            write_json(stage / META, meta)  # first: the plots' titles name the run, not stage
            plots(Run(stage))
        meta["finished"] = time.time()
        write_json(stage / META, meta)
        row = index_row(folder, meta)
        if folder.exists():  # an unfinished run, an empty folder, or an overwrite: moved aside
            os.rename(folder, aside)
            moved = True
        os.rename(stage, folder)
    except BaseException as e:
        if moved and not folder.exists():
            os.rename(aside, folder)
        shutil.rmtree(stage, ignore_errors=True)
        if isinstance(e, OSError):
            raise os_error(e, folder) from None
        raise
    if moved:
        shutil.rmtree(aside, ignore_errors=True)
    try:
        Index(root).upsert(row, computed=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder
