"""`hpn fail` (a job's iterations across injected faults) and `hpn reliability` (Monte Carlo
over months of failures)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from hpn.cli.fabric_opts import RoutingOpt, fabric_command
from hpn.cli.output import JsonOpt
from hpn.cli.store_opts import OutOpt, PlotOpt, check_out, save
from hpn.config import Model

_F = "Failures"
StackedOpt = Annotated[
    bool,
    typer.Option(
        "--stacked", help="Stacked dual-ToR: a ToR fault kills the pair.", rich_help_panel=_F
    ),
]
TimeoutOpt = Annotated[
    str, typer.Option(help="A cut-off longer than this crashes the job.", rich_help_panel=_F)
]
CkptOpt = Annotated[str, typer.Option(help="Checkpoint interval.", rich_help_panel=_F)]
CkptCostOpt = Annotated[str, typer.Option(help="Time to write a checkpoint.", rich_help_panel=_F)]
RestartOpt = Annotated[str, typer.Option(help="Crash to training again.", rich_help_panel=_F)]


def _cfg(model, prefix: str, **kw):
    from pydantic import ValidationError

    from hpn.config import one_line

    try:
        return model(**{k: v for k, v in kw.items() if v is not None})
    except ValidationError as e:
        raise one_line(e, prefix) from None


def fail_outcome(spec, make_iteration: Callable, cfg) -> Any:
    """Run ``hpn fail`` on a fabric spec, ``make_iteration(fabric, router)`` and a FailCfg."""
    from hpn.failures import run_fail
    from hpn.routing import router_for
    from hpn.store.runnable import Outcome
    from hpn.topology import build

    fabric = build(spec)
    router = router_for(fabric, cfg.routing, seed=cfg.seed)
    it = make_iteration(fabric, router)
    result, tables = run_fail(
        fabric,
        it,
        cfg.faults,
        stacked=cfg.stacked,
        routing=cfg.routing,
        seed=cfg.seed,
        recovery=cfg.recovery(cfg.since_checkpoint),
        duration=cfg.duration,
        router=router,
    )
    config = {"fabric": spec.model_dump(mode="json"), "fail": cfg.model_dump(mode="json")}
    return Outcome(result, tables, config, result["wall_s"])


@fabric_command
def fail(
    spec: Model,
    config: Annotated[Path, typer.Argument(help="Job config: a training job or [iteration].")],
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault", help="KIND:key=value,... (repeatable); see docs/guide/failures.md."
        ),
    ] = None,
    stacked: StackedOpt = False,
    routing: RoutingOpt = "ecmp",
    seed: Annotated[int, typer.Option(help="Routing seed.")] = 0,
    timeout: TimeoutOpt = "60s",
    checkpoint_interval: CkptOpt = "3h",
    checkpoint_cost: CkptCostOpt = "100s",
    restart: RestartOpt = "10min",
    since_checkpoint: Annotated[
        str | None, typer.Option(help="Age of the last checkpoint at time 0.", rich_help_panel=_F)
    ] = None,
    duration: Annotated[
        str | None, typer.Option(help="Simulated time (default: past the last repair).")
    ] = None,
    json_out: JsonOpt = False,
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
) -> None:
    """Run a job's iterations across injected faults: throughput, halts, crashes."""
    from hpn.cli.output import emit_json, kv_table, stdout
    from hpn.errors import InputError
    from hpn.failures.config import FailCfg
    from hpn.failures.workload import iteration_from_config

    check_out(out_dir)
    if not fault:
        raise InputError(
            "--fault", "give at least one fault, e.g. link:host=0,nic=0,at=10s,repair=30s"
        )
    cfg = _cfg(
        FailCfg,
        "fail",
        faults=list(fault),
        stacked=stacked,
        routing=routing,
        seed=seed,
        timeout=timeout,
        checkpoint_interval=checkpoint_interval,
        checkpoint_cost=checkpoint_cost,
        restart=restart,
        since_checkpoint=since_checkpoint,
        duration=duration,
    )
    outcome = fail_outcome(spec, lambda fab, r: iteration_from_config(fab, config, r), cfg)
    outcome.config["fail"]["config_file"] = str(config)
    save("fail", outcome, out_dir, plot, json_out)
    r = outcome.result
    if json_out:
        emit_json(r)
        return
    rows = [
        ("fabric / design", f"{r['preset']} / {r['design']}"),
        ("job", f"{r['job']} on {r['gpus']} GPUs"),
        ("faults", "; ".join(f["fault"] for f in r["faults"])),
        ("baseline samples/s", f"{r['baseline_samples_per_s']:.1f}"),
        ("samples/s during fault", f"{r['samples_per_s_during_fault']:.1f}"),
        ("throughput loss", f"{r['throughput_loss']:.2%}"),
        ("halted", f"{r['halted_s']:.1f} s"),
        ("crashed", f"{r['crashed']} ({r['crashes']})"),
        ("lost work", f"{r['lost_work_s']:.0f} s"),
        ("job time lost", f"{r['job_time_lost_s']:.1f} s"),
        (
            "iteration healthy / slowest",
            f"{r['iteration_s']:.3f} / {r['slowest_iteration_s']:.3f} s",
        ),
        ("simulations", r["simulations"]),
    ]
    stdout.print(kv_table("hpn fail", rows))


