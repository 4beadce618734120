"""Bytes per link tier and queue estimates over one training iteration (P Fig 15b/c).

One iteration of the jobs runs on the flow engine as ``hpn train`` runs it, with the
ToR -> Agg links (Agg ingress: the paper's cross-segment traffic) and the Agg -> ToR links
(Agg downlinks) sampled every ``interval`` seconds. The engine's rates are constant between
events, so the sampled rates integrate to each link's bytes (checked against the engine's own
per-link byte count, ``Result.link_bytes``). Averages over ``window`` seconds take the
iterations back to back, as a production job runs them. Where an Agg downlink is saturated,
its queue is DCQCN's fixed point for the flows crossing it then
(:func:`hpn.workload.dcqcn.standing_queue`); unsaturated links queue ~0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind
from hpn.workload.dcqcn import Dcqcn, standing_queue
from hpn.workload.training.config import JobConfig

SATURATED = 1 - 1e-6  # load / capacity at which a link is taken as saturated


@dataclass(frozen=True)
class Traffic:
    """One iteration's Agg-tier traffic and queues (bytes, s, bit/s)."""

    iteration_s: float
    tier_bytes: dict[str, float]  # per link tier and direction ("tor_agg up", ...)
    ingress_bytes: float  # ToR -> Agg bytes in the iteration (the engine's count)
    ingress_sampled_bytes: float  # the same integrated from the samples
    ingress_mean_bps: float  # per iteration, i.e. the long-run average
    ingress_peak_bps: float  # the highest ``window``-second average, iterations back to back
    window_s: float
    queue_max_bytes: float  # the largest Agg-downlink queue estimate in the iteration
    queue_links: int  # Agg downlinks ever saturated
    queue_flows_max: int  # the most flows on one saturated Agg downlink at once

    def to_json(self) -> dict[str, Any]:
        """The fields as a dict."""
        return dict(self.__dict__)


def agg_links(fabric: Fabric) -> tuple[np.ndarray, np.ndarray]:
    """(ToR -> Agg, Agg -> ToR) directed backend links."""
    lk, kind = fabric.links, fabric.nodes.kind
    tier = (lk.tier == LinkTier.TOR_AGG) & (fabric.nodes.network[lk.src] == Network.BACKEND)
    up = np.flatnonzero(tier & (kind[lk.dst] == NodeKind.AGG))
    down = np.flatnonzero(tier & (kind[lk.src] == NodeKind.AGG))
    return up, down


def window_peak(time: np.ndarray, rate: np.ndarray, period: float, window: float) -> float:
    """Highest mean of a piecewise-constant ``rate`` (value from each ``time`` to the next,
    the last to ``period``) over ``window`` seconds, the period repeating back to back.

    Examples
    --------
    >>> window_peak(np.array([0.0, 1.0]), np.array([10.0, 0.0]), 4.0, 2.0)
    5.0
    >>> window_peak(np.array([0.0, 1.0]), np.array([10.0, 0.0]), 4.0, 8.0)  # whole periods
    2.5
    """
    edges = np.append(time, period)
    cum = np.concatenate([[0.0], np.cumsum(rate * np.diff(edges))])
    total = cum[-1]

    def b(t: np.ndarray) -> np.ndarray:  # bytes sent from 0 to t (t may pass the period)
        k, r = np.divmod(t, period)
        return k * total + np.interp(r, edges, cum)

    # a window's mean is piecewise linear in its start: extremes where either end is on an edge
    starts = np.concatenate([edges, (edges - window) % period])
    return float(((b(starts + window) - b(starts)) / window).max())


