"""A picture of one segment: its hosts, its ToRs and the Aggs above them (matplotlib)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpn.errors import InputError
from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind

PLANE_COLORS = {-1: "#555555", 0: "#1f77b4", 1: "#d62728"}


def _colors(planes: np.ndarray) -> list[str]:
    return [PLANE_COLORS.get(int(p), "#555555") for p in planes]


def _spread(n: int) -> np.ndarray:
    return (np.arange(n) + 0.5) / max(n, 1)


def draw_segment(f: Fabric, path: str | Path, pod: int = 0, segment: int = 0) -> Path:
    """Draw segment ``segment`` of pod ``pod`` to ``path`` (PNG, SVG or PDF by extension).

    Parameters
    ----------
    f
        The fabric.
    path
        Output file; its extension picks the format.
    pod, segment
        Which segment to draw.

    Returns
    -------
    Path
        The file written.
    """
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
        pods = int(nd.pod[be].max()) + 1 if be.any() else 0
        if not 0 <= pod < pods:
            raise InputError("pod", f"no pod {pod}: the fabric has pods 0..{pods - 1}")
        raise InputError("segment", f"pod {pod} has no segment {segment}")
    hosts = np.unique(nd.host[ends])
    up = (lk.tier == LinkTier.NIC_TOR) & np.isin(lk.src, ends)
    tors = np.unique(lk.dst[up])
    tors = tors[np.lexsort((nd.plane[tors], nd.rail[tors]))]
    agg_links = (lk.tier == LinkTier.TOR_AGG) & np.isin(lk.src, tors)
    aggs = np.unique(lk.dst[agg_links])
    aggs = aggs[np.lexsort((nd.index[aggs], nd.rail[aggs], nd.plane[aggs]))]

    y = {"host": 0.0, "tor": 1.0, "agg": 2.0}
    x = np.full(f.num_nodes, np.nan)  # x of every drawn switch
    x[tors], x[aggs] = _spread(len(tors)), _spread(len(aggs))
    hx = _spread(len(hosts))[np.searchsorted(hosts, nd.host[ends])]  # per endpoint
    x[ends] = hx

    fig, ax = plt.subplots(figsize=(14, 6), dpi=110)
    for links, (lo, hi), width, alpha, plane in (
        (up, ("host", "tor"), 0.15, 0.5, lk.port[up]),
        (agg_links, ("tor", "agg"), 0.2, 0.35, nd.plane[lk.src[agg_links]]),
    ):
        a, b = x[lk.src[links]], x[lk.dst[links]]
        seg = np.stack([np.c_[a, np.full(len(a), y[lo])], np.c_[b, np.full(len(b), y[hi])]], 1)
        ax.add_collection(
            LineCollection(list(seg), colors=_colors(plane), linewidths=width, alpha=alpha)
        )

    host_x = _spread(len(hosts))
    backup = np.zeros(len(hosts), bool)
    backup[np.searchsorted(hosts, nd.host[ends[nd.backup[ends]]])] = True
    ax.scatter(host_x[~backup], np.zeros((~backup).sum()), s=8, c="#2ca02c", label="host", zorder=3)
    ax.scatter(
        host_x[backup],
        np.zeros(backup.sum()),
        s=14,
        c="#ff7f0e",
        marker="s",
        label="backup host",
        zorder=3,
    )
    ax.scatter(
        x[tors], np.full(len(tors), y["tor"]), s=60, marker="s", zorder=3, c=_colors(nd.plane[tors])
    )
    for t in tors:
        label = f"r{nd.rail[t]}" if nd.rail[t] >= 0 else f"{nd.index[t]}"
        ax.annotate(label, (x[t], y["tor"] - 0.09), ha="center", fontsize=6)
    ax.scatter(
        x[aggs], np.full(len(aggs), y["agg"]), s=10, marker="^", zorder=3, c=_colors(nd.plane[aggs])
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
