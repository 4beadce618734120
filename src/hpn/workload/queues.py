"""Queues at the two ToR ports toward each NIC in the Fig 13/14 scenario (P §6.1, Fig 14).

The scenario's connections (:func:`hpn.routing.polarization.job_flows`: rail-0 GPUs of two
segments exchanging elephant flows) are routed as ``hpn route polarization`` routes them and
given max-min fair rates (the flow engine's fluid model, :func:`hpn.engine.maxmin.maxmin_rates`)
with every connection backlogged. A ToR -> NIC port the rates saturate holds DCQCN's standing
queue for the connections crossing it (:func:`hpn.workload.dcqcn.standing_queue`); a port
below capacity holds ~0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hpn.topology.fabric import Fabric, LinkTier
from hpn.workload.dcqcn import Dcqcn, standing_queue

SATURATED = 1 - 1e-6  # load / capacity at which a port is taken as saturated


@dataclass(frozen=True)
class PortQueues:
    """Per receiving NIC, its busier and its quieter ToR port (bytes, bit/s, flow counts)."""

    nics: int
    hot_flows: np.ndarray  # connections on the busier port of each NIC
    cold_flows: np.ndarray
    hot_load: np.ndarray  # bit/s
    cold_load: np.ndarray
    hot_queue: np.ndarray  # bytes
    cold_queue: np.ndarray

    def summary(self) -> dict[str, Any]:
        """Means and extremes over the NICs."""
        ratio = self.hot_load / np.where(self.cold_load > 0, self.cold_load, np.nan)
        return {
            "nics": self.nics,
            "hot_queue_max": float(self.hot_queue.max()),
            "hot_queue_mean": float(self.hot_queue.mean()),
            "cold_queue_mean": float(self.cold_queue.mean()),
            "port_queue_mean": float((self.hot_queue + self.cold_queue).mean() / 2),
            "hot_flows_max": int(self.hot_flows.max()),
            "load_ratio_max": float(np.nanmax(ratio)) if np.isfinite(ratio).any() else None,
            "hot_gbps_max": float(self.hot_load.max() / 1e9),
        }


def nic_port_queues(
    fabric: Fabric,
    routing: str = "ecmp",
    seed: int = 1,
    hosts: int = 16,
    senders: int = 2,
    connections: int = 4,
    hashing: dict[str, Any] | None = None,
    dcqcn: Dcqcn | None = None,
) -> PortQueues:
    """Loads, connection counts and DCQCN queue estimates of the ToR ports toward every
    receiving NIC of the polarization scenario.

    Parameters
    ----------
    fabric
        The fabric (two segments at least).
    routing, seed, hosts, senders, connections, hashing
        As for :func:`hpn.routing.polarization.polarization`.
    dcqcn
        Congestion-control parameters.

    Returns
    -------
    PortQueues
        One entry per receiving NIC.
    """
    from hpn.engine.maxmin import incidence_csr, maxmin_rates
    from hpn.routing.base import make_router
    from hpn.routing.ecmp import HashConfig
    from hpn.routing.polarization import job_flows

    src, dst, keys = job_flows(fabric, hosts, senders, connections)
    kw: dict[str, Any] = {"seed": seed}
    if routing in ("ecmp", "hpn"):
        kw["hashing"] = HashConfig.polarized(**(hashing or {}))
    paths = make_router(routing, **kw).route(fabric, src, dst, keys)
    lk = fabric.links
    rows = np.repeat(np.arange(len(src)), np.diff(paths.offsets))
    a = incidence_csr(rows, paths.links, len(src), fabric.num_links)
    rate = maxmin_rates(a, lk.capacity.astype(float))  # bit/s per connection
    load = np.bincount(paths.links, weights=rate[rows], minlength=fabric.num_links)
    count = np.bincount(paths.links, minlength=fabric.num_links)
    receivers = np.unique(dst)
    into = np.flatnonzero((lk.tier == LinkTier.NIC_TOR) & np.isin(lk.dst, receivers))
    port = np.full((fabric.num_nodes, 2), -1)
    port[lk.dst[into], lk.port[into]] = into
    pl = port[receivers]  # (nics, 2) link ids, -1 where a port is missing
    flows = np.where(pl >= 0, count[pl], 0)
    hot = np.argmax(flows, axis=1)
    idx = np.arange(len(receivers))
    hot_l, cold_l = pl[idx, hot], pl[idx, 1 - hot]
    d = dcqcn or Dcqcn()
    cache: dict[tuple[float, int], float] = {}

    def queue(links: np.ndarray) -> np.ndarray:
        out = np.zeros(len(links))
        for i, lid in enumerate(links):
            if lid < 0 or load[lid] < SATURATED * lk.capacity[lid]:
                continue
            key = (float(lk.capacity[lid]), int(count[lid]))
            if key not in cache:
                cache[key] = standing_queue(key[0], key[1], d)
            out[i] = cache[key]
        return out

    def pick(v: np.ndarray, links: np.ndarray) -> np.ndarray:
        return np.where(links >= 0, v[np.maximum(links, 0)], 0)

    return PortQueues(
        nics=len(receivers),
        hot_flows=pick(count, hot_l),
        cold_flows=pick(count, cold_l),
        hot_load=pick(load, hot_l),
        cold_load=pick(load, cold_l),
        hot_queue=queue(hot_l),
        cold_queue=queue(cold_l),
    )


__all__ = ["PortQueues", "nic_port_queues"]
