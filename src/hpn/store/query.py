"""DuckDB over the store: one view per table name across runs, and a ``runs`` view.

``tables`` views carry a ``run_id`` column; ``runs`` holds the index (one row per run, key
figures as JSON in ``figures``). Example::

    SELECT run_id, avg(fct_s) FROM flows GROUP BY run_id
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hpn.errors import InputError
from hpn.store.index import Index
from hpn.store.paths import runs_root
from hpn.store.run import Run

MAX_ROWS = 10_000  # rows a query returns at most
TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 3600.0
MEMORY = "2GB"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(runs: list[Run] | None = None, root: Path | None = None):
    """An in-memory DuckDB connection with the views described in the module docstring."""
    try:
        import duckdb
    except ImportError:
        raise InputError("duckdb", "not installed; pip install 'hpn[store]'") from None
    import pyarrow as pa

    root = root or runs_root()
    rows = Index(root).rows()
    if runs is None:
        runs = [Run(Path(r["path"])) for r in rows if r["status"] == "done"]
    con = duckdb.connect()
    index = pa.Table.from_pylist(
        [{**r, "figures": json.dumps(r["figures"])} for r in rows]
        or [{"id": "", "command": "", "path": ""}]
    )
    con.register("_index", index)
    con.execute("CREATE VIEW runs AS SELECT * FROM _index WHERE id <> ''")
    by_name: dict[str, list[tuple[str, Path]]] = {}
    for run in runs:
        for name, f in run.tables.items():
            if f.suffix == ".parquet" and _NAME.match(name):
                by_name.setdefault(name, []).append((run.id, f))
    for name, files in by_name.items():
        ids = " ".join(f"WHEN {_lit(str(f))} THEN {_lit(i)}" for i, f in files)
        lst = ", ".join(_lit(str(f)) for _, f in files)
        con.execute(
            f"CREATE VIEW {name} AS SELECT CASE filename {ids} END AS run_id, "
            f"* EXCLUDE (filename) FROM read_parquet([{lst}], filename=true, union_by_name=true)"
        )
    allowed = [str(f) for files in by_name.values() for _, f in files]
    con.execute(f"SET allowed_paths = [{', '.join(_lit(f) for f in allowed)}]")
    con.execute(f"SET memory_limit = {_lit(MEMORY)}")
    con.execute("SET temp_directory = ''")  # past the memory: refused, never spilled to ./.tmp
    con.execute("SET enable_progress_bar = false")
    con.execute("SET enable_external_access = false")  # no other file, no extension, no ATTACH
    con.execute("SET lock_configuration = true")
    return con


def check_read_only(sql: str) -> None:
    """Refuse anything but one SELECT (so no COPY, ATTACH, INSTALL, SET, CREATE ...)."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise InputError("SQL", str(e).splitlines()[0]) from None
    if len(statements) != 1:
        raise InputError("SQL", f"give exactly one SELECT statement, got {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise InputError("SQL", f"only SELECT is allowed (read-only), got {kind.name}")


def query(
    sql: str,
    runs: list[Run] | None = None,
    root: Path | None = None,
    *,
    max_rows: int = MAX_ROWS,
    timeout_s: float = TIMEOUT_S,
) -> dict[str, Any]:
    """Run one read-only SELECT; ``{"columns", "rows", "truncated"}``.

    At most ``max_rows`` rows come back (``truncated`` says whether more matched); a query
    running past ``timeout_s`` is interrupted; DuckDB's memory is capped at ``MEMORY``.
    """
    import threading

    import duckdb

    if not 0.1 <= timeout_s <= MAX_TIMEOUT_S:  # (nan too)
        raise InputError("--timeout", f"give seconds in 0.1..{MAX_TIMEOUT_S:g}, got {timeout_s}")
    check_read_only(sql)
    con = connect(runs, root)
    timer = threading.Timer(timeout_s, con.interrupt)
    timer.start()
    try:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description or []]
        rows = cur.fetchmany(max_rows + 1)
    except duckdb.InterruptException:
        raise InputError("SQL", f"ran past {timeout_s:g} s; narrow the query") from None
    except duckdb.Error as e:
        raise InputError("SQL", str(e).splitlines()[0]) from None
    finally:
        timer.cancel()
        con.close()
    return {
        "columns": cols,
        "rows": [list(r) for r in rows[:max_rows]],
        "truncated": len(rows) > max_rows,
    }


def table_stats(runs: list[Run]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per table name shared by the runs: per run, the row count and numeric column means."""
    con = connect(runs)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    shared = set.intersection(*(set(r.tables) for r in runs)) if runs else set()
    for name in sorted(shared):
        if not _NAME.match(name):
            continue
        cols = con.execute(f"DESCRIBE {name}").fetchall()
        num = [c[0] for c in cols if c[0] != "run_id" and _is_numeric(c[1])]
        aggs = ", ".join(["count(*)"] + [f'avg("{c}")' for c in num])
        res = con.execute(f"SELECT run_id, {aggs} FROM {name} GROUP BY run_id").fetchall()
        out[name] = {
            r[0]: {"rows": r[1], **{f"mean {c}": v for c, v in zip(num, r[2:], strict=True)}}
            for r in res
        }
    return out


def _is_numeric(dtype: str) -> bool:
    d = dtype.upper()
    return any(t in d for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL")) and "[]" not in d
