"""Measures of the Aegaeon paper's claims (SOSP 2025), each from the pool's commands."""

from __future__ import annotations

from typing import Any

from hpn.reproduce.context import Context
from hpn.reproduce.measure import Measured, gain, measure

Jobs = dict[str, dict[str, Any]]
POOL = {"rate": 0.1, "gpu": "h800", "duration": "300s", "seed": 0}  # A §7.1-7.2, 16 GPUs
STRICT = {"ttft_slo": "5s", "tbt_slo": "50ms"}  # A Fig 13, 0.5x


ALL = ("aegaeon", "serverless-artifact", "serverless", "muxserve", "dedicated")


def _compare(ctx: Context, policies: tuple[str, ...] = ALL) -> dict[str, dict[str, Any]]:
    """The rows of ``pool goodput``'s default comparison for ``policies``: each policy's
    search on each accounting, as the comparison runs them (one run each, shared by claims)."""
    out: dict[str, dict[str, Any]] = {}
    for policy in policies:
        runs = {
            m: _goodput(ctx, policy, f"0.1 req/s {m}", metric=m) for m in ("deadline", "artifact")
        }
        dl, art = runs["deadline"], runs["artifact"]
        out[policy] = {
            "policy": policy,
            "max_models": dl["max_models"],
            "max_models_artifact": art["max_models"],
            "evaluated": dl["evaluated"],
            "evaluated_artifact": art["evaluated"],
            "unserved": dl["unserved"],
        }
    return out


def _curves(by: dict[str, dict[str, Any]], key: str = "evaluated") -> dict[str, list[list[Any]]]:
    return {
        pol: [[int(m), a] for m, a in sorted(p[key].items(), key=lambda kv: int(kv[0]))]
        for pol, p in by.items()
        if p.get(key)
    }


def _goodput(ctx: Context, policy: str, label: str, **pool: Any) -> dict[str, Any]:
    cfg = {"pool": {**POOL, "gpus": 16, "policy": policy, **pool}}
    return ctx.run("pool goodput", cfg, f"goodput {policy} {label}")


def _curve(r: dict[str, Any]) -> list[list[Any]]:
    return [[int(m), a] for m, a in sorted(r["evaluated"].items(), key=lambda kv: int(kv[0]))]


@measure("fig11a_aegaeon")
def fig11a_aegaeon(ctx: Context, jobs: Jobs) -> Measured:
    """Aegaeon's most models at >= 90 % (deadline accounting)."""
    by = _compare(ctx)
    return Measured(by["aegaeon"]["max_models"], _curves(by))


@measure("fig11a_aegaeon_artifact")
def fig11a_aegaeon_artifact(ctx: Context, jobs: Jobs) -> Measured:
    """Aegaeon's most models at >= 90 % (the artifact's accounting)."""
    by = _compare(ctx)
    return Measured(by["aegaeon"]["max_models_artifact"], _curves(by, "evaluated_artifact"))


@measure("fig11a_serverless")
def fig11a_serverless(ctx: Context, jobs: Jobs) -> Measured:
    """The paper's ServerlessLLM (serverless-artifact): most models at >= 90 %."""
    by = _compare(ctx)
    sa = by["serverless-artifact"]
    return Measured(
        sa["max_models"], _curves(by), f"artifact accounting: {sa['max_models_artifact']}"
    )


@measure("fig11a_ratio")
def fig11a_ratio(ctx: Context, jobs: Jobs) -> Measured:
    """Aegaeon / serverless-artifact goodput, each accounting."""
    by = _compare(ctx, ("aegaeon", "serverless-artifact"))
    a, s = by["aegaeon"], by["serverless-artifact"]
    dl = a["max_models"] / s["max_models"]
    art = a["max_models_artifact"] / s["max_models_artifact"]
    return Measured(
        round(dl, 3),
        {"model": [["deadline", round(dl, 3)], ["artifact", round(art, 3)]]},
        f"{a['max_models']} / {s['max_models']} (artifact: {a['max_models_artifact']} / "
        f"{s['max_models_artifact']} = {art:.2f}x)",
    )