def run_fail_config(config: dict):
    """Runnable ``fail``: ``{"fabric": {...}, "iteration"|"job": {...}, "fail": {...}}``."""
    from hpn.failures.config import FailCfg
    from hpn.topology import spec_from_table

    spec = spec_from_table(config.get("fabric"))
    cfg = _cfg(FailCfg, "fail", **(config.get("fail") or {}))
    from hpn.failures.workload import iteration_from_dict

    data = {k: config[k] for k in ("iteration", "job") if k in config}
    out = fail_outcome(spec, lambda fab, r: iteration_from_dict(fab, data, r), cfg)
    out.config.update(data)
    return out


# --- reliability ----------------------------------------------------------------------------


def reliability_outcome(spec, cfg, show_progress: bool = False):
    from hpn.failures.montecarlo import exposure, reliability
    from hpn.failures.semantics import design_of
    from hpn.store.runnable import Outcome
    from hpn.topology import build
    from hpn.workload.collectives import place

    fabric = build(spec)
    design = design_of(fabric, cfg.stacked)
    ex = exposure(fabric, place(fabric, cfg.gpus, first_host=cfg.first_host).ranks)
    bar = None
    cb = None
    if show_progress and sys.stderr.isatty():
        from rich.progress import Progress

        from hpn.cli.output import stderr

        bar = Progress(console=stderr, transient=True)
        task = bar.add_task("trials", total=cfg.trials)
        cb = lambda done, n: bar.update(task, completed=done)  # noqa: E731
        bar.start()
    try:
        r = reliability(
            ex,
            design,
            cfg.months,
            cfg.trials,
            cfg.seed,
            cfg.rates(),
            cfg.recovery(),
            cfg.degraded_loss,
            cfg.price,
            cb,
        )
    finally:
        if bar is not None:
            bar.stop()
    r = {"preset": spec.preset, **r}
    config = {"fabric": spec.model_dump(mode="json"), "reliability": cfg.model_dump(mode="json")}
    return Outcome(r, {}, config)


