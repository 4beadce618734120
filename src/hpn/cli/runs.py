"""`hpn runs list|show|compare|query|reindex`: the run store."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from hpn.cli.lazy import HelpCommand, group
from hpn.cli.output import JsonOpt, emit_json, kv_table, stdout

app = typer.Typer(
    help="The run store: list, show, compare and query runs.", no_args_is_help=True, cls=group({})
)

RunArg = Annotated[str, typer.Argument(help="Run id, id prefix, folder, or 'latest'.")]


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


@app.command("list", cls=HelpCommand)
def list_(
    command: Annotated[str | None, typer.Option(help="Only runs of this command.")] = None,
    sweep: Annotated[str | None, typer.Option(help="Only the points of this sweep.")] = None,
    limit: Annotated[
        int, typer.Option(help="At most this many (newest first); 0: all.", min=0)
    ] = 50,
    json_out: JsonOpt = False,
) -> None:
    """Runs, newest first (ids in full, to paste into `runs show` or `runs compare`)."""
    from rich.table import Table

    from hpn.store import Index, runs_root
    from hpn.store.headline import headline

    where, params = ["1"], []
    if command:
        where.append("command = ?")
        params.append(command)
    if sweep:
        where.append("sweep = ?")
        params.append(sweep)
    index = Index(runs_root())
    cond = " AND ".join(where)
    rows = index.rows(cond, tuple(params), limit=limit or None)
    total = index.count(cond, tuple(params))
    if json_out:
        emit_json({"root": str(runs_root()), "total": total, "shown": len(rows), "runs": rows})
        return
    shown = f"{len(rows)} of {total}" if total > len(rows) else f"{total}"
    t = Table(title=f"{shown} run(s) in {runs_root()}", title_justify="left")
    width = max((len(r["id"]) for r in rows), default=2)
    t.add_column("id", no_wrap=True, min_width=width)  # never cut: ids are pasted
    for col in ("command", "status", "created", "wall (s)", "headline figures"):
        t.add_column(col)
    for r in rows:
        figs = ", ".join(f"{k}={_fmt(v)}" for k, v in headline(r["command"], r["figures"]).items())
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created"]))
        t.add_row(r["id"], r["command"], r["status"], created, _fmt(r["wall_s"]), figs)
    stdout.print(t, soft_wrap=False)


@app.command(cls=HelpCommand)
def show(run: RunArg, json_out: JsonOpt = False) -> None:
    """One run: where it is, its config, its key figures, tables and plots."""
    from hpn.store import open_run
    from hpn.store.dotted import flatten
    from hpn.store.tables import read_table

    r = open_run(run)
    tables = {n: len(next(iter(read_table(p).values()), [])) for n, p in r.tables.items()}
    if json_out:
        emit_json(
            {
                "id": r.id,
                "path": str(r.path),
                "meta": r.meta,
                "config": r.config,
                "result": r.result,
                "tables": tables,
                "plots": [p.name for p in r.plots],
            }
        )
        return
    stdout.print(kv_table(f"run {r.id} ({r.command})", [("folder", str(r.path))]))
    stdout.print(kv_table("config", list(flatten(r.config, depth=4).items())))
    stdout.print(kv_table("result", [(k, _fmt(v)) for k, v in flatten(r.result).items()]))
    if tables:
        stdout.print(kv_table("tables (rows)", list(tables.items())))
    if r.plots:
        stdout.print(kv_table("plots", [(p.name, str(p)) for p in r.plots]))


@app.command(cls=HelpCommand)
def compare(
    runs: Annotated[list[str], typer.Argument(help="Two or more runs.")],
    all_figures: Annotated[bool, typer.Option("--all", help="Also figures that agree.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Config fields that differ, key figures side by side, table summaries (DuckDB)."""
    from rich.table import Table

    from hpn.errors import InputError
    from hpn.store import open_run
    from hpn.store.compare import compare as cmp

    if len(runs) < 2:
        raise InputError("RUNS", "give at least two runs to compare")
    c = cmp([open_run(x) for x in runs])
    if json_out:
        emit_json(c)
        return
    ids = [r["id"] for r in c["runs"]]
    shown = c["figures"] if all_figures else {k: c["figures"][k] for k in c["differing_figures"]}
    for title, rows in (("config (differing)", c["config"]), ("figures", shown)):
        t = Table(title=title, title_justify="left")
        t.add_column("field")
        for i in ids:
            t.add_column(i, justify="right")
        for k, vals in rows.items():
            t.add_row(k, *(_fmt(v) for v in vals))
        stdout.print(t)
    for name, per in c.get("tables", {}).items():
        t = Table(title=f"table {name}", title_justify="left")
        t.add_column("stat")
        for i in ids:
            t.add_column(i, justify="right")
        for k in dict.fromkeys(k for p in per if p for k in p):
            t.add_row(k, *(_fmt((p or {}).get(k)) for p in per))
        stdout.print(t)


@app.command(cls=HelpCommand)
def query(
    sql: Annotated[str, typer.Argument(help="One SQL statement over views runs and TABLE.")],
    timeout: Annotated[float, typer.Option(help="Seconds at most (<= 3600; 10,000 rows).")] = 60,
    json_out: JsonOpt = False,
) -> None:
    """Ad-hoc SQL (DuckDB) over all runs' Parquet tables: one view per table name, with run_id."""
    from rich.table import Table

    from hpn.store.query import query as q

    res = q(sql, timeout_s=timeout)
    if json_out:
        emit_json(res)
        return
    t = Table()
    for c in res["columns"]:
        t.add_column(c)
    for row in res["rows"]:
        t.add_row(*(_fmt(v) for v in row))
    stdout.print(t)


@app.command(cls=HelpCommand)
def reindex() -> None:
    """Add run folders missing from the index; an unreadable index is rebuilt from them."""
    from hpn.store import Index, runs_root

    n, aside = Index(runs_root()).rebuild()
    note = f"the index was unreadable: moved to {aside}\n" if aside else ""
    stdout.print(f"{note}indexed {n} run folder(s) in {runs_root()}", highlight=False)


@app.command(cls=HelpCommand)
def gc() -> None:
    """Remove what killed runs left: staging folders of dead writers, unheld lock files."""
    from hpn.store import Index, claim, runs_root

    stdout.print(claim.report(Index(runs_root()).root), highlight=False)  # (a file: refused)
