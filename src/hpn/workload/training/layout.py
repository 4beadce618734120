"""Rank layout of a training job: which GPU holds (tp rank, dp rank, stage)."""

from __future__ import annotations

import numpy as np

from hpn.errors import InputError
from hpn.topology.fabric import Fabric
from hpn.workload.collectives.placement import place


def job_grid(fabric: Fabric, gpus: int, tp: int, pp: int, dp: int, placement) -> np.ndarray:
    """GPU ids shaped (pp, dp, tp): ranks fill hosts in ``placement.order`` (fastest first)."""
    pl = place(fabric, gpus, placement.per_host, placement.first_host)
    flat = pl.ranks
    if placement.order == "tp-dp-pp":
        return flat.reshape(pp, dp, tp)
    if placement.order == "tp-pp-dp":
        return flat.reshape(dp, pp, tp).transpose(1, 0, 2)
    raise InputError("placement.order", f"unknown order {placement.order!r}")


def by_host(fabric: Fabric, gpus: np.ndarray) -> np.ndarray:
    """A collective group's GPUs as (hosts, per host), hosts in first-seen order."""
    gpus = np.asarray(gpus, np.int64)
    host = fabric.nodes.host[gpus]
    _, first, inv, counts = np.unique(
        host, return_index=True, return_inverse=True, return_counts=True
    )
    if (counts != counts[0]).any():
        return gpus.reshape(-1, 1)  # uneven: one rank per row (no in-host phase)
    order = np.lexsort((np.arange(len(gpus)), np.argsort(np.argsort(first))[inv]))
    return gpus[order].reshape(len(counts), counts[0])
