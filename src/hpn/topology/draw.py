"""A picture of one segment: its hosts, its ToRs and the Aggs above them (matplotlib)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpn.errors import InputError
from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind

PLANE_COLORS = {-1: "#555555", 0: "#1f77b4", 1: "#d62728"}


def _spread(n: int) -> np.ndarray:
    return (np.arange(n) + 0.5) / max(n, 1)


def draw_segment(f: Fabric, path: str | Path, pod: int = 0, segment: int = 0) -> Path:
    """Draw segment ``segment`` of pod ``pod`` to ``path`` (PNG, SVG or PDF by extension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    nd, lk = f.nodes, f.links
    be = nd.network == Network.BACKEND
    ends = np.flatnonzero(
        be
        & np.isin(nd.kind, (NodeKind.GPU, NodeKind.HOST))
        & (nd.pod == pod)
        & (nd.segment == segment)
    )
    if not len(ends):
        raise InputError("segment", f"pod {pod} has no segment {segment}")
    hosts = np.unique(nd.host[ends])
    up = (lk.tier == LinkTier.NIC_TOR) & np.isin(lk.src, ends)
    tors = np.unique(lk.dst[up])
    tors = tors[np.lexsort((nd.plane[tors], nd.rail[tors]))]
    agg_links = (lk.tier == LinkTier.TOR_AGG) & np.isin(lk.src, tors)
    aggs = np.unique(lk.dst[agg_links])
    aggs = aggs[np.lexsort((nd.index[aggs], nd.rail[aggs], nd.plane[aggs]))]

    y = {"host": 0.0, "tor": 1.0, "agg": 2.0}
    hx = dict(zip(hosts.tolist(), _spread(len(hosts)), strict=True))
    tx = dict(zip(tors.tolist(), _spread(len(tors)), strict=True))
    ax_ = dict(zip(aggs.tolist(), _spread(len(aggs)), strict=True))

    fig, ax = plt.subplots(figsize=(14, 6), dpi=110)
    src, dst = lk.src[up], lk.dst[up]
    seg = [
        ((hx[int(nd.host[s])], y["host"]), (tx[int(d)], y["tor"]))
        for s, d in zip(src, dst, strict=True)
    ]
    colors = [PLANE_COLORS.get(int(p), "#555555") for p in lk.port[up]]
    ax.add_collection(LineCollection(seg, colors=colors, linewidths=0.15, alpha=0.5))
    s2, d2 = lk.src[agg_links], lk.dst[agg_links]
    seg2 = [((tx[int(s)], y["tor"]), (ax_[int(d)], y["agg"])) for s, d in zip(s2, d2, strict=True)]
    col2 = [PLANE_COLORS.get(int(nd.plane[s]), "#555555") for s in s2]
    ax.add_collection(LineCollection(seg2, colors=col2, linewidths=0.2, alpha=0.35))

    backup = np.array([bool(nd.backup[ends[nd.host[ends] == h][0]]) for h in hosts])
    hxs = np.array([hx[int(h)] for h in hosts])
    ax.scatter(hxs[~backup], np.zeros((~backup).sum()), s=8, c="#2ca02c", label="host", zorder=3)
    ax.scatter(
        hxs[backup],
        np.zeros(backup.sum()),
        s=14,
        c="#ff7f0e",
        marker="s",
        label="backup host",
        zorder=3,
    )
    for t in tors:
        ax.scatter(
            tx[int(t)],
            y["tor"],
            s=60,
            marker="s",
            zorder=3,
            c=PLANE_COLORS.get(int(nd.plane[t]), "#555555"),
        )
        label = f"r{nd.rail[t]}" if nd.rail[t] >= 0 else f"{nd.index[t]}"
        ax.annotate(label, (tx[int(t)], y["tor"] - 0.09), ha="center", fontsize=6)
    ax.scatter(
        [ax_[int(a)] for a in aggs],
        np.full(len(aggs), y["agg"]),
        s=10,
        marker="^",
        zorder=3,
        c=[PLANE_COLORS.get(int(nd.plane[a]), "#555555") for a in aggs],
    )
    for name, yy in y.items():
        ax.annotate(
            name.upper() if name != "host" else "hosts",
            (-0.02, yy),
            ha="right",
            va="center",
            fontsize=9,
            weight="bold",
        )
    preset = getattr(f.spec, "preset", "imported")
    ax.set_title(
        f"{preset}: pod {pod}, segment {segment} - {len(hosts)} hosts "
        f"({int(backup.sum())} backup), {len(tors)} ToRs, {len(aggs)} Aggs above "
        "(blue: port 0 / plane 1, red: port 1 / plane 2)",
        fontsize=10,
    )
    ax.set_xlim(-0.08, 1.0)
    ax.set_ylim(-0.25, 2.2)
    ax.axis("off")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    path = Path(path)
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp, bbox_inches="tight")
    plt.close(fig)
    tmp.replace(path)
    return path
