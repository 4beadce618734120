"""Counters and what they show: bytes per directed link from the veth counters, the ToR-port
balance toward each receiving NIC (the keys of ``hpn route polarization``), and the model's
prediction of every link's bytes on the same flows and paths.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from hpn.lab import netns
from hpn.lab.plan import ENDPOINT_KINDS, LabPlan
from hpn.routing.base import Paths
from hpn.topology.fabric import LinkTier, NodeKind


def snapshot(plan: LabPlan) -> np.ndarray:
    """Transmitted bytes per directed link (the counter of the interface it leaves by)."""
    out = np.zeros(plan.fabric.num_links, np.int64)
    for ns, name in enumerate(plan.namespaces):
        stats = netns.link_stats(name)
        for node in plan.nodes_in_ns[ns]:
            for ln in plan.fabric.out_links(node):
                ln = int(ln)
                if ln in plan.ifname and plan.ifname[ln] in stats:
                    out[ln] = stats[plan.ifname[ln]]["tx_bytes"]
    return out


class PortBalance(TypedDict):
    """Balance of the ports toward the receivers (keys as in ``hpn route polarization``; None
    where the fabric has no second port or no load)."""

    receiving_nics: int
    tor_port_load_ratio: float | None
    tor_port_max_share: float | None
    tor_port_mean_share: float | None
    idle_port_nics: int | None
    agg_downlink_max_over_mean: float | None
    agg_downlinks_used: int
    agg_downlinks: int
    tor_uplink_max_over_mean: float | None
    tor_uplinks_used: int
    tor_uplinks: int


class WorstLink(TypedDict):
    """The link where measured and predicted bytes differ most."""

    link: int
    name: str
    measured: int
    model: int


class LinkComparison(TypedDict):
    """Measured vs predicted bytes on the links that carry traffic."""

    links_compared: int
    links_with_traffic_measured: int
    links_with_traffic_model: int
    model_bytes: int
    measured_bytes: int
    max_rel_error: float | None
    mean_rel_error: float | None
    worst_link: WorstLink | None
    nic_links: int


def port_balance(
    plan: LabPlan, load: np.ndarray, receivers: np.ndarray, floor: float = 0.0
) -> PortBalance:
    """Load of the ToR ports toward each receiving NIC and of the Agg downlinks toward the
    receivers' ToRs, with the same keys and definitions as ``hpn route polarization``.
    Loads at or below ``floor`` bytes (control traffic: ARP, BGP keepalives) count as 0."""
    load = np.where(load > floor, load, 0.0)
    f = plan.fabric
    lk, kind = f.links, f.nodes.kind
    into = np.array(
        [
            ln
            for ln in plan.links
            if lk.tier[ln] == LinkTier.NIC_TOR and lk.dst[ln] in set(receivers)
        ],
        np.int64,
    )
    per_port = np.zeros((f.num_nodes, 2))
    if len(into):
        per_port[lk.dst[into], lk.port[into]] = load[into]
    pp = per_port[receivers]
    dual = bool(len(into)) and len(into) >= 2 * len(receivers)
    hi, lo = pp.max(axis=1), pp.min(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(lo > 0, hi / np.where(lo > 0, lo, 1), np.inf)
        share = hi / pp.sum(axis=1)
    job_tors = np.unique(lk.src[into]) if len(into) else np.zeros(0, np.int64)
    down = np.array(
        [
            ln
            for ln in plan.links
            if lk.tier[ln] == LinkTier.TOR_AGG
            and kind[lk.src[ln]] == NodeKind.AGG
            and lk.dst[ln] in set(job_tors.tolist())
        ],
        np.int64,
    )
    dl = load[down] if len(down) else np.zeros(0)
    # ToR uplinks of the ToRs that sent (carried bytes up)
    up = np.array(
        [
            ln
            for ln in plan.links
            if lk.tier[ln] == LinkTier.TOR_AGG and kind[lk.src[ln]] == NodeKind.TOR
        ],
        np.int64,
    )
    senders = set(lk.src[up[load[up] > 0]].tolist()) if len(up) else set()
    ul = np.array([load[ln] for ln in up if lk.src[ln] in senders]) if senders else np.zeros(0)
    worst = float(ratio.max()) if dual and len(ratio) else float("nan")
    return PortBalance(
        receiving_nics=int(len(receivers)),
        tor_port_load_ratio=None if not np.isfinite(worst) else round(worst, 4),
        tor_port_max_share=round(float(np.nanmax(share)), 4) if dual else None,
        tor_port_mean_share=round(float(np.nanmean(share)), 4) if dual else None,
        idle_port_nics=int(np.count_nonzero(lo == 0)) if dual else None,
        agg_downlink_max_over_mean=round(float(dl.max() / dl.mean()), 4) if dl.sum() else None,
        agg_downlinks_used=int(np.count_nonzero(dl)),
        agg_downlinks=int(len(dl)),
        tor_uplink_max_over_mean=round(float(ul.max() / ul.mean()), 4) if ul.sum() else None,
        tor_uplinks_used=int(np.count_nonzero(ul)),
        tor_uplinks=int(len(ul)),
    )


def model_link_bytes(
    plan: LabPlan,
    src: np.ndarray,
    dst: np.ndarray,
    nbytes: np.ndarray,
    paths: Paths,
    routed: np.ndarray | None = None,
) -> np.ndarray:
    """Bytes per directed link the flow simulator predicts for these flows on these paths
    (``routed``: the flows whose path reaches their destination; others are left out)."""
    from hpn.engine import simulate
    from hpn.engine.dag import FlowDAG

    keep = paths.lengths > 0 if routed is None else np.asarray(routed, bool)
    dag = FlowDAG()
    idx = np.flatnonzero(keep)
    if not len(idx):
        return np.zeros(plan.fabric.num_links)
    dag.add_flows(src[idx], dst[idx], nbytes[idx].astype(float), paths=paths.take(idx))
    return simulate(plan.fabric, dag, "ecmp").link_bytes


def compare_links(
    plan: LabPlan, measured: np.ndarray, model: np.ndarray, floor: float = 20_000
) -> LinkComparison:
    """Measured vs predicted bytes on the links that carry traffic (either says so; measured
    bytes at or below ``floor`` are control traffic)."""
    links = np.asarray(plan.links, np.int64)
    f = plan.fabric
    data = links[(model[links] > 0) | (measured[links] > floor)]
    m, p = measured[data].astype(float), model[data]
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.where(p > 0, np.abs(m - p) / p, np.inf)
    worst = int(np.argmax(err)) if len(err) else -1
    nic = np.isin(f.nodes.kind[f.links.src[data]], ENDPOINT_KINDS) | np.isin(
        f.nodes.kind[f.links.dst[data]], ENDPOINT_KINDS
    )
    return LinkComparison(
        links_compared=int(len(data)),
        links_with_traffic_measured=int(np.count_nonzero(m > floor)),
        links_with_traffic_model=int(np.count_nonzero(p > 0)),
        model_bytes=int(p.sum()),
        measured_bytes=int(m.sum()),
        max_rel_error=None if not len(err) else round(float(err.max()), 4),
        mean_rel_error=None if not len(err) else round(float(np.mean(err)), 4),
        worst_link=None
        if worst < 0
        else WorstLink(
            link=int(data[worst]),
            name=f"{f.node_name(int(f.links.src[data[worst]]))}->"
            f"{f.node_name(int(f.links.dst[data[worst]]))}",
            measured=int(m[worst]),
            model=int(p[worst]),
        ),
        nic_links=int(nic.sum()),
    )


def control_floor(flow_wire_bytes: np.ndarray) -> float:
    """Bytes below which a link's count is control traffic, not flows: half the smallest
    flow's bytes (every link a flow crosses carries all of them)."""
    sent = flow_wire_bytes[flow_wire_bytes > 0]
    return 0.5 * float(sent.min()) if len(sent) else 0.0
