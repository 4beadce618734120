"""How NCCL cuts a Tree or NVLSTree AllReduce into steps, and what the pipeline's fill
costs: a check on the time model (``latency + max(flows, bytes / cap)``), not a term of it
(as a term it fails Fig 17a at 4 GiB on NCCL 2.18.3: docs/guide/training.md).

Per channel, NCCL moves the data in chunks of one buffer step (``buffSizes[proto] /
NCCL_STEPS``, halved while the message is short against the tree's depth: ``computeColl``,
``v2.18.3-1:src/enqueue.cc`` 1307-1376; ``v2.30.7-1`` 2220-2298, where LL128 chunks count
data bytes before halving and Tree Simple keeps its step). A network hop is store-and-forward
per step (``net.cc`` ``sendProxyProgress``: one ``isend`` per step once the GPU has written
all of it; 2.18.3 lines 955-995); over NVLink LL and LL128 are cut-through (the receiver
polls each line's flag), Simple waits per step too. A chunk crosses ``H`` store-and-forward
hops up and down the tree, so the last chunk ends ``(H - 1)`` chunk times after a perfectly
streamed message would: the fill. NCCL's model has no fill term; its tree correction factor
(``treeCorrectionFactor``, tuning.cc) stretches the bandwidth term at 64 B - 256 MiB instead.
:func:`tree_pipeline` gives both, so a run can compare them.

NVLSTree (:func:`nvlstree_pipeline`) cuts the message into ``nChannels x nHeads`` chunks per
round, a chunk per channel per head (computeColl: v2.18.3-1 enqueue.cc 1347-1355 from the
512 KiB Simple step; v2.30.7-1 2276-2285 from ``nvlsChunkSize`` 128 KiB, nvls.cc 160, capped
at 64 KiB from 4 hosts, nvls.cc 229). A chunk goes scatter -> NVLS reduce -> the per-rail
double tree's ``2 x depth`` network hops (channel ``c`` on tree ``c % 2``, connect.cc 312)
-> NVLS multicast (v2.30.7-1 src/device/all_reduce.h 527-636), each stage store-and-forward
per step. The NVLink stages share one GPU's NVLink, which streams the message (what the
flows give); the network hops add their chunk time once each: the fill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hpn.workload.collectives import tuning as tu
from hpn.workload.collectives.tree import depth, dtree, link_load

NCCL_STEPS = 8  # devcomm.h:34
# init.cc:500-502 (2.18.3): LL 8 lines x 512 threads x 8 steps x 16 B; LL128 120 elems x
# 640 threads x 8 steps x 8 B; Simple 4 MiB
BUFF_SIZE = (8 * 512 * NCCL_STEPS * 16, 120 * 640 * NCCL_STEPS * 8, 1 << 22)
WIRE = tu.WIRE  # wire bytes per data byte: LL 2, LL128 128/120, Simple 1


@dataclass(frozen=True)
class Pipeline:
    """One Tree AllReduce as NCCL runs it per channel: chunk data bytes, chunks per channel,
    store-and-forward hops per chunk, the fill (us) at NCCL's per-channel bandwidth, and the
    time NCCL's tree correction factor adds to its bandwidth term (us)."""

    chunk: int
    chunks: int
    hops: int
    fill_us: float
    correction_us: float


def tree_chunk(c: tu.Comm, p: int, nbytes: float, nch: int) -> int:
    """Data bytes per chunk of a Tree AllReduce on ``nch`` channels (computeColl)."""
    step = BUFF_SIZE[p] // NCCL_STEPS
    nodes, ppn = c.nodes, c.ranks / c.nodes
    n = int(nbytes)
    if p == tu.LL:
        return step // 2  # 8-byte lines of 4 data bytes (sliceSize, enqueue.cc 1356)
    if p == tu.LL128:
        # 2.18 halves the step's wire bytes, 2.30 its data bytes (15 of 16 words)
        chunk = step if c.nccl.v218 else step // 16 * 15
        steps = 1 + tu.log2i(nodes) + 0.1 * ppn
        while n // (nch * chunk) < steps * 64 / ppn and chunk > 131072:
            chunk //= 2
        while n // (nch * chunk) < steps * 16 / ppn and chunk > 32768:
            chunk //= 2
        return chunk // 16 * 15 if c.nccl.v218 else chunk
    chunk = step
    if c.nccl.v218:  # tree.depth = ppn - 1 + log2(nNodes) (connect.cc 135)
        d = c.ranks // nodes - 1 + tu.log2i(nodes)
        for k, floor in ((8, 131072), (4, 65536), (1, 32768)):
            while n // (nch * chunk) < d * k and chunk > floor:
                chunk //= 2
    return chunk


