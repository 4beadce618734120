"""Structure of an imported fabric, read off its wiring: pods, segments, rails, planes, backups.

A SimAI file has node kinds and links only. From them:

- **segment**: the hosts and ToRs joined by NIC-ToR links (a connected component of that
  bipartite graph); numbered within the pod in order of their first GPU id;
- **pod**: the component of hosts, ToRs and Aggs (core links left out);
- **rail**: a ToR whose GPUs all have the same local index serves that rail (rail-optimized);
  a GPU's rail is its ToRs' rail; -1 elsewhere;
- **plane**: a ToR's plane is the NIC port its GPUs reach it on; an Agg's is its ToRs' plane
  when they all share one (dual-plane), else -1;
- **backup hosts**: a ToR's chip is taken as the smallest standard chip (3.2T x 2^k) holding
  its ports; half of it at the downlink speed is the active downlinks (the budget rule of
  ``topology/budget.py``) and the rest serve backup hosts, which are the last hosts of each
  segment by id (the builders' convention). ``backup_hosts_per_segment`` overrides.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from hpn.errors import InputError
from hpn.topology.fabric import LinkTier, NodeKind

_CHIP_UNIT = 3.2e12


def _components(n: int, a: np.ndarray, b: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Component label per node (-1 for nodes outside ``nodes``)."""
    g = sp.coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    _, label = csgraph.connected_components(g, directed=False)
    out = np.full(n, -1, np.int64)
    out[nodes] = label[nodes]
    return out


def _dense_rank(keys: np.ndarray) -> np.ndarray:
    return np.unique(keys, return_inverse=True)[1].ravel().astype(np.int64)


def _rank_within(ids: np.ndarray, groups: list, within: list) -> np.ndarray:
    """Rank of each of ``ids`` within its group (equal ``groups`` keys), by ``within`` keys."""
    if not len(ids):
        return np.zeros(0, np.int64)
    o = np.lexsort([k[ids] for k in reversed(within)] + [k[ids] for k in reversed(groups)])
    grp = np.stack([k[ids][o] for k in groups], axis=1)
    new = np.ones(len(o), bool)
    new[1:] = (grp[1:] != grp[:-1]).any(axis=1)
    start = np.maximum.accumulate(np.where(new, np.arange(len(o)), 0))
    rank = np.empty(len(ids), np.int64)
    rank[o] = np.arange(len(o)) - start
    return rank


