"""`hpn pool ...`: simulate a serving pool, find its goodput, size it for a model mix."""

from __future__ import annotations

import typer

from hpn.cli.output import emit_json, kv_table, stdout
from hpn.cli.store_opts import OutOpt, PlotOpt, check_out, save
from hpn.errors import InputError
from hpn.units import parse_duration

app = typer.Typer(
    help="Serving pool (Aegaeon): simulate policies, goodput, capacity.", no_args_is_help=True
)

POLICY_HELP = "aegaeon | serverless | muxserve | dedicated"


def _slo(ttft: str, tbt: str):
    from hpn.pool.simulate import Slo

    return Slo(parse_duration(ttft, "ttft-slo"), parse_duration(tbt, "tbt-slo"))


def _params(fn, given: dict | None = None, table: str = "pool") -> dict:
    """A command's options (its defaults overridden by ``given``) as a config table."""
    import inspect

    skip = ("json", "out_dir", "plot")
    defaults = {
        k: p.default.default if isinstance(p.default, typer.models.OptionInfo) else p.default
        for k, p in inspect.signature(fn).parameters.items()
        if k not in skip
    }
    unknown = set(given or {}) - set(defaults)
    if unknown:
        raise InputError(table, f"unknown field(s) {sorted(unknown)}; fields: {list(defaults)}")
    return {**defaults, **(given or {})}


def _given(fn, local: dict) -> dict:
    """The values a command was called with, as its config table."""
    return {k: local[k] for k in _params(fn) if k in local}


def _runnable(fn):
    """``run_X(config)``: the command ``fn``'s computation on ``{"pool": {...}}``."""

    def run(config: dict):
        return fn(**_params(fn, config.get("pool")), json=None)

    return run


def _round(d: dict) -> dict:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in d.items()}


@app.command()
def simulate(
    policy: str = typer.Option("aegaeon", help=POLICY_HELP),
    trace: str = typer.Option(None, help="trace file (Aegaeon/Azure CSV) or ServeGen folder"),
    models: int = typer.Option(None, help="synthetic market: number of models"),
    rate: float = typer.Option(0.1, help="synthetic market: req/s per model"),
    duration: str = typer.Option("300s", help="synthetic market / ServeGen window length"),
    zipf: float = typer.Option(None, help="synthetic: Zipf popularity exponent (default uniform)"),
    cv: float = typer.Option(1.0, help="synthetic: inter-arrival CV (1 = Poisson, else Gamma)"),
    trace_models: int = typer.Option(10, help="Azure trace: models to spread requests over"),
    prefill_gpus: int = typer.Option(None, help="prefill partition (aegaeon)"),
    decode_gpus: int = typer.Option(None, help="decode partition (aegaeon)"),
    gpus: int = typer.Option(None, help="GPUs (policies without a split; aegaeon splits 3:5)"),
    gpu: str = typer.Option("h800", help="h20 | h100 | h800 | a100 | a10"),
    ttft_slo: str = typer.Option("10s", help="TTFT SLO"),
    tbt_slo: str = typer.Option("100ms", help="TBT SLO"),
    switch: str = typer.Option("optimized", help="model switch: optimized | unoptimized"),
    seed: int = typer.Option(0, help="random seed (synthetic traces, Azure model assignment)"),
    json: bool = typer.Option(False, "--json", help="one JSON object on stdout"),
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
):
    """Run a trace through a policy and report SLO attainment, TTFT/TBT, switches."""
    from hpn.pool.simulate import simulate as run
    from hpn.store.runnable import Outcome

    params = _given(simulate, locals())
    check_out(out_dir)
    from hpn.pool.traces import detect_format, load_trace, market

    span = parse_duration(duration, "duration")
    if (trace is None) == (models is None):
        raise InputError("trace", "give either --trace FILE or --models M (synthetic market)")
    if trace is not None:
        fmt = detect_format(trace)
        opts = {
            "azure": {"models": trace_models, "seed": seed},
            "servegen": {"duration": span, "seed": seed},
        }.get(fmt, {})
        tr = load_trace(trace, fmt, **opts)
    else:
        tr = market(models, rate, span, seed=seed, zipf=zipf, cv=cv)
    res = run(tr, policy, gpu, gpus, prefill_gpus, decode_gpus, _slo(ttft_slo, tbt_slo), switch)
    out = _round(res.to_dict())
    if json is None:  # run through the registry (sweeps, dashboard)
        return Outcome(out, {}, {"pool": params})
    save("pool simulate", Outcome(out, {}, {"pool": params}), out_dir, plot, json)
    if json:
        emit_json(out)
    else:
        stdout.print(kv_table(f"pool simulate: {res.policy}", list(out.items())))