@fabric_command
def reliability(
    spec: Model,
    stacked: StackedOpt = False,
    gpus: Annotated[int, typer.Option(help="GPUs of the job.")] = 3072,
    months: Annotated[float, typer.Option(help="Months of operation per trial.")] = 12.0,
    trials: Annotated[int, typer.Option(help="Monte Carlo trials.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    link_rate: Annotated[
        float, typer.Option(help="Link failures per link-month.", rich_help_panel=_F)
    ] = 0.00057,
    tor_rate: Annotated[
        float, typer.Option(help="ToR failures per ToR-month.", rich_help_panel=_F)
    ] = 0.00051,
    flaps_per_day: Annotated[
        float, typer.Option(help="Flaps per day, cluster-wide.", rich_help_panel=_F)
    ] = 5000.0,
    fleet_links: Annotated[
        float, typer.Option(help="Links the flaps spread over.", rich_help_panel=_F)
    ] = 200_000.0,
    flap_down: Annotated[str, typer.Option(help="Outage per flap.", rich_help_panel=_F)] = "10s",
    link_repair: Annotated[
        str, typer.Option(help="Median link repair time.", rich_help_panel=_F)
    ] = "1h",
    tor_repair: Annotated[
        str, typer.Option(help="Median ToR repair time.", rich_help_panel=_F)
    ] = "2h",
    repair_sigma: Annotated[
        float, typer.Option(help="Lognormal shape of repairs.", rich_help_panel=_F)
    ] = 1.0,
    stacked_pair: Annotated[
        float, typer.Option(help="Share of ToR faults killing a stacked pair.", rich_help_panel=_F)
    ] = 1.0,
    degraded_loss: Annotated[
        float | None, typer.Option(help="Throughput lost on one port.", rich_help_panel=_F)
    ] = None,
    timeout: TimeoutOpt = "60s",
    checkpoint_interval: CkptOpt = "3h",
    checkpoint_cost: CkptCostOpt = "100s",
    restart: RestartOpt = "10min",
    price: Annotated[float | None, typer.Option(help="Price per GPU-hour: adds the cost.")] = None,
    json_out: JsonOpt = False,
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
) -> None:
    """Monte Carlo of failures over months: crashes, degraded hours, goodput loss, cost."""
    from hpn.cli.output import emit_json, kv_table, stdout
    from hpn.failures.config import ReliabilityCfg

    check_out(out_dir)
    kw = dict(locals())
    fields = set(ReliabilityCfg.model_fields)
    cfg = _cfg(ReliabilityCfg, "reliability", **{k: v for k, v in kw.items() if k in fields})
    outcome = reliability_outcome(spec, cfg, show_progress=True)
    save("reliability", outcome, out_dir, plot, json_out)
    r = outcome.result
    if json_out:
        emit_json(r)
        return

    def s(x, unit="", fmt=".3g"):
        return f"{x['mean']:{fmt}}{unit} (p50 {x['p50']:{fmt}}, p99 {x['p99']:{fmt}})"

    rows = [
        ("fabric / design", f"{r['preset']} / {r['design']}"),
        ("job", f"{r['gpus']} GPUs, {r['months']:g} months x {r['trials']} trials"),
        (
            "exposure",
            f"{r['exposure']['nic_tor_links']} NIC-ToR links, {r['exposure']['tors']} ToRs",
        ),
        ("crashes per month", s(r["crashes_per_month"])),
        ("halted hours per month", s(r["halted_hours_per_month"])),
        ("degraded hours per month", s(r["degraded_hours_per_month"])),
        ("goodput loss", s(r["goodput_loss_fraction"])),
        ("GPU-hours lost per month", s(r["gpu_hours_lost_per_month"], fmt=".4g")),
    ]
    if "cost_per_month" in r:
        rows.append(("cost per month", s(r["cost_per_month"], fmt=",.0f")))
    stdout.print(kv_table("hpn reliability", rows))


def run_reliability_config(config: dict):
    """Runnable ``reliability``: ``{"fabric": {...}, "reliability": {...}}``."""
    from hpn.failures.config import ReliabilityCfg
    from hpn.topology import spec_from_table

    spec = spec_from_table(config.get("fabric"))
    cfg = _cfg(ReliabilityCfg, "reliability", **(config.get("reliability") or {}))
    return reliability_outcome(spec, cfg)
