"""Measures of the HPN paper's traffic and queue claims (Fig 14, Fig 15b/c): bytes per link
tier from the flow engine, queues from DCQCN's fixed point on the links it saturates."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from hpn.reproduce.context import Context
from hpn.reproduce.measure import Measured, gain, measure
from hpn.reproduce.measures_hpn import FABRICS, PAPER_NCCL

Jobs = dict[str, dict[str, Any]]
KB = 1000.0


def _fig15_job(jobs: Jobs) -> dict[str, Any]:
    """The Fig 15 job of :func:`hpn.reproduce.measures_hpn.fig15` (LLaMa-13B, TP 8 x DP 288)."""
    job = {**jobs["llama-13b"], "parallel": {"tp": 8, "pp": 1, "dp": 288, "micro_batch": 1}}
    job["parallel"]["global_batch"] = 2304
    job["comm"] = {**job.get("comm", {}), "nccl": PAPER_NCCL}
    return job


@cache
def _traffic(job_json: str) -> dict[str, dict[str, Any]]:
    """Agg-tier traffic and queues of one iteration of the job on each fabric (as ``fig15``
    runs it: DCN+ with 5 pods and ECMP, HPN with its routing, seed 1)."""
    from hpn.topology import build
    from hpn.workload.training.config import JobConfig
    from hpn.workload.training.traffic import observe

    job = JobConfig.model_validate(json.loads(job_json))
    out = {}
    for name, preset, routing in FABRICS:
        fabric = build(preset, pods=5) if preset == "dcn-plus" else build(preset)
        out[name] = observe(fabric, [job], routing, seed=1).to_json()
    return out


def _fig15(jobs: Jobs) -> dict[str, dict[str, Any]]:
    return _traffic(json.dumps(_fig15_job(jobs), sort_keys=True))


def _changes(t: dict[str, dict[str, Any]]) -> tuple[float, float]:
    d, h = t["DCN+"], t["HPN"]
    return (
        gain(h["ingress_mean_bps"], d["ingress_mean_bps"]),
        gain(h["ingress_peak_bps"], d["ingress_peak_bps"]),
    )


def _detail(t: dict[str, dict[str, Any]]) -> str:
    d, h = t["DCN+"], t["HPN"]
    return (
        f"Agg ingress per iteration {d['ingress_bytes'] / 1e12:.3f} -> "
        f"{h['ingress_bytes'] / 1e12:.3f} TB; mean {d['ingress_mean_bps'] / 1e12:.2f} -> "
        f"{h['ingress_mean_bps'] / 1e12:.2f} Tbps, peak {d['window_s']:g} s average "
        f"{d['ingress_peak_bps'] / 1e12:.2f} -> {h['ingress_peak_bps'] / 1e12:.2f} Tbps "
        f"(iteration {d['iteration_s']:.2f} -> {h['iteration_s']:.2f} s)"
    )


@measure("fig15_cross_segment")
def fig15_cross_segment(ctx: Context, jobs: Jobs) -> Measured:
    """Change of the Fig 15 job's mean Agg-ingress (ToR -> Agg) rate, DCN+ -> HPN."""
    t = _fig15(jobs)
    mean, peak = _changes(t)
    return Measured(mean, {"model": [["mean", mean], ["peak", peak]]}, _detail(t))


@measure("fig15_ingress_peak")
def fig15_ingress_peak(ctx: Context, jobs: Jobs) -> Measured:
    """Change of the Fig 15 job's peak 10 s Agg-ingress average, DCN+ -> HPN."""
    t = _fig15(jobs)
    mean, peak = _changes(t)
    return Measured(peak, {"model": [["mean", mean], ["peak", peak]]}, _detail(t))


def _agg_queue(jobs: Jobs, name: str) -> Measured:
    t = _fig15(jobs)
    pts: list[list[Any]] = [[n, round(v["queue_max_bytes"] / KB, 1)] for n, v in t.items()]
    v = t[name]
    detail = (
        f"Agg downlinks saturated: DCN+ {t['DCN+']['queue_links']}, HPN "
        f"{t['HPN']['queue_links']}; most flows on one: {v['queue_flows_max']}"
    )
    return Measured(v["queue_max_bytes"] / KB, {"model": pts}, detail)


@measure("fig15_agg_queue_dcn")
def fig15_agg_queue_dcn(ctx: Context, jobs: Jobs) -> Measured:
    """Largest Agg downlink queue estimate of the Fig 15 job on DCN+, KB."""
    return _agg_queue(jobs, "DCN+")


@measure("fig15_agg_queue_hpn")
def fig15_agg_queue_hpn(ctx: Context, jobs: Jobs) -> Measured:
    """Largest Agg downlink queue estimate of the Fig 15 job on HPN, KB."""
    return _agg_queue(jobs, "HPN")


@cache
def _ports(dual_plane: bool) -> dict[str, Any]:
    """The polarization scenario's ToR-port queues (as ``clos_imbalance`` routes it)."""
    from hpn.topology import build
    from hpn.workload.queues import nic_port_queues

    fabric = build("hpn", segments=2, dual_plane=dual_plane)
    return nic_port_queues(fabric, "ecmp", 1, hashing={"bond_hash": "rr"}).summary()


def _fig14() -> tuple[dict[str, Any], dict[str, Any], list[list[Any]]]:
    one, two = _ports(False), _ports(True)
    pts: list[list[Any]] = [
        ["plain Clos, busier port", round(one["hot_queue_max"] / KB, 2)],
        ["plain Clos, other port", round(one["cold_queue_mean"] / KB, 2)],
        ["dual-plane", round(two["port_queue_mean"] / KB, 2)],
    ]
    return one, two, pts


def _fig14_detail(one: dict[str, Any], two: dict[str, Any]) -> str:
    return (
        f"plain Clos: busiest port {one['hot_flows_max']} connections at "
        f"{one['hot_gbps_max']:g} Gbps, load ratio up to {one['load_ratio_max']:.2f}; "
        f"dual-plane: {two['hot_flows_max']} per port"
    )


@measure("fig14_queue_cut")
def fig14_queue_cut(ctx: Context, jobs: Jobs) -> Measured:
    """Dual-plane's mean ToR-port queue against the plain Clos's busiest port, % change."""
    one, two, pts = _fig14()
    return Measured(
        gain(two["port_queue_mean"], one["hot_queue_max"]), {"model": pts}, _fig14_detail(one, two)
    )


@measure("fig14_queue_polarized")
def fig14_queue_polarized(ctx: Context, jobs: Jobs) -> Measured:
    """Plain Clos: the busiest ToR port's queue toward a NIC, KB."""
    one, two, pts = _fig14()
    return Measured(one["hot_queue_max"] / KB, {"model": pts}, _fig14_detail(one, two))


@measure("fig14_queue_dual")
def fig14_queue_dual(ctx: Context, jobs: Jobs) -> Measured:
    """Dual-plane: the mean ToR-port queue toward a NIC, KB."""
    one, two, pts = _fig14()
    return Measured(two["port_queue_mean"] / KB, {"model": pts}, _fig14_detail(one, two))
