"""``Result``: what a simulation produced, as arrays, with a JSON-ready summary."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from hpn.routing.base import Paths


@dataclass(frozen=True, eq=False)
class Series:
    """Utilization sampled every ``interval`` seconds (rates are constant between events)."""

    time: np.ndarray  # s
    tier: np.ndarray  # (samples, tiers): carried load / capacity of all links of a tier
    links: np.ndarray  # (samples, len(link_ids)): load / capacity
    link_ids: np.ndarray


@dataclass(frozen=True, eq=False)
class Result:
    """Per task, per flow and per link outcomes of one simulation (SI units)."""

    task_start: np.ndarray  # s, per task
    task_finish: np.ndarray  # s, per task
    flow_task: np.ndarray  # task id per flow
    size: np.ndarray  # bytes per flow
    start: np.ndarray  # s, per flow: when it became active
    tx_end: np.ndarray  # s, per flow: last byte sent
    finish: np.ndarray  # s, per flow: last byte delivered (tx_end + path latency)
    path_latency: np.ndarray  # s, per flow
    link_bytes: np.ndarray  # bytes carried per directed link
    link_busy: np.ndarray  # s with a non-zero load
    link_peak_util: np.ndarray  # max load / capacity
    link_capacity: np.ndarray  # bit/s (at the start)
    makespan: float
    series: Series | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    path_source: Paths | Callable[[], Paths] | None = field(default=None, repr=False)

    @cached_property
    def paths(self) -> Paths:
        """Every flow's path as one CSR (built on first use: millions of flows share few
        distinct paths in the engine, not in this form)."""
        src = self.path_source
        return src() if callable(src) else src  # type: ignore[return-value]

    @property
    def fct(self) -> np.ndarray:
        """Flow completion time of every flow, s."""
        return self.finish - self.start

    @property
    def mean_rate(self) -> np.ndarray:
        """Achieved mean rate per flow in bit/s: 8 * size / FCT."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.fct > 0, 8 * self.size / self.fct, np.inf)

    @property
    def link_mean_util(self) -> np.ndarray:
        """Bits carried / (capacity * makespan) per link."""
        if self.makespan <= 0:
            return np.zeros_like(self.link_bytes)
        with np.errstate(divide="ignore", invalid="ignore"):
            u = 8 * self.link_bytes / (self.link_capacity * self.makespan)
        return np.nan_to_num(u)

    def fct_summary(self) -> dict[str, float]:
        """FCT min, p50, p99 and max, s (zeros without flows)."""
        f = self.fct
        if not len(f):
            return {"min": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
        p50, p99 = np.percentile(f, [50, 99])
        return {"min": float(f.min()), "p50": float(p50), "p99": float(p99), "max": float(f.max())}

    def summary(self) -> dict[str, Any]:
        """Flows, tasks, makespan, FCT summary, bytes, link use and engine statistics."""
        used = self.link_bytes > 0
        return {
            "flows": len(self.size),
            "tasks": len(self.task_start),
            "makespan_s": self.makespan,
            "fct_s": self.fct_summary(),
            "bytes": float(self.size.sum()),
            "links_used": int(used.sum()),
            "link_peak_util_max": float(self.link_peak_util.max()) if used.any() else 0.0,
            "link_mean_util_of_used": float(self.link_mean_util[used].mean())
            if used.any()
            else 0.0,
            **{k: v for k, v in self.stats.items()},
        }
