"""`hpn collective`: an nccl-tests-style sweep of one collective on a fabric."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hpn.cli.fabric_opts import RoutingOpt, fabric_command
from hpn.cli.output import JsonOpt
from hpn.cli.store_opts import OutOpt, PlotOpt, check_out, save
from hpn.config import Model
from hpn.topology import build
from hpn.units import format_size, parse_duration, parse_size_list

DEFAULTS: dict[str, Any] = {
    "op": "allreduce",
    "gpus": 448,
    "per_host": None,
    "sizes": "1M,4M,16M,64M,256M,1G,4G",
    "algo": None,
    "routing": "ecmp",
    "seed": 1,
    "channels": None,
    "conns": 2,
    "alpha": "2us",
    "jobs": 1,
    "stepwise": False,
}


def run_collective(fabric, params: dict[str, Any]):
    """Simulate the sweep ``params`` describe (see DEFAULTS); returns an Outcome."""
    from hpn.errors import InputError
    from hpn.store.runnable import Outcome
    from hpn.workload.collectives import Params, sweep

    p = {**DEFAULTS, **params}
    unknown = set(p) - set(DEFAULTS)
    if unknown:
        raise InputError("collective", f"unknown field(s) {sorted(unknown)}; {list(DEFAULTS)}")
    if int(p["jobs"]) < 1:
        raise InputError("jobs", f"must be >= 1, got {p['jobs']}")
    knobs = Params(
        channels=p["channels"],
        conns=int(p["conns"]),
        alpha=parse_duration(p["alpha"], "alpha"),
        stepwise=bool(p["stepwise"]),
    )
    out = sweep(
        fabric,
        p["op"],
        parse_size_list(str(p["sizes"]), "--sizes"),
        int(p["gpus"]),
        p["per_host"],
        p["algo"],
        p["routing"],
        int(p["seed"]),
        knobs,
        int(p["jobs"]),
    )
    out["preset"] = getattr(fabric.spec, "preset", None)
    rows = out["results"]
    label = f"{out['preset']} {out['routing']}"
    tables = {
        "busbw": {
            "fabric": [label] * len(rows),
            "size_bytes": [r["size_bytes"] for r in rows],
            "time_s": [r["time_s"] for r in rows],
            "algbw_gbps": [r["algbw_GBps"] for r in rows],
            "busbw_gbps": [r["busbw_GBps"] for r in rows],
        }
    }
    return Outcome(out, tables, {"fabric": fabric.spec.model_dump(mode="json"), "collective": p})


def run_config(config: dict):
    """Runnable ``collective``: ``{"fabric": {preset, ...}, "collective": {op, gpus, ...}}``."""
    from hpn.topology import build, spec_from_table

    spec = spec_from_table(config.get("fabric"))
    return run_collective(build(spec), dict(config.get("collective") or {}))


@fabric_command
def collective(
    spec: Model,
    op: Annotated[
        str,
        typer.Option(
            help="allreduce, allgather, reducescatter, alltoall, multi-allreduce, "
            "sendrecv or broadcast."
        ),
    ] = "allreduce",
    gpus: Annotated[int, typer.Option(help="GPUs in the job.")] = 448,
    per_host: Annotated[
        int | None, typer.Option(help="GPUs per host (default: all of a host).")
    ] = None,
    sizes: Annotated[
        str, typer.Option(help="Sizes as nccl-tests counts them; bare M/G are binary.")
    ] = DEFAULTS["sizes"],
    algo: Annotated[
        str | None,
        typer.Option(help="ring, tree, hd, hier, nvls, direct or pxn (default per op)."),
    ] = None,
    routing: RoutingOpt = "ecmp",
    seed: Annotated[int, typer.Option(help="Seed for the routing.")] = 1,
    channels: Annotated[
        int | None, typer.Option(help="Rings/trees per collective (default: GPUs per host).")
    ] = None,
    conns: Annotated[int, typer.Option(help="Connections (QPs) per GPU pair.")] = 2,
    alpha: Annotated[str, typer.Option(help="Software latency per algorithm step.")] = "2us",
    jobs: Annotated[int, typer.Option(help="Identical jobs at once on consecutive hosts.")] = 1,
    stepwise: Annotated[
        bool, typer.Option("--stepwise", help="One flow per step (validation; small jobs).")
    ] = False,
    json_out: JsonOpt = False,
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
) -> None:
    """Sweep a collective over message sizes, like nccl-tests (algbw and busbw)."""
    from hpn.cli.output import emit_json, stdout

    check_out(out_dir)
    fabric = build(spec)
    params = {
        "op": op,
        "gpus": gpus,
        "per_host": per_host,
        "sizes": sizes,
        "algo": algo,
        "routing": routing,
        "seed": seed,
        "channels": channels,
        "conns": conns,
        "alpha": alpha,
        "jobs": jobs,
        "stepwise": stepwise,
    }
    outcome = run_collective(fabric, params)
    outcome.wall_s = outcome.result["wall_s"]
    save("collective", outcome, out_dir, plot, json_out)
    out = outcome.result
    if json_out:
        emit_json(out)
        return
    stdout.print(
        f"# {out['op']} ({out['algo']}) on {out['preset']}: {out['gpus']} GPUs = "
        f"{out['hosts']} hosts x {out['per_host']}, routing {out['routing']} (seed {seed}), "
        f"jobs {out['jobs']}",
        highlight=False,
    )
    stdout.print(
        f"#{'size':>11} {'time (us)':>12} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}",
        highlight=False,
    )
    for r in out["results"]:
        stdout.print(
            f"{format_size(r['size_bytes']):>12} {r['time_s'] * 1e6:>12.1f} "
            f"{r['algbw_GBps']:>13.2f} {r['busbw_GBps']:>13.2f}",
            highlight=False,
        )
    stdout.print(f"# wall time {out['wall_s']:.2f} s", highlight=False)