def infer_structure(
    n: int,
    kind: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    tier: np.ndarray,
    port: np.ndarray,
    cap: np.ndarray,
    host: np.ndarray,
    index: np.ndarray,
    backup_hosts_per_segment: int | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(node attribute arrays, meta) for links ``a -> b`` (lower tier first).

    Parameters
    ----------
    n
        Number of nodes.
    kind
        Kind of each node.
    a, b
        Endpoints of each physical link, lower tier first.
    tier, port, cap
        Tier, GPU-side port and capacity of each link.
    host, index
        Host and index of each node (-1 where unknown).
    backup_hosts_per_segment
        Backup hosts per segment; None: inferred from the ToRs' spare ports.

    Returns
    -------
    tuple
        ``(attrs, meta)``: pod, segment, rail, plane, index and backup arrays by name, and
        the inferred figures (``family = "hpn"`` for a dual-plane rail-optimized fabric).
    """
    gpu = kind == NodeKind.GPU
    tor, agg = kind == NodeKind.TOR, kind == NodeKind.AGG
    nic = (tier == LinkTier.NIC_TOR) & gpu[a]
    ta = tier == LinkTier.TOR_AGG
    nvl = tier == LinkTier.NVLINK
    pod_nodes = np.flatnonzero(~(kind == NodeKind.CORE))
    # a GPU, its NVSwitch and its ToRs; hosts join through their NVSwitch
    seg = _components(
        n,
        np.concatenate([a[nic], a[nvl]]),
        np.concatenate([b[nic], b[nvl]]),
        np.flatnonzero(gpu | tor | (kind == NodeKind.NVSWITCH)),
    )
    pod = _components(
        n, np.concatenate([a[nic | ta | nvl]]), np.concatenate([b[nic | ta | nvl]]), pod_nodes
    )
    segment = np.full(n, -1, np.int64)
    pod_id = np.full(n, -1, np.int64)
    gids = np.flatnonzero(gpu)
    if len(gids):
        # pods in order of their first GPU; segments within a pod likewise
        first = np.full(n, n, np.int64)
        np.minimum.at(first, pod[gids], gids)
        has = pod >= 0
        pod_id[has] = _dense_rank(first[pod[has]])
        s_first = np.full(n, n, np.int64)
        np.minimum.at(s_first, seg[gids], gids)
        comps = np.unique(seg[gids])
        c_pod = np.zeros(n, np.int64)
        c_pod[seg[gids]] = pod_id[gids]
        rank = np.full(n, -1, np.int64)
        rank[comps] = _rank_within(comps, [c_pod], [s_first])
        in_seg = seg >= 0
        segment[in_seg] = rank[seg[in_seg]]
    segment[agg | (kind == NodeKind.CORE)] = -1
    pod_id[kind == NodeKind.CORE] = -1

    # rails and planes
    rail = np.full(n, -1, np.int64)
    plane = np.full(n, -1, np.int64)
    t_nodes = b[nic]
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, -1, np.int64)
    np.minimum.at(lo, t_nodes, index[a[nic]])
    np.maximum.at(hi, t_nodes, index[a[nic]])
    one_rail = tor & (lo == hi)
    tors_per_seg = np.bincount(segment[tor] + (n + 1) * pod_id[tor]) if tor.any() else None
    rail_opt = (
        bool(one_rail[tor].all()) and tors_per_seg is not None and int(tors_per_seg.max()) > 2
    )
    if rail_opt:
        rail[tor] = lo[tor]
        gr = np.flatnonzero(nic)
        rail[a[gr]] = rail[b[gr]]
    plane[b[nic]] = port[nic]
    ap = np.full(n, np.iinfo(np.int64).max)
    aq = np.full(n, -1, np.int64)
    up = ta & tor[a] & agg[b]
    np.minimum.at(ap, b[up], plane[a[up]])
    np.maximum.at(aq, b[up], plane[a[up]])
    dual = agg & (ap == aq) & (aq >= 0)
    two = len(np.unique(plane[tor])) == 2
    dual_plane = bool(agg.any() and dual[agg].all() and two)
    if dual_plane:
        plane[agg] = aq[agg]

    # switch index: ToRs by (rail, plane, id) within a segment; Aggs by id within (pod, plane)
    idx = index.copy()
    ids = np.arange(n)
    t, g = np.flatnonzero(tor), np.flatnonzero(agg)
    idx[t] = _rank_within(t, [pod_id, segment], [rail, plane, ids])
    idx[g] = _rank_within(g, [pod_id, plane], [ids])
    v = np.flatnonzero(kind == NodeKind.NVSWITCH)
    idx[v] = _rank_within(v, [host], [ids])
    if not len(v) and nic.any():  # single-NIC hosts (a fat tree): index under their ToR
        plane[tor] = -1
        idx[tor] = segment[tor]
        first_tor = np.full(n, -1, np.int64)
        first_tor[a[nic][::-1]] = b[nic][::-1]
        e = np.flatnonzero(gpu & (first_tor >= 0))
        idx[e] = _rank_within(e, [first_tor], [ids])

    # NVSwitches take their GPUs' segment and pod
    nv = np.flatnonzero(nvl & gpu[a])
    segment[b[nv]] = segment[a[nv]]
    pod_id[b[nv]] = pod_id[a[nv]]

    backup = _backups(
        n,
        kind,
        a,
        b,
        nic,
        ta | (tier == LinkTier.AGG_CORE),
        cap,
        host,
        segment,
        pod_id,
        backup_hosts_per_segment,
    )
    nvb = np.flatnonzero(nvl & gpu[a] & backup[a])
    backup[b[nvb]] = True
    meta = _meta(n, kind, a, b, nic, ta, cap, tor, backup)
    if rail_opt and dual_plane:
        meta["family"] = "hpn"
    attrs = {
        "pod": pod_id,
        "segment": segment,
        "rail": rail,
        "plane": plane,
        "index": idx,
        "backup": backup,
    }
    return attrs, meta


def _backups(n, kind, a, b, nic, up_links, cap, host, segment, pod, hint) -> np.ndarray:
    gpu = kind == NodeKind.GPU
    backup = np.zeros(n, bool)
    gids = np.flatnonzero(gpu & (segment >= 0))
    if not len(gids):
        return backup
    seg_key = pod[gids] * (n + 1) + segment[gids]
    if hint is None:
        tor = kind == NodeKind.TOR
        down = np.bincount(b[nic], minlength=n)
        down_cap = np.bincount(b[nic], weights=cap[nic], minlength=n)
        up_cap = np.bincount(a[up_links & tor[a]], weights=cap[up_links & tor[a]], minlength=n)
        t = np.flatnonzero(tor & (down > 0))
        speed = down_cap[t] / down[t]
        chip = _CHIP_UNIT * 2.0 ** np.ceil(np.log2((down_cap[t] + up_cap[t]) / _CHIP_UNIT - 1e-9))
        active = np.minimum(down[t], np.floor(chip / 2 / speed + 1e-9)).astype(np.int64)
        spare = down[t] - active
        hosts_on = np.zeros(n, np.int64)
        pairs = np.unique(np.stack([b[nic], host[a[nic]]]), axis=1)
        np.add.at(hosts_on, pairs[0], 1)
        per_host = down[t] // np.maximum(hosts_on[t], 1)
        per_tor = spare // np.maximum(per_host, 1)
        # a segment's backups: what its ToRs agree on (the smallest, to be safe)
        t_key = pod[t] * (n + 1) + segment[t]
        hint_of: dict[int, int] = {}
        for k, v in zip(t_key.tolist(), per_tor.tolist(), strict=True):
            hint_of[k] = min(v, hint_of.get(k, v))
    for k in np.unique(seg_key):
        hosts = np.unique(host[gids[seg_key == k]])
        count = hint if hint is not None else hint_of.get(int(k), 0)
        if count >= len(hosts):
            raise InputError(
                "--backup-hosts-per-segment",
                f"{count} backup hosts of {len(hosts)} in a segment leave none active",
            )
        if count:
            last = hosts[len(hosts) - count :]
            backup[gids[np.isin(host[gids], last) & (seg_key == k)]] = True
    return backup


def _meta(n, kind, a, b, nic, ta, cap, tor, backup) -> dict[str, Any]:
    """ToR oversubscription (active downlinks : uplinks) of the first ToR."""
    t = np.flatnonzero(tor)
    if not len(t):
        return {}
    t0 = int(t[0])
    into = nic & (b == t0) & ~backup[a]
    out = ta & (a == t0)
    up = float(cap[out].sum())
    return {"tor_oversubscription": float(cap[into].sum()) / up if up else float("inf")}
