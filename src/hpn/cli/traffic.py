"""`hpn traffic`: a synthetic traffic pattern on a fabric, simulated at flow level."""

from __future__ import annotations

import resource
import sys
import time
from typing import Annotated, Any

import numpy as np
import typer

from hpn.cli.fabric_opts import RoutingOpt, fabric_command
from hpn.cli.output import JsonOpt
from hpn.cli.store_opts import OutOpt, PlotOpt, check_out, save
from hpn.config import Model
from hpn.topology import build
from hpn.units import format_duration, parse_size

_PROGRESS_MIN_FLOWS = 20_000


def _progress_bar(total: int):
    """A rich progress bar on stderr, or None when stderr is not a terminal."""
    if not sys.stderr.isatty() or total < _PROGRESS_MIN_FLOWS:
        return None, None
    from rich.progress import Progress

    from hpn.cli.output import stderr

    bar = Progress(console=stderr, transient=True)
    task = bar.add_task("simulating", total=total)
    return bar, lambda done, n: bar.update(task, completed=done)


def run_traffic(
    fabric,
    pattern: str,
    size: float,
    routing: str,
    seed: int,
    endpoints: int | None,
    tables: dict | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Build the pattern, simulate it and summarize (the JSON object of the command).

    ``tables``: a dict to fill with the run's tables (flows, links, tier utilization)."""
    from hpn.engine import simulate
    from hpn.routing import make_router
    from hpn.store.engine_tables import result_tables, sample_interval
    from hpn.workload import make_pattern

    t0 = time.perf_counter()
    dag = make_pattern(pattern, fabric, size, seed=seed, limit=endpoints)
    router = make_router(routing, seed=seed)
    bar, cb = _progress_bar(dag.num_tasks) if show_progress else (None, None)
    interval = sample_interval(fabric, dag) if tables is not None else None
    if bar is not None:
        bar.start()
    try:
        res = simulate(fabric, dag, router, seed=seed, progress=cb, sample_interval=interval)
    finally:
        if bar is not None:
            bar.stop()
    wall = time.perf_counter() - t0
    cap = res.paths.per_flow_min(fabric.links.capacity)
    ideal = 8 * res.size / cap + res.path_latency
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.where(ideal > 0, res.fct / ideal, 1.0)
    used = res.link_bytes > 0
    if tables is not None:
        tables.update(result_tables(fabric, res))
    return {
        "preset": getattr(fabric.spec, "preset", None),
        "pattern": pattern,
        "routing": routing,
        "seed": seed,
        "size_bytes": size,
        "flows": len(res.size),
        "ideal_fct_s": float(np.median(ideal)) if len(ideal) else 0.0,
        "fct_s": res.fct_summary(),
        "fct_over_ideal": {
            "p50": float(np.median(slow)) if len(slow) else 1.0,
            "p99": float(np.percentile(slow, 99)) if len(slow) else 1.0,
        },
        "makespan_s": res.makespan,
        "links_used": int(used.sum()),
        "link_peak_util_max": float(res.link_peak_util.max()) if used.any() else 0.0,
        "link_mean_util_of_used": float(res.link_mean_util[used].mean()) if used.any() else 0.0,
        "rate_computations": res.stats["rate_computations"],
        "wall_s": wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


@fabric_command
def traffic(
    spec: Model,
    pattern: Annotated[
        str, typer.Option(help="permutation, all-to-all, incast or rail-ring.")
    ] = "permutation",
    size: Annotated[str, typer.Option(help="Bytes per flow, e.g. 2MB.")] = "2MB",
    routing: RoutingOpt = "ecmp",
    seed: Annotated[int, typer.Option(help="Seed for the pattern and the routing.")] = 1,
    endpoints: Annotated[
        int | None, typer.Option(help="Use only the first N endpoints (GPUs or hosts).")
    ] = None,
    json_out: JsonOpt = False,
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
) -> None:
    """Simulate a traffic pattern (every GPU NIC, or fat-tree host, sends) at flow level."""
    from hpn.cli.output import emit_json, kv_table, stdout
    from hpn.store.runnable import Outcome

    check_out(out_dir)

    fabric = build(spec)
    tables: dict = {}
    out = run_traffic(
        fabric, pattern, parse_size(size, "--size"), routing, seed, endpoints, tables=tables
    )
    params = {"pattern": pattern, "size": size, "routing": routing, "seed": seed}
    config = {"fabric": fabric.spec.model_dump(mode="json"), "traffic": params}
    config["traffic"]["endpoints"] = endpoints
    save("traffic", Outcome(out, tables, config, out["wall_s"]), out_dir, plot, json_out)
    if json_out:
        emit_json(out)
        return
    d = format_duration
    f = out["fct_s"]
    rows = [
        ("fabric", out["preset"]),
        ("pattern", f"{pattern} ({size} per flow)"),
        ("routing", f"{routing} (seed {seed})"),
        ("flows", out["flows"]),
        ("ideal FCT", d(out["ideal_fct_s"])),
        ("FCT min / p50", f"{d(f['min'])} / {d(f['p50'])}"),
        ("FCT p99 / max", f"{d(f['p99'])} / {d(f['max'])}"),
        (
            "FCT / ideal p50, p99",
            f"{out['fct_over_ideal']['p50']:.2f}, {out['fct_over_ideal']['p99']:.2f}",
        ),
        ("makespan", d(out["makespan_s"])),
        ("links used", out["links_used"]),
        ("mean utilization of used links", f"{out['link_mean_util_of_used']:.1%}"),
        ("wall time", f"{out['wall_s']:.2f} s"),
        ("peak memory", f"{out['peak_rss_mb']:.0f} MB"),
    ]
    stdout.print(kv_table("hpn traffic", rows))


TRAFFIC_DEFAULTS = {
    "pattern": "permutation",
    "size": "2MB",
    "routing": "ecmp",
    "seed": 1,
    "endpoints": None,
}


def run_config(config: dict):
    """Runnable ``traffic``: ``{"fabric": {preset, ...}, "traffic": {pattern, size, ...}}``."""
    from hpn.errors import InputError
    from hpn.store.runnable import Outcome
    from hpn.topology import build, spec_from_table

    spec = spec_from_table(config.get("fabric"))
    params = {**TRAFFIC_DEFAULTS, **(config.get("traffic") or {})}
    unknown = set(params) - set(TRAFFIC_DEFAULTS)
    if unknown:
        raise InputError("traffic", f"unknown field(s) {sorted(unknown)}; {list(TRAFFIC_DEFAULTS)}")
    tables: dict = {}
    out = run_traffic(
        build(spec),
        params["pattern"],
        parse_size(params["size"], "traffic.size"),
        params["routing"],
        int(params["seed"]),
        params["endpoints"],
        tables=tables,
        show_progress=False,
    )
    return Outcome(out, tables, {"fabric": spec.model_dump(mode="json"), "traffic": params})