@measure("fig11a_muxserve")
def fig11a_muxserve(ctx: Context, jobs: Jobs) -> Measured:
    """MuxServe's most models at >= 90 %."""
    by = _compare(ctx)
    m = by["muxserve"]
    left = f"; left unplaced above: {m['unserved']}" if m["unserved"] else ""
    return Measured(m["max_models"], _curves(by), f"placement-bound{left}")


@measure("fig11b_ratio")
def fig11b_ratio(ctx: Context, jobs: Jobs) -> Measured:
    """Aegaeon / serverless-artifact most models at 0.5 req/s per model."""
    a = _goodput(ctx, "aegaeon", "0.5 req/s", rate=0.5)
    s = _goodput(ctx, "serverless-artifact", "0.5 req/s", rate=0.5)
    return Measured(
        round(a["max_models"] / s["max_models"], 3),
        {"aegaeon": _curve(a), "serverless-artifact": _curve(s)},
        f"{a['max_models']} / {s['max_models']} models",
    )


def _strict(ctx: Context, other: str) -> Measured:
    a = _goodput(ctx, "aegaeon", "SLO 0.5x", **STRICT)
    o = _goodput(ctx, other, "SLO 0.5x", **STRICT)
    return Measured(
        round(a["max_models"] / o["max_models"], 3) if o["max_models"] else float("inf"),
        {"aegaeon": _curve(a), other: _curve(o)},
        f"{a['max_models']} / {o['max_models']} models",
    )


@measure("fig13_strict")
def fig13_strict(ctx: Context, jobs: Jobs) -> Measured:
    """Aegaeon / serverless-artifact most models at 5 s / 50 ms."""
    return _strict(ctx, "serverless-artifact")


@measure("fig13_strict_muxserve")
def fig13_strict_muxserve(ctx: Context, jobs: Jobs) -> Measured:
    """Aegaeon / MuxServe most models at 5 s / 50 ms."""
    return _strict(ctx, "muxserve")


@measure("production_gpus")
def production_gpus(ctx: Context, jobs: Jobs) -> Measured:
    """GPUs the production mix needs: Aegaeon vs one instance per model (dedicated)."""
    need = {}
    for policy in ("dedicated", "aegaeon"):
        cfg = {"pool": {"mix": "production", "policy": policy, "duration": "30min"}}
        need[policy] = ctx.run("pool capacity", cfg, f"production mix {policy}")["gpus"]
    saved = -gain(need["aegaeon"], need["dedicated"])
    return Measured(
        round(saved, 2),
        {"model": [["before", need["dedicated"]], ["Aegaeon", need["aegaeon"]]]},
        f"{need['dedicated']} -> {need['aegaeon']} H20 (before = dedicated)",
    )


@measure("switch_reduction")
def switch_reduction(ctx: Context, jobs: Jobs) -> Measured:
    """Scale-up time of Llama-2-13B at TP 2 over PCIe 4.0 (A §5.1), unoptimized vs optimized."""
    from dataclasses import replace

    from hpn.gpus import get_gpu
    from hpn.pool.costs import CostModel  # the pool's one home of switch costs
    from hpn.pool.models import MODELS

    model = replace(MODELS["llama-2-13b"], tp=2)
    times = {}
    for mode in ("unoptimized", "optimized"):
        cm = CostModel(get_gpu("a100"), switch=mode)  # A100: PCIe Gen4 x16
        cm.add("llama-2-13b", model)
        times[mode] = cm.switch_time("llama-2-13b")
    saved = -gain(times["optimized"], times["unoptimized"])
    return Measured(
        round(saved, 2),
        {"model": [[k, round(v, 3)] for k, v in times.items()]},
        f"{times['unoptimized']:.1f} s -> {times['optimized']:.2f} s",
    )
