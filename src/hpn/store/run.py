"""``Run``: one run folder read back (config, result, tables, plots), and finding runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from hpn.errors import InputError
from hpn.store.index import Index
from hpn.store.paths import (
    CONFIG,
    META,
    PLOTS,
    RESULT,
    TABLES,
    read_meta,
    runs_root,  # noqa: I001
)
from hpn.store.tables import read_table, table_files

__all__ = ["CONFIG", "META", "PLOTS", "RESULT", "TABLES", "Run", "open_run", "read_meta"]


@dataclass(frozen=True)
class Run:
    """A finished run folder."""

    path: Path

    @cached_property
    def meta(self) -> dict[str, Any]:
        return read_meta(self.path) or {}

    @property
    def id(self) -> str:
        return self.meta.get("id") or self.path.name

    @property
    def command(self) -> str:
        return self.meta.get("command", "")

    @cached_property
    def config(self) -> dict[str, Any]:
        import tomllib  # (only a run read back pays for its patterns)

        p = self.path / CONFIG
        return tomllib.loads(p.read_text()) if p.exists() else {}

    @cached_property
    def result(self) -> dict[str, Any]:
        p = self.path / RESULT
        return json.loads(p.read_text()) if p.exists() else {}

    @property
    def tables(self) -> dict[str, Path]:
        return table_files(self.path / TABLES)

    def table(self, name: str) -> dict[str, np.ndarray]:
        files = self.tables
        if name not in files:
            raise InputError("table", f"run {self.id} has no table {name!r}")
        return read_table(files[name])

    @property
    def plots(self) -> list[Path]:
        d = self.path / PLOTS
        return sorted(p for p in d.glob("*") if not p.name.startswith(".")) if d.is_dir() else []

    @property
    def label(self) -> str:
        """A short human label: the command and the config fields that tell runs apart."""
        return self.meta.get("label") or self.id


def open_run(ref: str | Path, root: Path | None = None) -> Run:
    """A run by folder path, id, unique id prefix, or ``latest``."""
    root = root or runs_root()
    p = Path(ref)
    try:
        if (p / META).exists():
            return Run(p.absolute())
    except OSError:  # a name too long, a loop: not a folder, so an id
        pass
    idx = Index(root)
    if str(ref) == "latest":
        rows = idx.rows("status = 'done'", limit=1)
    else:
        rows = idx.rows("id = ?", (str(ref),)) or idx.rows("id LIKE ?", (f"{ref}%",))
    if len(rows) > 1:
        names = ", ".join(r["id"] for r in rows[:5])
        raise InputError("RUN", f"{ref!r} matches {len(rows)} runs ({names}, ...); give more")
    if not rows or not (Path(rows[0]["path"]) / META).exists():
        raise InputError("RUN", f"no run {str(ref)!r} in {root} (see `hpn runs list`)")
    return Run(Path(rows[0]["path"]))