def observe(
    fabric: Fabric,
    jobs: list[JobConfig],
    routing: str | None = None,
    seed: int = 0,
    interval: float = 0.005,
    window: float = 10.0,
    dcqcn: Dcqcn | None = None,
) -> Traffic:
    """One iteration of ``jobs`` with the Agg tier's bytes and queues observed.

    Parameters
    ----------
    fabric
        The fabric.
    jobs
        The jobs, as for :func:`hpn.workload.training.run.train`.
    routing, seed
        Routing policy (None: the fabric's default) and seed.
    interval
        Seconds between samples of the Agg links (> 0).
    window
        Seconds of the averages (the paper's 10 s).
    dcqcn
        Congestion-control parameters of the queue estimate.

    Returns
    -------
    Traffic
        Bytes per tier, Agg ingress mean and peak rates, Agg downlink queue estimates.
    """
    from hpn.engine import simulate
    from hpn.routing import router_for
    from hpn.workload.training.run import iteration_dag

    d = dcqcn or Dcqcn()
    router = router_for(fabric, routing, seed=seed)
    ctx, _, data = iteration_dag(fabric, jobs, router)  # the DAG `hpn train` runs
    up, down = agg_links(fabric)
    sampled = np.concatenate([up, down])
    res = simulate(
        data,
        ctx.dag,
        router,
        seed=seed,
        sample_interval=interval,
        sample_links=sampled,
    )
    s = res.series
    assert s is not None
    period = res.makespan
    cap = fabric.links.capacity[sampled]  # bit/s
    util = s.links
    keep = s.time < period
    t, util = s.time[keep], util[keep]
    ingress = (util[:, : len(up)] * cap[: len(up)]).sum(axis=1)  # bit/s at each sample
    sampled_bytes = float((ingress * np.diff(np.append(t, period))).sum() / 8)
    lk = fabric.links
    tiers: dict[str, float] = {}
    for tier in (LinkTier.NIC_TOR, LinkTier.TOR_AGG, LinkTier.AGG_CORE):
        m = lk.tier == tier
        for name, sel in (("up", m[0::2]), ("down", m[1::2])):
            idx = np.flatnonzero(sel) * 2 + (name == "down")
            tiers[f"{tier.name.lower()} {name}"] = float(res.link_bytes[idx].sum())
    qmax, qlinks, nmax = _queues(res, t, util[:, len(up) :], down, cap[len(up) :], d)
    return Traffic(
        iteration_s=period,
        tier_bytes=tiers,
        ingress_bytes=float(res.link_bytes[up].sum()),
        ingress_sampled_bytes=sampled_bytes,
        ingress_mean_bps=8 * float(res.link_bytes[up].sum()) / period,
        ingress_peak_bps=window_peak(t, ingress, period, window),
        window_s=window,
        queue_max_bytes=qmax,
        queue_links=qlinks,
        queue_flows_max=nmax,
    )


def _queues(res, t, util, links, cap, d: Dcqcn) -> tuple[float, int, int]:
    """Largest queue estimate over the samples of ``links``, the links ever saturated, and
    the most flows on one of them at once."""
    hot = util >= SATURATED
    if not hot.any():
        return 0.0, 0, 0
    ever = np.flatnonzero(hot.any(axis=0))
    paths = res.paths
    pos = np.full(res.link_bytes.shape[0], -1)
    pos[links[ever]] = np.arange(len(ever))
    flow = np.repeat(np.arange(len(paths.offsets) - 1), np.diff(paths.offsets))
    on = pos[paths.links] >= 0
    f, col = flow[on], pos[paths.links[on]]
    qmax, nmax = 0.0, 0
    cache: dict[tuple[float, int], float] = {}
    for i in np.flatnonzero(hot[:, ever].any(axis=1)):
        live = (res.start[f] <= t[i]) & (t[i] < res.tx_end[f])
        n = np.bincount(col[live], minlength=len(ever))
        for j in np.flatnonzero(hot[i, ever]):
            key = (float(cap[ever[j]]), int(n[j]))
            if key not in cache:
                cache[key] = standing_queue(key[0], key[1], d)
            qmax, nmax = max(qmax, cache[key]), max(nmax, key[1])
    return qmax, len(ever), nmax


__all__ = ["Traffic", "agg_links", "observe", "window_peak"]
