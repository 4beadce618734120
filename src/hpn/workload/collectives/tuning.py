"""NCCL's tuning model: per (operation, algorithm, protocol) a latency and a bandwidth, the
time ``latency + bytes / bandwidth``, and the choice of the fastest enabled pair.

Ported from NCCL 2.30.7 (NVIDIA/nccl at 5067397c; 2.18.3, the paper's release, in
:mod:`.tuning218` and :mod:`.versions`, chosen by ``Comm.nccl``): constants and formulas of
``src/graph/tuning.cc`` (``ncclTopoTuneModel`` lines 243-438, ``ncclTopoGetAlgoTime``
630-655), the channel and thread choice of ``src/enqueue.cc`` (``topoGetAlgoInfo``
2070-2116), the channel duplication of ``src/graph/connect.cc`` (460, 481) and of
``ncclTopoDupChannels`` (``src/graph/search.cc`` 1036-1049), the SM90 speed arrays
(search.cc 1057-1059). The topology search itself (``ncclTopoCompute``) is reduced to its
bandwidth budget on a host of GPUs on one NVSwitch with one NIC each (:func:`search`).

All bandwidths are GB/s (1e9 bytes/s) and latencies microseconds, as in NCCL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from hpn.errors import InputError
from hpn.gpus import CATALOG
from hpn.registry import Registry
from hpn.workload.collectives.env import parse_list as parse_list  # NCCL_ALGO / NCCL_PROTO
from hpn.workload.collectives.tuning218 import cost_218
from hpn.workload.collectives.versions import (  # noqa: F401 (re-exported names)
    ALGOS,
    AMPERE,
    BLACKWELL,
    CNCHAIN,
    CNDIRECT,
    CPUS,
    FUNCS,
    HOPPER,
    LL,
    LL128,
    NET,
    NET_OVERHEAD,
    NIC_PATHS,
    NVLINK,
    NVLS,
    NVLSTREE,
    PAT,
    PCI,
    PROTOS,
    RING,
    SIMPLE,
    SPEED_INTER,
    SPEED_INTRA,
    TREE,
    V2_30_7,
    VOLTA,
    Cost,
    Version,
    check_cpu,
    log2i,
)
from hpn.workload.collectives.versions import (  # noqa: F401 (re-exported names)
    VERSIONS as VERSIONS,
)

# NCCL's orders (src/include/device.h: NCCL_ALGO_*, NCCL_PROTO_*)
MAXCHANNELS = 64  # device.h:91

# NCCL 2.30.7's tables (tuning.cc:139-212); per release: :mod:`.versions`
BASE_LAT, HW_LAT, LL_MAX_BW = V2_30_7.base_lat, V2_30_7.hw_lat, V2_30_7.ll_max_bw
PER_CH_RING_LL128, PER_CH_TREE_LL128 = V2_30_7.per_ch_ring_ll128, V2_30_7.per_ch_tree_ll128
PER_CH_TREE, PER_CH_NVLS_TREE = V2_30_7.per_ch_tree, V2_30_7.per_ch_nvls_tree or ()
NVLS_EFFICIENCY = V2_30_7.nvls_efficiency or ()
# tuning.cc:623-627: powers of two from 64 B
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
     1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9,
     .9),
)  # fmt: skip
# comm.h:49-51, device.h:93-114
THREAD_THRESHOLD = (8, 8, 64)
MAX_NTHREADS, SIMPLE_MAX_NTHREADS, LL_MAX_NTHREADS, LL128_MAX_NTHREADS = 640, 512, 512, 640
NVLS_NCHANNELS_SM90 = 16  # transport/nvls.cc:155
# the wire cost of each protocol (LL: 8-byte lines of 4 data + 4 flag bytes; LL128: 120 of 128)
WIRE = (2.0, 128 / 120, 1.0)


@dataclass(frozen=True)
class Gpu:
    """What NCCL's model reads of a GPU: compute capability, NVLinks to the NVSwitch (NCCL's
    ``SM90_NVLINK_BW`` = 20.6 GB/s each, topo.h:22) and the PCIe bandwidth to its NIC
    (``width * GT/s / 80``: Gen5 x16 = 48 GB/s)."""

    name: str
    compcap: int
    nvlinks: int
    nvswitch: bool
    pcie_GBps: float

    @property
    def arch(self) -> int:
        c = self.compcap
        return BLACKWELL if c >= 100 else HOPPER if c >= 90 else AMPERE if c >= 80 else VOLTA

    def nvlink_GBps(self, v: Version = V2_30_7) -> float:
        """NVLink GB/s to the NVSwitch as release ``v`` counts it (topo.h)."""
        per = 40.1 if self.compcap >= 100 else v.nvlink_sm90 if self.compcap >= 90 else 20.0
        return self.nvlinks * per

    @property
    def nvls(self) -> bool:
        """NVLink SHARP: NVSwitch (gen 3+) and SM90+ (search.cc:1124)."""
        return self.nvswitch and self.compcap >= 90


GPUS: Registry[Gpu] = Registry("GPU type", field="gpu")
for _c in CATALOG.values():  # the GPU catalog's entries, as NCCL's topology reads them
    _g = Gpu(_c.name, _c.compcap, _c.nvlinks, _c.nvswitch, _c.pcie_GBps)
    assert _g.compcap, f"{_c.name}: the catalog gives no compute capability"
    GPUS.add(
        _g.name, _g, f"SM{_g.compcap}, {_g.nvlinks} NVLinks, NVLS {'yes' if _g.nvls else 'no'}"
    )


@dataclass(frozen=True)
class Graph:
    """One search result (NCCL's ``ncclTopoGraph``): channels and GB/s per channel."""

    channels: int
    bw_intra: float
    bw_inter: float
    nvlink: bool = True  # typeIntra == LINK_NVL


@dataclass(frozen=True)
class Comm:
    """A communicator as NCCL's tuner sees it."""

    ranks: int
    nodes: int
    gpu: Gpu
    nic_GBps: float  # per GPU (both ports of a bonded NIC)
    nvlink: bool = True  # the host's GPUs share an NVSwitch
    collnet: bool = False  # the fabric reduces in the network (SHARP)
    min_channels: int = 0
    max_channels: int = MAXCHANNELS
    nccl: Version = V2_30_7  # the release whose tuner runs
    nic_path: str = "pxb"  # the GPU <-> NIC PCIe path (NIC_PATHS): LL128's enable rule
    cpu: str = "intel"  # the hosts' CPU vendor (CPUS): ring step overhead, LL caps
    graphs: dict[int, Graph] = field(default_factory=dict, compare=False)

    @property
    def ppn(self) -> int:
        return self.ranks // self.nodes

    def __post_init__(self) -> None:
        check_cpu(self.cpu)
        if not self.graphs:
            ring = search(self, False)
            g = {RING: ring, TREE: search(self, True, ring.channels)}
            g[NVLS] = g[NVLSTREE] = nvls_graph(self)
            object.__setattr__(self, "graphs", g)


def search(c: Comm, tree: bool, channels: int = 0) -> Graph:
    """Ring or tree graph: the channel count and speed (from NCCL's speed array) that carry
    the most ``channels * bw`` within each link's budget, as ``ncclTopoCompute`` searches it.

    Reduced to a host of ``ppn`` GPUs on one NVSwitch with one NIC per GPU: channel ``i``
    leaves the host through NIC ``i mod ppn``; every GPU but a channel's exit GPU sends that
    channel over its NVLink. Pass 1 lowers the speed from the system's maximum until one step
    is below .49 of the best (search.cc:1245); ties keep the faster speed; then
    ``ncclTopoDupChannels`` doubles the channels at half the speed (search.cc:1036). Trees
    search exactly the ring's channel count (init.cc:1184-1185), at the best speed that fits.
    """
    k, g, v = c.ppn, c.gpu, c.nccl
    inter = c.nodes > 1
    speeds: tuple[float, ...]
    if g.arch >= HOPPER:
        speeds = v.sm90_speed_inter if inter else v.sm90_speed_intra
    else:
        speeds = SPEED_INTER if inter else SPEED_INTRA
    nvl = g.nvlink_GBps(v) if c.nvlink else g.pcie_GBps
    path = min(c.nic_GBps, g.pcie_GBps)
    max_bw = path if inter else (nvl if k > 1 else 5000.0)
    total = max(nvl, g.pcie_GBps) if k > 1 or inter else 5000.0
    if tree and inter and k > 1:
        total *= k / (k - 1)  # search.cc:1168 (ndevs NICs)
    cap = min(c.max_channels, MAXCHANNELS // 2)

    def fits(n: int, s: float) -> bool:
        if inter and math.ceil(n / k) * s > path * (1 + 1e-9):
            return False
        if k == 1:
            return True
        sends = n - n // k if inter else n  # in one host every GPU sends every channel
        return sends * s <= nvl * (1 + 1e-9)

    if tree and channels:
        s = next((x for x in speeds if x <= max_bw and fits(channels, x)), 0.1)
        return Graph(channels, s, s, c.nvlink)
    best: tuple[int, float] | None = None
    for s in speeds:
        if s > max_bw:
            continue
        if best is not None and s / best[1] <= 0.49:
            break
        n = 0
        while n < cap and fits(n + 1, s):
            n += 1
        if n and (best is None or n * s > best[0] * best[1] * (1 + 1e-9)):
            best = (n, s)
        if best is not None and best[0] * best[1] >= total:
            break
    n, s = best if best is not None else (1, 0.1)
    # ncclTopoDupChannels
    if s >= 25.0 and not (g.compcap > 80 and s < 50.0 and n > 4):
        dup = min(2 * n, cap)
        s /= math.ceil(dup / n)
        n = dup
    return Graph(n, s, s, c.nvlink)


def nvls_graph(c: Comm) -> Graph:
    """NVLS heads: one per GPU (``NCCL_MAX_NVLS_ARITY`` 32), each at its NIC's path speed
    across hosts; in one host the heads share each GPU's NVLink."""
    k, g = c.ppn, c.gpu
    if not (g.nvls and c.nvlink) or k < 2:
        return Graph(0, 0.0, 0.0)
    n = min(k, 32)
    v = c.nccl
    speeds = v.sm90_speed_inter if c.nodes > 1 else v.sm90_speed_intra
    limit = min(c.nic_GBps, g.pcie_GBps) if c.nodes > 1 else g.nvlink_GBps(v) / n
    s = next((x for x in speeds if x <= limit), speeds[-1])
    return Graph(n, s, s)


PATTERN_BALANCED_TREE, PATTERN_TREE = 1, 3  # graph.h:164-166 (v2.30.7-1)


def tree_pattern(c: Comm) -> int:
    """The tree graph's pattern (``comm->maxTreePattern``, init.cc:1447): NCCL searches a
    balanced tree and makes it ``NCCL_TOPO_PATTERN_TREE`` ("all NIC traffic going to/from the
    same GPU") when a host has one GPU of the communicator (v2.30.7-1 search.cc:1133). Not
    modelled: SM90's fallback to that pattern when pass 1 finds no balanced tree
    (search.cc:1216-1218); the reduced search here always finds one."""
    return PATTERN_TREE if c.ppn == 1 else PATTERN_BALANCED_TREE


def comm_channels(c: Comm) -> int:
    """``comm->nChannels``: the ring/tree channels, doubled (connect.cc:460), doubled again
    on SM90+ across hosts above 45 GB/s (481: below 16 channels; 2.18.3 connect.cc:405: on
    SM90 exactly, while 2n <= 64), then NCCL_MIN/MAX_NCHANNELS."""
    r, t = c.graphs[RING], c.graphs[TREE]
    n = min(MAXCHANNELS, 2 * min(r.channels, t.channels))
    if c.nccl.v218:
        if c.gpu.compcap == 90 and c.nodes > 1 and r.bw_intra > 45.0 and 2 * n <= MAXCHANNELS:
            n *= 2
    elif c.gpu.compcap >= 90 and c.nodes > 1 and r.bw_intra > 45.0 and n < 16:
        n *= 2
    n = min(n, c.max_channels)
    return max(n, c.min_channels)


def _index2(c: Comm) -> int:
    return c.nodes - 1 if c.nodes <= 2 else 2


def cost(c: Comm, op: str, a: int, p: int) -> Cost | None:
    """``ncclTopoTuneModel`` for one entry (None where NCCL skips or disables it), as the
    communicator's release computes it (2.18.3: :func:`.tuning218.cost_218`)."""
    if op not in FUNCS:
        return None
    if c.nccl.v218:
        return cost_218(c, op, a, p)
    n, nodes, ppn = c.ranks, c.nodes, c.ranks / c.nodes
    if n <= 1:
        return None
    nsteps = (
        2 * (n - 1) if op == "allreduce" else n - 1 if op in ("reducescatter", "allgather") else n
    )
    if op in ("broadcast", "reduce") and a != RING:
        return None
    if op in ("reducescatter", "allgather") and a not in (PAT, RING, NVLS, CNDIRECT):
        return None
    if op == "allreduce" and a == PAT:
        return None
    if a in (NVLS, NVLSTREE) and p != SIMPLE:
        return None
    if a == PAT and (p != SIMPLE or nodes != n):
        return None
    g = c.graphs.get(a) or c.graphs[RING if a in (CNDIRECT, CNCHAIN, PAT) else TREE]
    arch, i2 = c.gpu.arch, _index2(c)
    i1 = arch if nodes == 1 else CPUS.index(c.cpu)  # multi-node: the CPU's row
    ll_max = LL_MAX_BW[i1][i2]
    collnet = a in (CNDIRECT, CNCHAIN)
    inf = float("inf")

    def busbw(bw: float) -> tuple[float, float]:
        """(bus bandwidth, efficiency factor) for a per-channel graph bandwidth ``bw``."""
        eff = 1.0
        if a in (NVLS, NVLSTREE):
            if g.channels < 2:
                return 0.0, 0.0
            e = NVLS_EFFICIENCY[arch] * (g.channels - 1) / g.channels
            intra = bw * e * (2.0 if op == "allreduce" else (ppn - 1) / ppn)
            inter = g.bw_inter * (2 if nodes <= 2 and a == NVLSTREE else 1) if bw < inf else inf
            bw = min(intra, inter, PER_CH_NVLS_TREE[arch][i2] if a == NVLSTREE else inf)
            eff = e
        bus = g.channels * bw
        if a == RING and p == LL:
            bus, eff = min(ll_max, bus * 0.5), eff * 0.5
        if a == RING and p == LL128:
            bus, eff = min(bus * 0.92, g.channels * PER_CH_RING_LL128[arch][i2]), eff * 0.92
        if a == TREE and op == "allreduce":
            bus, eff = min(bus * 0.92, g.channels * PER_CH_TREE[arch][i2]), eff * 0.92
        if a == TREE and p == LL:
            bus, eff = min(bus / 3.8, ll_max), eff / 3.8
        if a == TREE and p == LL128:
            x = 7.0 / 9.0 if nodes == 1 else 120.0 / 128.0
            bus, eff = min(bus * x, g.channels * PER_CH_TREE_LL128[arch][i2]), eff * x
        if a == TREE and tree_pattern(c) == PATTERN_TREE:
            bus, eff = bus * 0.85, eff * 0.85
        if a == PAT:
            bus, eff = bus * 0.75, eff * 0.75
        if collnet and p != SIMPLE:
            bus = 0.0
        if a == CNDIRECT and p == SIMPLE and op not in ("allgather", "reducescatter"):
            factor = ppn / g.channels
            factor -= (factor - 1) / 2
            bus /= factor
            if c.gpu.compcap >= 90:
                bus, eff = bus * 0.85, eff * 0.85
        if a in (NVLS, CNDIRECT) and op in ("allgather", "reducescatter") and nodes > 1:
            bus = 0.0  # no CollNet allgather/reducescatter on these fabrics (tuning.cc:353)
        if not (a != RING and op in ("allgather", "reducescatter")):
            bus *= n / nsteps if a in (RING, NVLS, NVLSTREE) else 0.5
        return bus, eff

    bw_here = g.bw_intra if nodes <= 2 or collnet else g.bw_inter
    bw, eff = busbw(bw_here)
    cap, _ = busbw(inf)
    if bw <= 0:
        return None
    # latencies: tuning.cc:384-435
    intra_hw = NVLINK if g.nvlink else PCI
    hw = intra_hw if nodes == 1 else NET
    lat = BASE_LAT[a][p]
    intra_lat = HW_LAT[intra_hw][a][p]
    inter_lat = HW_LAT[NET][TREE][p] if ppn == 1 else HW_LAT[NET][a][p]
    if a == RING:
        step = HW_LAT[hw][a][p]
        if op in ("reduce", "broadcast"):
            lat += step  # sameChannels rings
        else:
            over = NET_OVERHEAD[c.cpu] * (3 if p == SIMPLE else 1) if nodes > 1 else 0.0
            intra_lat = max(intra_lat, over)
            inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if op == "allreduce" else nodes - 1
            lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
    elif a == TREE:
        if op == "allreduce":
            lat += 2 * ((n // nodes - 1) * intra_lat + log2i(nodes) * inter_lat)
    elif a == CNDIRECT:
        lat += 2 * (min(1, n // nodes - 1) * intra_lat + (n // nodes - 1) * 0.4) + inter_lat
    elif a == CNCHAIN:
        lat += 2 * (n // nodes - 1) * intra_lat + inter_lat
    elif a == NVLS:
        lat = intra_lat + (inter_lat if nodes > 1 else 0.0)
    elif a == NVLSTREE:
        lat += intra_lat + 2 * log2i(nodes) * inter_lat
    elif a == PAT:
        lat += log2i(nodes) * (inter_lat / 3.5) + n * 2.8
    return Cost(lat, bw, eff, cap)


def correction(op: str, a: int, p: int, nbytes: float) -> float:
    """``treeCorrectionFactor`` (tuning.cc:640): Tree AllReduce at 64 B .. 256 MiB."""
    log = log2i(int(nbytes) >> 6) if int(nbytes) >> 6 else -1
    if a == TREE and op == "allreduce" and 0 <= log < 23:
        return TREE_CORRECTION[p][log]
    return 1.0


def plateau(c: Comm, op: str, a: int, p: int, nbytes: float) -> float:
    """The ring latency's plateau factor (tuning.cc:647)."""
    ch = comm_channels(c)
    ring_simple = a == RING and p == SIMPLE and c.nodes > 1 and op == "allreduce"
    if ring_simple and nbytes / (ch * c.ranks) >= 64:
        return 1.9 if c.gpu.compcap < 80 else 1.4
    return 1.0


def algo_time(c: Comm, op: str, a: int, p: int, nbytes: float) -> float | None:
    """``ncclTopoGetAlgoTime`` (us), one operation in the kernel (numPipeOps = 1)."""
    k = cost(c, op, a, p)
    if k is None:
        return None
    bw = k.bw * correction(op, a, p, nbytes)
    return k.lat * plateau(c, op, a, p, nbytes) + nbytes / (1000 * bw)


def ll128_enabled(c: Comm) -> bool:
    """NCCL's default LL128 rule (2.18.3 tuning.cc:281-293, 2.30.7 518-535): the inter-node
    path no farther than PXB, or PXN on SM90+; NVLink inside the host (typeIntra <= NVB);
    2.18.3 only on SM70, SM80 and SM90, 2.30.7 on SM70+."""
    k = NIC_PATHS.index(c.nic_path)
    near = k <= NIC_PATHS.index("pxb") or (c.gpu.compcap >= 90 and c.nic_path == "pxn")
    if c.nodes == 1:
        near = True  # no network path in the graph
    arch = c.gpu.compcap in (70, 80, 90) if c.nccl.v218 else c.gpu.compcap >= 70
    return near and (c.nvlink or c.ppn == 1) and arch


def enabled(
    c: Comm, op: str, algos: list[bool], protos: list[bool], proto_set: bool = False
) -> list[tuple[int, int]]:
    """The (algorithm, protocol) pairs NCCL keeps for ``op`` (tuning.cc:495-541,
    enqueue.cc:1998-2008) among those the user enabled; LL128 only where
    :func:`ll128_enabled` (NCCL_PROTO naming LL128 forces it, as NCCL's ``protoEnable = 1``)."""
    out = []
    for a in range(len(ALGOS)):
        if not algos[a] and not (c.nccl.v218 and a == RING and op != "allreduce"):
            continue  # 2.18.3 never disables Ring outside AllReduce (tuning.cc:296-297)
        if a == PAT and c.nccl.v218:
            continue
        if a == NVLSTREE and c.nodes == 1:
            continue
        if a in (CNDIRECT, CNCHAIN) and not c.collnet:
            continue
        if a == NVLS and c.nodes > 1 and not c.collnet:
            continue
        if a in (NVLS, NVLSTREE) and not (c.gpu.nvls and c.nvlink and c.ppn > 1):
            continue
        ll128 = proto_set or ll128_enabled(c)
        out += [(a, p) for p in range(len(PROTOS)) if protos[p] and (p != LL128 or ll128)]
    return out


def threads(c: Comm, a: int, p: int) -> int:
    """``comm->maxThreads`` (tuning.cc:244-257)."""
    if p == SIMPLE:
        if a == RING:
            r = c.graphs[RING]
            return 256 if r.bw_intra * r.channels <= 12.0 else SIMPLE_MAX_NTHREADS
        return SIMPLE_MAX_NTHREADS if a == TREE else MAX_NTHREADS
    return LL_MAX_NTHREADS if p == LL else LL128_MAX_NTHREADS


def channels_for(c: Comm, a: int, p: int, nbytes: float) -> int:
    """Channels one operation runs on (enqueue.cc:2084-2097)."""
    if a in (NVLS, NVLSTREE):
        nc = NVLS_NCHANNELS_SM90
        nc = max(c.min_channels, min(c.max_channels, nc))
        return min(nc, comm_channels(c)) if c.nodes > 1 and a == NVLS else nc
    nc, nt = comm_channels(c), threads(c, a, p)
    th = THREAD_THRESHOLD[p] * (c.ranks if a == RING and p == LL else 1)
    while nbytes < nc * nt * th and nc >= 2:
        nc -= 1
    return nc


@dataclass(frozen=True)
class Choice:
    """What NCCL_DEBUG=INFO would tell of one operation: algorithm, protocol, channels, and
    the model's latency (us), predicted time (us), efficiency and cap (GB/s)."""

    algo: str
    proto: str
    channels: int
    lat_us: float
    time_us: float
    eff: float
    cap_GBps: float

    def with_channels(self, n: int) -> Choice:
        return replace(self, channels=n)


def choose(
    c: Comm,
    op: str,
    nbytes: float,
    algos: list[bool],
    protos: list[bool],
    flag: str = "algo",
    proto_set: bool = False,
) -> Choice:
    """The fastest enabled (algorithm, protocol) for ``nbytes`` (enqueue.cc:2032-2044);
    ``proto_set``: the protocols were given (NCCL_PROTO), so LL128 is not subject to
    :func:`ll128_enabled`."""
    best: tuple[float, int, int] | None = None
    for a, p in enabled(c, op, algos, protos, proto_set):
        t = algo_time(c, op, a, p, nbytes)
        if t is not None and t >= 0 and (best is None or t < best[0]):
            best = (t, a, p)
    if best is None:
        want = [ALGOS[a] for a in range(len(ALGOS)) if algos[a]]
        raise InputError(
            flag,
            f"no algorithm/protocol available for {op} on {c.ranks} ranks "
            f"({c.nodes} hosts, {c.gpu.name}) among {','.join(want)} x "
            f"{','.join(PROTOS[p] for p in range(3) if protos[p])}",
        )
    t, a, p = best
    k = cost(c, op, a, p)
    assert k is not None
    f = correction(op, a, p, nbytes)
    return Choice(
        ALGOS[a],
        PROTOS[p],
        channels_for(c, a, p, nbytes),
        k.lat * plateau(c, op, a, p, nbytes),
        t,
        k.eff * f,
        k.cap * f,
    )