@app.command()
def goodput(
    policy: str = typer.Option("aegaeon", help=POLICY_HELP),
    rate: float = typer.Option(0.1, help="req/s per model"),
    prefill_gpus: int = typer.Option(None),
    decode_gpus: int = typer.Option(None),
    gpus: int = typer.Option(None),
    gpu: str = typer.Option("h800"),
    duration: str = typer.Option("300s", help="length of each simulated trace"),
    ttft_slo: str = typer.Option("10s"),
    tbt_slo: str = typer.Option("100ms"),
    metric: str = typer.Option("deadline", help="deadline (per-token deadlines) | artifact"),
    switch: str = typer.Option("optimized"),
    seed: int = typer.Option(0),
    json: bool = typer.Option(False, "--json"),
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
):
    """Largest number of models (at --rate each) served with >= 90 % SLO attainment."""
    from hpn.pool.search import goodput as search
    from hpn.store.runnable import Outcome

    params = _given(goodput, locals())
    check_out(out_dir)

    if rate <= 0:
        raise InputError("rate", f"must be > 0, got {rate}")
    out = search(
        policy,
        rate,
        parse_duration(duration, "duration"),
        seed,
        metric=metric,
        gpu=gpu,
        gpus=gpus,
        prefill_gpus=prefill_gpus,
        decode_gpus=decode_gpus,
        slo=_slo(ttft_slo, tbt_slo),
        switch=switch,
    )
    models = [int(k) for k in out["evaluated"]]
    slo = {
        "policy": [policy] * len(models),
        "load": [m * rate for m in models],  # req/s over all models
        "models": models,
        "slo_attainment": [out["evaluated"][str(m)] for m in models],
    }
    outcome = Outcome(out, {"slo": slo}, {"pool": params})
    if json is None:
        return outcome
    save("pool goodput", outcome, out_dir, plot, json)
    if json:
        emit_json(out)
    else:
        rows = [(k, v) for k, v in _round(out).items() if k != "evaluated"]
        stdout.print(kv_table(f"pool goodput: {policy}", rows + [("evaluated", out["evaluated"])]))


@app.command()
def capacity(
    mix: str = typer.Option("production", help="production | mix TOML file"),
    policy: str = typer.Option("aegaeon", help=POLICY_HELP),
    gpu: str = typer.Option(None, help="GPU type (default: the mix's, h20 for production)"),
    duration: str = typer.Option("30min", help="length of the simulated trace"),
    ttft_slo: str = typer.Option("10s"),
    tbt_slo: str = typer.Option("100ms"),
    metric: str = typer.Option("deadline", help="deadline | artifact"),
    seed: int = typer.Option(0),
    json: bool = typer.Option(False, "--json"),
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
):
    """Fewest GPUs that keep every model of a mix at >= 90 % SLO attainment."""
    from hpn.pool.mixes import load_mix
    from hpn.pool.search import capacity as search
    from hpn.store.runnable import Outcome

    params = _given(capacity, locals())
    check_out(out_dir)

    m = load_mix(mix)
    sim = {"slo": _slo(ttft_slo, tbt_slo)}
    if gpu:
        sim["gpu"] = gpu
    out = search(m, policy, parse_duration(duration, "duration"), seed, metric=metric, **sim)
    outcome = Outcome(out, {"groups": out["groups"]}, {"pool": params})
    if json is None:
        return outcome
    save("pool capacity", outcome, out_dir, plot, json)
    if json:
        emit_json(out)
    else:
        rows = [(k, v) for k, v in out.items() if k != "groups"]
        rows += [(f"tp={g['tp']}", _round(g)) for g in out["groups"]]
        stdout.print(kv_table(f"pool capacity: {policy}", rows))


@app.command()
def policies() -> None:
    """List the registered pool policies."""
    from hpn.pool.policies import POLICIES

    for name, cls in POLICIES.items():
        split = " (prefill/decode split)" if cls.split else ""
        print(f"{name:12s} {cls.summary}{split}")


run_simulate = _runnable(simulate)
run_goodput = _runnable(goodput)
run_capacity = _runnable(capacity)
