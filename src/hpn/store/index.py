"""The SQLite index of all runs (WAL mode, so sweep workers and the dashboard share it).

Run folders are the truth (each holds a ``run.json``); the index makes listing and finding
them fast and can be rebuilt from the folders with :func:`Index.reindex` (``hpn runs
reindex``, which also replaces an index that is not a readable SQLite file). An index that
cannot be read is one line naming it; one the first write could not finish (a full disk) is
removed again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hpn.errors import InputError, os_error
from hpn.store.paths import INDEX

REBUILD = "run `hpn runs reindex` to rebuild it from the run folders"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    command TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    seed INTEGER,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    wall_s REAL,
    figures TEXT NOT NULL DEFAULT '{}',
    sweep TEXT,
    point TEXT,
    computed INTEGER NOT NULL DEFAULT 0,
    error TEXT
);
CREATE INDEX IF NOT EXISTS runs_sweep ON runs (sweep, point);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created);
"""

COLUMNS = [
    "id",
    "path",
    "command",
    "config_hash",
    "seed",
    "status",
    "created",
    "finished",
    "wall_s",
    "figures",
    "sweep",
    "point",
    "computed",
    "error",
]


class Index:
    """A handle on ``ROOT/index.sqlite``; every method opens a short transaction."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.path = self.root / INDEX
        if self.root.exists() and not self.root.is_dir():
            from hpn.store.paths import root_field

            raise InputError(root_field(), f"{self.root} is a file, not a folder")

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise os_error(e, self.root) from None
        if self.path.is_dir():
            raise InputError(str(self.path), f"is a folder, not a run index; {REBUILD}")
        new = not self.path.exists()
        con = None
        try:
            con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA busy_timeout=60000")
            con.executescript(_SCHEMA)
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as e:
            if con is not None:
                con.close()
            if new:  # nothing was in it: leave nothing behind
                self._remove_files()
                raise InputError(str(self.path), f"cannot be created ({e})") from None
            raise InputError(
                str(self.path), f"is not a readable run index ({e}); {REBUILD}"
            ) from None
        try:
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as e:
            raise InputError(str(self.path), f"cannot be written ({e})") from None
        finally:
            con.close()

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def check(self) -> None:
        """InputError if the index exists and cannot be read (before any work is done)."""
        if self.path.exists() or self.path.is_symlink():
            self.count()

    def rebuild(self) -> tuple[int, Path | None]:
        """Index every run folder afresh; an unreadable index is moved aside first. Returns
        (runs indexed, where the unreadable one went or None)."""
        aside = None
        try:
            self.check()
        except InputError:
            aside = self.path.with_name(f"{INDEX}.corrupt-{int(time.time())}")
            try:
                if self.path.is_dir():
                    self.path.rename(aside)
                else:
                    os.replace(self.path, aside)
            except OSError as e:
                raise os_error(e, self.path) from None
            for suffix in ("-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        return self.reindex(), aside

    def upsert(self, row: dict[str, Any], *, computed: bool = False) -> str:
        """Insert or update a run (keyed by path); returns its id. ``computed`` counts a result."""
        row = dict(row)
        row["figures"] = json.dumps(row.get("figures") or {}, sort_keys=True)
        path = str(row["path"])
        with self._db() as con:
            old = con.execute("SELECT id FROM runs WHERE path = ?", (path,)).fetchone()
            if old:
                row["id"] = old[0]
            else:
                base, n = row["id"], 1
                while con.execute("SELECT 1 FROM runs WHERE id = ?", (row["id"],)).fetchone():
                    n += 1
                    row["id"] = f"{base}-{n}"
            cols = [c for c in COLUMNS if c in row and c != "computed"]
            sets = ", ".join(f"{c} = excluded.{c}" for c in cols if c != "id")
            inc = ", computed = computed + excluded.computed" if computed else ""
            con.execute(
                f"INSERT INTO runs ({', '.join(cols)}, computed) "
                f"VALUES ({', '.join('?' for _ in cols)}, ?) "
                f"ON CONFLICT(id) DO UPDATE SET {sets}{inc}",
                [row[c] for c in cols] + [int(computed)],
            )
        return row["id"]

    def set_status(self, run_id: str, status: str, error: str | None = None) -> None:
        with self._db() as con:
            con.execute(
                "UPDATE runs SET status = ?, error = ?, finished = ? WHERE id = ?",
                (status, error, time.time(), run_id),
            )

    def rows(
        self,
        where: str = "1",
        params: tuple[Any, ...] = (),
        *,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Runs matching a SQL condition (parameters bound, never formatted in), newest first."""
        sql = f"SELECT {', '.join(COLUMNS)} FROM runs WHERE {where} ORDER BY created DESC, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        if not self.path.exists() and not self.path.is_symlink():
            return []
        with self._db() as con:
            out = [dict(zip(COLUMNS, r, strict=True)) for r in con.execute(sql, params)]
        for r in out:
            r["figures"] = json.loads(r["figures"] or "{}")
        return out

    def count(self, where: str = "1", params: tuple[Any, ...] = ()) -> int:
        """How many runs match a SQL condition (parameters bound)."""
        if not self.path.exists() and not self.path.is_symlink():
            return 0
        with self._db() as con:
            (n,) = con.execute(f"SELECT count(*) FROM runs WHERE {where}", params).fetchone()
        return int(n)

    def get(self, run_id: str) -> dict[str, Any] | None:
        found = self.rows("id = ?", (run_id,))
        return found[0] if found else None

    def done_points(self, sweep: str) -> dict[str, dict[str, Any]]:
        """Completed points of a sweep, by point key."""
        rows = self.rows("sweep = ? AND status = 'done'", (sweep,))
        return {r["point"]: r for r in rows}

    def reindex(self) -> int:
        """Add every run folder under the root that holds a finished ``run.json``."""
        from hpn.store.paths import read_meta

        n = 0
        for meta_path in sorted(self.root.rglob("run.json")):
            rel = meta_path.parent.relative_to(self.root)
            if any(part.startswith(".") for part in rel.parts):
                continue  # a staging folder: not a run until renamed into place
            meta = read_meta(meta_path.parent)
            if meta is not None and meta.get("status") == "done":
                known = self.rows("path = ?", (str(meta_path.parent),))
                if not known:
                    self.upsert(index_row(meta_path.parent, meta))
                    n += 1
        return n


_INT64 = 2**63


def _sql_int(v: Any) -> int | None:
    """An integer SQLite can hold, else None (the run folder keeps the exact value)."""
    if isinstance(v, int) and not isinstance(v, bool) and -_INT64 <= v < _INT64:
        return v
    return None


def index_row(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The index row of a run folder from its ``run.json``."""
    row = {"path": str(path), **{k: meta.get(k) for k in COLUMNS if k not in ("path",)}}
    return row | {"id": meta.get("id") or path.name, "seed": _sql_int(meta.get("seed"))}
