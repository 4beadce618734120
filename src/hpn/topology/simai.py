"""The SimAI / ns-3 topology file (aliyun/SimAI ``gen_Topo_Template.py``; see formats.md §1).

Write: GPUs first (one host node per GPU, its ToR links are its NIC ports), then NVSwitches,
then network switches (ToRs plane-major, Aggs plane-major, cores); one link per line. The
frontend network has no place in the format and is left out.
Read: the 6-token SimAI header or the 3-token HPCC header; node ids are kept as in the file;
pods, segments, rails, planes and backup hosts are inferred from the wiring
(:mod:`hpn.topology.infer`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpn.errors import InputError
from hpn.topology.assembly import Assembly
from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind
from hpn.topology.infer import infer_structure
from hpn.units import parse_bandwidth, parse_duration

MAX_BYTES = 2**30  # a SimAI/HPCC topology file's size at most


def _num(x: float) -> str:
    return f"{x:.9f}".rstrip("0").rstrip(".") or "0"


def to_simai(f: Fabric, gpu_type: str = "H800") -> str:
    """The fabric's backend as SimAI topology text.

    Parameters
    ----------
    f
        The fabric.
    gpu_type
        GPU type written in the header.

    Returns
    -------
    str
        The file's text: GPUs first, then NVSwitches, then switches; one line per link.
    """
    nd = f.nodes
    be = nd.network == Network.BACKEND
    kind = nd.kind
    gpus = np.flatnonzero(be & ((kind == NodeKind.GPU) | (kind == NodeKind.HOST)))
    nvs = np.flatnonzero(be & (kind == NodeKind.NVSWITCH))
    sw = np.flatnonzero(be & (kind >= NodeKind.TOR))
    sw = sw[
        np.lexsort((nd.index[sw], nd.rail[sw], nd.segment[sw], nd.pod[sw], nd.plane[sw], kind[sw]))
    ]
    order = np.concatenate([gpus, nvs, sw])
    new_id = np.full(f.num_nodes, -1, np.int64)
    new_id[order] = np.arange(len(order))
    lk = f.links
    phys = np.arange(0, f.num_links, 2)
    keep = phys[(new_id[lk.src[phys]] >= 0) & (new_id[lk.dst[phys]] >= 0)]
    a, b = new_id[lk.src[keep]], new_id[lk.dst[keep]]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    is_host = lo < len(gpus)
    # hosts in id order, each host's NVSwitch link first, then its ToR links by port;
    # then switch-switch links, lower id first
    rank = np.where(lk.tier[keep] == LinkTier.NVLINK, 0, 1 + np.maximum(lk.port[keep], 0))
    idx = np.lexsort((hi, rank, np.where(is_host, lo, len(order) + lo)))
    gps = int(np.bincount(nd.host[gpus]).max()) if len(nvs) else 1
    lines = [
        f"{len(order)} {gps} {len(nvs)} {len(sw)} {len(keep)} {gpu_type}",
        " ".join(str(i) for i in range(len(gpus), len(order))) + " ",
    ]
    caps, lats = lk.capacity[keep], lk.latency[keep]
    for i in idx:
        lines.append(f"{lo[i]} {hi[i]} {_num(caps[i] / 1e9)}Gbps {_num(lats[i] * 1e3)}ms 0")
    return "\n".join(lines) + "\n"


def _bad(path: str, what: str) -> InputError:
    return InputError(path, f"not a SimAI topology file: {what}")


def _parse_column(texts: np.ndarray, parse, field: str) -> np.ndarray:
    """Parse each distinct string once (a file has a handful of rates and latencies)."""
    distinct, inverse = np.unique(texts.astype(str), return_inverse=True)
    return np.array([parse(t, field) for t in distinct], np.float64)[inverse.ravel()]


def read_simai(path: str | Path, backup_hosts_per_segment: int | None = None) -> Fabric:
    """A fabric from a SimAI (or HPCC) topology file; node ids as in the file.

    Parameters
    ----------
    path
        The file.
    backup_hosts_per_segment
        Backup hosts per segment; None: inferred from ToR port counts.

    Returns
    -------
    Fabric
        The fabric (no spec), its structure inferred from the links.

    Raises
    ------
    InputError
        When the file is malformed.
    """
    from hpn.config import read_input

    text = read_input(path, MAX_BYTES)
    first, _, rest = text.partition("\n")
    head = first.split()
    try:
        if len(head) >= 6:
            n, gps, n_nvs, n_sw, n_links = (int(x) for x in head[:5])
            gpu_type = head[5]
        elif len(head) == 3:
            n, n_sw, n_links = (int(x) for x in head)
            gps, n_nvs, gpu_type = 1, 0, ""
        else:
            raise _bad(str(path), f"line 1 has {len(head)} tokens, expected 6 (SimAI) or 3 (HPCC)")
    except ValueError:
        raise _bad(str(path), "line 1 must start with integer counts") from None
    tokens = rest.split()
    need = n_nvs + n_sw + 5 * n_links
    if len(tokens) < need:
        raise _bad(str(path), f"expected {need} tokens after the header, found {len(tokens)}")
    try:
        switch_ids = np.array(tokens[: n_nvs + n_sw], dtype=np.int64)
        body = np.array(tokens[n_nvs + n_sw : need], dtype=object).reshape(n_links, 5)
        src = body[:, 0].astype(np.int64)
        dst = body[:, 1].astype(np.int64)
    except ValueError:
        raise _bad(str(path), "node ids must be integers") from None
    if (switch_ids < 0).any() or (switch_ids >= n).any() or (src >= n).any() or (dst >= n).any():
        raise _bad(str(path), f"a node id is outside 0..{n - 1}")
    cap = _parse_column(body[:, 2], parse_bandwidth, f"{path}: link rate")
    lat = _parse_column(body[:, 3], parse_duration, f"{path}: link latency")

    kind = np.full(n, NodeKind.GPU, np.int64)
    kind[switch_ids[:n_nvs]] = NodeKind.NVSWITCH
    net_sw = switch_ids[n_nvs:]
    kind[net_sw] = NodeKind.CORE
    is_gpu = kind == NodeKind.GPU
    tor = np.zeros(n, bool)
    tor[dst[is_gpu[src]]] = True
    tor[src[is_gpu[dst]]] = True
    tor &= kind == NodeKind.CORE
    kind[tor] = NodeKind.TOR
    agg = np.zeros(n, bool)
    agg[dst[tor[src]]] = True
    agg[src[tor[dst]]] = True
    kind[agg & (kind == NodeKind.CORE)] = NodeKind.AGG

    # orient every link lower tier -> upper tier and number each GPU's ToR links as ports
    rank = np.array([0, 1, 0, 0, 2, 3, 4])[kind]
    flip = rank[src] > rank[dst]
    a, b = np.where(flip, dst, src), np.where(flip, src, dst)
    ka, kb = kind[a], kind[b]
    tier = np.select(
        [kb == NodeKind.NVSWITCH, kb == NodeKind.TOR, kb == NodeKind.AGG],
        [LinkTier.NVLINK, LinkTier.NIC_TOR, LinkTier.TOR_AGG],
        LinkTier.AGG_CORE,
    )
    port = np.full(n_links, -1, np.int64)
    nic = np.flatnonzero((tier == LinkTier.NIC_TOR) & (ka == NodeKind.GPU))
    order = nic[np.argsort(a[nic], kind="stable")]
    run_start = np.searchsorted(a[order], a[order], side="left")
    port[order] = np.arange(len(order)) - run_start
    gpu_ids = np.flatnonzero(is_gpu)
    host = np.full(n, -1, np.int64)
    index = np.full(n, -1, np.int64)
    host[gpu_ids] = gpu_ids // max(gps, 1)
    index[gpu_ids] = gpu_ids % max(gps, 1)
    nv = switch_ids[:n_nvs]
    host[nv] = np.arange(n_nvs)
    nvl = np.flatnonzero(tier == LinkTier.NVLINK)
    host[b[nvl]] = host[a[nvl]]  # an NVSwitch serves its GPUs' host
    attrs, meta = infer_structure(
        n, kind, a, b, tier, port, cap, host, index, backup_hosts_per_segment
    )
    asm = Assembly()
    # keep the file's ids: add nodes one contiguous run of a kind at a time
    runs = np.flatnonzero(np.diff(kind, prepend=-1, append=-1))
    for s_, e_ in zip(runs[:-1], runs[1:], strict=True):
        asm.add_nodes(
            NodeKind(int(kind[s_])),
            int(e_ - s_),
            Network.BACKEND,
            host=host[s_:e_],
            **{k: v[s_:e_] for k, v in attrs.items()},
        )
    for t in np.unique(tier):
        m = tier == t
        for c, lt in sorted({(float(c), float(x)) for c, x in zip(cap[m], lat[m], strict=True)}):
            mm = m & (cap == c) & (lat == lt)
            asm.add_links(a[mm], b[mm], c, lt, LinkTier(int(t)), port=port[mm])
    return asm.fabric(None, {"gpu_type": gpu_type, "source": str(path), **meta})
