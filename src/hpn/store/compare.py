"""Comparing runs: config fields that differ, key figures side by side, table summaries."""

from __future__ import annotations

from typing import Any

from hpn.store.dotted import flatten
from hpn.store.run import Run


def compare(runs: list[Run], *, tables: bool = True) -> dict[str, Any]:
    """``{"runs", "config" (differing fields), "figures", "tables"}``; values listed per run."""
    configs = [flatten(r.config, depth=4) for r in runs]
    figures = [flatten(r.result, depth=3) for r in runs]
    keys = list(dict.fromkeys(k for c in configs for k in c))
    config = {k: [c.get(k) for c in configs] for k in keys}
    config = {k: v for k, v in config.items() if len({repr(x) for x in v}) > 1}
    fkeys = list(dict.fromkeys(k for f in figures for k in f))
    figs = {k: [f.get(k) for f in figures] for k in fkeys}
    out: dict[str, Any] = {
        "runs": [{"id": r.id, "command": r.command, "path": str(r.path)} for r in runs],
        "config": config,
        "figures": figs,
        "differing_figures": [k for k, v in figs.items() if len({repr(x) for x in v}) > 1],
    }
    if tables and all(r.tables for r in runs):
        try:
            from hpn.store.query import table_stats

            stats = table_stats(runs)
            out["tables"] = {name: [per.get(r.id) for r in runs] for name, per in stats.items()}
        except ImportError:
            pass
    return out
