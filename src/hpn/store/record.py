"""Recording a run: config, result, tables and plots into a folder, then the index.

Every file is written atomically; ``run.json`` (status ``done``) is written last, so a folder
without it, or with status ``running``, is an unfinished run that nothing reads as a result.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hpn.config import dump_toml
from hpn.errors import InputError
from hpn.store.atomic import write_json, write_text
from hpn.store.dotted import config_hash, find_key, flatten
from hpn.store.index import Index, index_row
from hpn.store.paths import new_run_dir, runs_root
from hpn.store.run import CONFIG, META, RESULT, TABLES, Run, read_meta
from hpn.store.tables import write_table

MAX_FIGURES = 40


def key_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The scalar figures of a result (dotted keys, at most ``MAX_FIGURES``)."""
    flat = flatten(result)
    return {k: v for k, v in list(flat.items())[:MAX_FIGURES]}


def check_out(out: Path | None) -> None:
    """Refuse an ``--out`` that exists and is something other than a run folder."""
    if out is None or not out.exists():
        return
    if not out.is_dir():
        raise InputError("--out", f"{out} exists and is not a folder")
    if any(out.iterdir()) and read_meta(out) is None:
        raise InputError("--out", f"{out} is a non-empty folder that is not a run folder")


def record_run(
    command: str,
    config: dict[str, Any],
    result: dict[str, Any],
    tables: dict[str, Any] | None = None,
    *,
    plots: bool | Iterable[str] = False,
    out: str | Path | None = None,
    root: Path | None = None,
    wall_s: float | None = None,
    sweep: str | None = None,
    point: str | None = None,
    label: str | None = None,
) -> Path:
    """Write a finished run and index it; returns its folder.

    ``plots``: True for every plot kind the run's tables allow, or a list of kind names.
    """
    root = Path(root) if root else runs_root()
    folder = Path(out).absolute() if out else new_run_dir(command, root)
    check_out(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / META).unlink(missing_ok=True)  # an overwrite is unfinished until run.json is back
    meta: dict[str, Any] = {
        "id": (f"{sweep}-{point}" if sweep else folder.name),
        "command": command,
        "config_hash": config_hash(config),
        "seed": find_key(config, "seed"),
        "status": "running",
        "created": time.time(),
        "wall_s": wall_s,
        "sweep": sweep,
        "point": point,
        "label": label or folder.name,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
    write_json(folder / META, meta)
    write_text(folder / CONFIG, dump_toml(config))
    for name, table in (tables or {}).items():
        write_table(folder / TABLES, name, table)
    write_json(folder / RESULT, result)
    if plots:
        from hpn.plots import render_run

        render_run(Run(folder), None if plots is True else list(plots))
    meta.update(status="done", finished=time.time(), figures=key_figures(result))
    write_json(folder / META, meta)
    meta["id"] = Index(root).upsert(index_row(folder, meta), computed=True)
    return folder
