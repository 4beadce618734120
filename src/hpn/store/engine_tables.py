"""Tables of a flow-engine ``Result`` for the store: flows, links, tier utilization over time.

Any command that runs the engine (traffic, collective, train, fail) can record these; the
plot kinds ``fct-cdf`` and ``tier-util`` and the fabric explorer's link utilization read them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpn.store.tables import Labels
from hpn.topology.fabric import LinkTier

SAMPLES = 24  # aimed-for utilization samples per run


def sample_interval(fabric: Any, dag: Any) -> float | None:
    """A sampling interval giving ~``SAMPLES`` samples: the busiest endpoint's bytes at its
    slowest NIC rate bound the makespan from below."""
    t = dag.tasks
    if not len(t.size):
        return None
    n = fabric.num_nodes
    load = np.maximum(
        np.bincount(t.src, weights=t.size, minlength=n),
        np.bincount(t.dst, weights=t.size, minlength=n),
    )
    nic = fabric.links.capacity[fabric.links.tier == LinkTier.NIC_TOR]
    rate = float(nic.min()) if len(nic) else float(fabric.links.capacity.min())
    bound = 8 * float(load.max()) / rate
    return bound / SAMPLES if bound > 0 else None


def _tier_names() -> np.ndarray:
    """Lower-case name of every tier, indexed by its code."""
    names = np.full(max(LinkTier) + 1, "", dtype=object)
    for tier in LinkTier:
        names[tier] = tier.name.lower()
    return names.astype(str)


def result_tables(fabric: Any, res: Any) -> dict[str, dict[str, np.ndarray | Labels]]:
    """``flows`` (one row per flow), ``links`` (links that carried bytes), ``tier_util``."""
    used = np.flatnonzero(res.link_bytes > 0)
    tables: dict[str, dict[str, np.ndarray | Labels]] = {
        "flows": {
            "size_bytes": np.asarray(res.size, float),
            "start_s": res.start,
            "finish_s": res.finish,
            "fct_s": res.fct,
        },
        "links": {
            "link_id": used,
            "tier": Labels(fabric.links.tier[used], _tier_names()),
            "bytes": res.link_bytes[used],
            "util_mean": res.link_mean_util[used],
            "util_peak": res.link_peak_util[used],
        },
    }
    s = res.series
    if s is not None and len(s.time):
        present = np.unique(fabric.links.tier)
        cols = [int(c) for c in present if c < s.tier.shape[1]]
        names = np.array([LinkTier(c).name.lower() for c in cols])
        tables["tier_util"] = {
            "time_s": np.repeat(s.time, len(cols)),
            "tier": np.tile(names, len(s.time)),
            "util": s.tier[:, cols].ravel(),
        }
    return tables
