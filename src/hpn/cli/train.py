"""`hpn train`: one iteration of one or more LLM training jobs on a fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hpn.cli.fabric_opts import RoutingOpt, fabric_command
from hpn.cli.output import JsonOpt
from hpn.cli.store_opts import OutOpt, PlotOpt, check_out, save
from hpn.config import Model


def run_config(config: dict):
    """Runnable ``train``: ``{"fabric": {...}, "train": {"routing", "seed"}, "job": [...]}``."""
    from pydantic import ValidationError

    from hpn.config import one_line
    from hpn.errors import InputError
    from hpn.store.runnable import Outcome
    from hpn.topology import build, spec_from_table
    from hpn.workload.training import JobConfig, train

    spec = spec_from_table(config.get("fabric"))
    opts = {"routing": "ecmp", "seed": 1, **(config.get("train") or {})}
    raw = config.get("job") or []
    if not isinstance(raw, list) or not raw:
        raise InputError("job", "expected a list of job tables")
    try:
        jobs = [JobConfig(**j) for j in raw]
    except ValidationError as e:
        raise one_line(e, "job") from None
    result, tables = train(build(spec), jobs, opts["routing"], int(opts["seed"]))
    return Outcome(
        result,
        tables,
        {
            "fabric": spec.model_dump(mode="json"),
            "train": opts,
            "job": [j.model_dump(mode="json") for j in jobs],
        },
    )


@fabric_command
def train(
    spec: Model,
    config: Annotated[Path, typer.Argument(help="Job TOML: one job, or [[job]] tables.")],
    routing: RoutingOpt = "ecmp",
    seed: Annotated[int, typer.Option(help="Seed for the routing.")] = 1,
    json_out: JsonOpt = False,
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
) -> None:
    """Simulate one training iteration (1F1B) and report throughput and where time goes."""
    from hpn.cli.output import emit_json, kv_table, stdout
    from hpn.store.runnable import Outcome
    from hpn.topology import build
    from hpn.units import format_duration
    from hpn.workload.training import load_jobs
    from hpn.workload.training import train as run_train

    check_out(out_dir)
    jobs, _ = load_jobs(config)
    result, tables = run_train(build(spec), jobs, routing, seed)
    cfg: dict[str, Any] = {
        "fabric": spec.model_dump(mode="json"),
        "train": {"routing": routing, "seed": seed},
        "job": [j.model_dump(mode="json") for j in jobs],
    }
    save("train", Outcome(result, tables, cfg, result["wall_s"]), out_dir, plot, json_out)
    if json_out:
        emit_json(result)
        return
    d = format_duration
    for j in result["jobs"]:
        b, par = j["breakdown"], j["parallel"]
        rows = [
            ("fabric", f"{result['preset']} (routing {routing}, seed {seed})"),
            ("GPUs", j["gpus"]),
            ("parallelism", ", ".join(f"{k_}={v}" for k_, v in par.items())),
            ("iteration", d(j["iteration_s"])),
            ("samples/s", f"{j['samples_per_s']:,.1f}"),
            ("tokens/s", f"{j['tokens_per_s']:,.0f}"),
            ("compute only (incl. bubble)", d(b["compute_s"])),
            ("exposed communication", d(b["exposed_comm_s"])),
            (
                "TP / PP / DP / EP in flight",
                " / ".join(d(b[x]) for x in ("tp_s", "pp_s", "dp_s", "ep_s")),
            ),
        ]
        stdout.print(kv_table(f"hpn train: {j['name']}", rows))
    stdout.print(f"{result['flows']:,} flows, wall time {result['wall_s']:.2f} s", highlight=False)