def tree_pipeline(c: tu.Comm, p: int, nbytes: float, nch: int) -> Pipeline:
    """The chunking and fill of a Tree AllReduce of ``nbytes`` (protocol ``p``) on ``nch``
    channels; the chunk time is its wire bytes (at most the channel's share of the message)
    at the tree graph's GB/s per channel."""
    chunk = tree_chunk(c, p, nbytes, nch)
    chunks = max(math.ceil(nbytes / (nch * chunk)), 1)
    d = max(depth(t) for t in dtree(c.nodes)) if c.nodes > 1 else 0
    intra = c.ranks // c.nodes - 1
    hops = 2 * (d + (intra if p == tu.SIMPLE else 0))
    g = c.graphs[tu.TREE]
    bw = g.bw_inter if c.nodes > 2 else g.bw_intra
    moved = min(chunk, math.ceil(nbytes / nch))  # a short message is one partial chunk
    tau = moved * WIRE[p] / (1e3 * bw)  # us
    k = tu.cost(c, "allreduce", tu.TREE, p)
    f = tu.correction("allreduce", tu.TREE, p, nbytes)
    corr = nbytes / (1e3 * k.bw) * (1 / f - 1) if k is not None else 0.0
    return Pipeline(chunk, chunks, hops, max(hops - 1, 0) * tau, corr)


def nvlstree_chunk(c: tu.Comm, nbytes: float, nch: int) -> int:
    """Bytes per chunk of an NVLSTree AllReduce on ``nch`` channels (computeColl): the
    release's largest chunk, cut to 256 / 128 / 64 / 32 KiB while the message is below 32 /
    16 / 4 / 1 rounds of ``nch x nHeads`` chunks."""
    ops = nch * min(c.ppn, 32)  # concurrentOps = nChannels x nvls.nHeads
    # 2.30.7: min(nvlsChunkSize, nvlsTreeMaxChunkSize)
    chunk = BUFF_SIZE[tu.SIMPLE] // NCCL_STEPS if c.nccl.v218 else 65536 if c.nodes >= 4 else 131072
    n = int(nbytes)
    for k, size in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        if n < k * ops * chunk and chunk > size:
            chunk = size
    return chunk


def nvlstree_pipeline(c: tu.Comm, nbytes: float, nch: int) -> Pipeline:
    """The chunking and fill of an NVLSTree AllReduce of ``nbytes`` on ``nch`` channels.

    Per round every channel moves one chunk per head, all channels at once. A network hop
    of a round carries, on one NIC direction, ``nch x chunk x link_load / 2`` bytes (half a
    per-rail double tree's busiest-link load per phase: 8 chunks on 2 hosts, 16 from 4) at
    the NIC's GB/s; the NVLink stages of a round (scatter ``nch x heads`` chunks, reduce and
    multicast ``nch`` each) at NCCL's NVLink GB/s. A pipeline of identical rounds ends at
    the sum of its stage times plus ``rounds - 1`` times the slowest: if NVLink is slowest
    the fill is the ``2 x depth`` hops' time, else ``2 x depth - 1`` hops and the NVLink
    stages. A short message is one partial round."""
    heads = min(c.ppn, 32)
    chunk = nvlstree_chunk(c, nbytes, nch)
    chunks = max(math.ceil(nbytes / (nch * heads * chunk)), 1)
    moved = min(chunk, math.ceil(nbytes / (nch * heads)))
    d = max(depth(t) for t in dtree(c.nodes)) if c.nodes > 1 else 0
    hops = 2 * d
    net = nch * moved * link_load(c.nodes, 1) / 2 / (1e3 * c.nic_GBps) if hops else 0.0
    nvl = nch * moved * (heads + 2) / (1e3 * c.gpu.nvlink_GBps(c.nccl))
    fill = hops * net if nvl >= net else (hops - 1) * net + nvl
    return Pipeline(chunk, chunks, hops, fill, 0.0)


def fill_us(c: tu.Comm, op: str, algo: str, proto: str, nbytes: float, nch: int) -> float:
    """The pipeline fill (us) that ``latency + max(flows, bytes / cap)`` does not carry for
    one AllReduce (a check, not added to the time: docs/guide/training.md). NVLSTree: its
    fill (NCCL's model has no size-dependent term for it); Tree: the fill beyond what the
    tree correction factor on the flows already charges; 0 for Ring (every ring step already
    waits for the one before; NCCL counts its per-step latency), NVLS in one host (all its
    stages share the NVLink that streams the message) and the other operations."""
    if op != "allreduce" or nbytes <= 0 or c.nodes < 2:
        return 0.0
    if algo == "nvlstree":
        return nvlstree_pipeline(c, nbytes, nch).fill_us
    if algo == "tree":
        t = tree_pipeline(c, tu.PROTOS.index(proto), nbytes, nch)
        return max(t.fill_us - t.correction_us, 0.0)
    return 0.0
