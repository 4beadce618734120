"""NCCL's chunking of Tree and NVLSTree AllReduces (enqueue.cc computeColl) and the pipeline
fill, hand-computed (mostly at 448 GPUs: 56 hosts of 8 H800, 16 channels)."""

import pytest

from hpn.workload.collectives import tuning as tu
from hpn.workload.collectives.pipeline import (
    fill_us,
    nvlstree_chunk,
    nvlstree_pipeline,
    tree_chunk,
    tree_pipeline,
)

M = 2**20


def comm(nccl: str, nodes: int = 56, ppn: int = 8) -> tu.Comm:
    return tu.Comm(nodes * ppn, nodes, tu.GPUS.get("H800"), 50.0, nccl=tu.VERSIONS.get(nccl))


def test_ll128_chunks_2_18_3():
    """Step 614,400 wire bytes; 1 + log2(56) + 0.8 = 6.8 steps: halve while
    bytes // (16 chunk) < 54.4 (chunk > 128 KiB), then < 13.6 (chunk > 32 KiB); the
    integer division is NCCL's (16 MiB // (16 x 76,800) = 13 < 13.6 halves once more)."""
    c = comm("2.18.3")
    assert tree_chunk(c, tu.LL128, 1 * M, 16) == 19200 // 16 * 15
    assert tree_chunk(c, tu.LL128, 16 * M, 16) == 38400 // 16 * 15
    assert tree_chunk(c, tu.LL128, 64 * M, 16) == 76800 // 16 * 15
    assert tree_chunk(c, tu.LL128, 1024 * M, 16) == 614400 // 16 * 15


def test_simple_chunks_by_release():
    """2.18.3 halves the 512 KiB step against tree.depth = 7 + 5 = 12 down to 32 KiB at 1 MiB;
    2.30.7 keeps the step for Tree Simple; LL is half its 64 KiB step, data."""
    assert tree_chunk(comm("2.18.3"), tu.SIMPLE, 1 * M, 16) == 32768
    assert tree_chunk(comm("2.18.3"), tu.SIMPLE, 16 * M, 16) == 65536
    assert tree_chunk(comm("2.30.7"), tu.SIMPLE, 1 * M, 16) == 524288
    assert tree_chunk(comm("2.30.7"), tu.LL, 1 * M, 16) == 32768


def test_fill_hand_computed():
    """1 MiB LL128: 4 chunks of 18,000 B per channel; 2 x 6 network hops (the double binary
    tree over 56 hosts is 6 deep), store-and-forward per step; a chunk's 19,200 wire bytes at
    the graph's 20 GB/s per channel take 0.96 us: fill 11 x 0.96 us. Simple also waits per
    step on the 7 NVLink hops of each host's chain: 2 x (6 + 7) = 26 hops."""
    c = comm("2.18.3")
    p = tree_pipeline(c, tu.LL128, 1 * M, 16)
    assert (p.chunk, p.chunks, p.hops) == (18000, 4, 12)
    assert p.fill_us == pytest.approx(11 * 19200 / 20e3)
    # NCCL's tree correction at 1 MiB (LL128: .6) adds (1/.6 - 1) x bytes / bw
    bw = tu.cost(c, "allreduce", tu.TREE, tu.LL128).bw
    assert p.correction_us == pytest.approx(M / (1e3 * bw) * (1 / 0.6 - 1))
    s = tree_pipeline(c, tu.SIMPLE, 1 * M, 16)
    assert (s.chunk, s.chunks, s.hops) == (32768, 2, 26)
    assert s.fill_us == pytest.approx(25 * 32768 / 20e3)


def test_short_message_moves_one_partial_chunk():
    """2.30.7 Tree Simple keeps its 512 KiB step; at 1 MiB on 16 channels each channel moves
    one 64 KiB chunk, which is what each hop forwards."""
    c = comm("2.30.7")
    s = tree_pipeline(c, tu.SIMPLE, 1 * M, 16)
    assert (s.chunk, s.chunks, s.hops) == (524288, 1, 26)
    assert s.fill_us == pytest.approx(25 * 65536 / (1e3 * c.graphs[tu.TREE].bw_inter))


def test_one_host_has_no_network_fill():
    p = tree_pipeline(comm("2.18.3", nodes=1), tu.LL128, 4 * M, 16)
    assert p.hops == 0 and p.fill_us == 0.0


def test_nvlstree_chunks_by_release():
    """computeColl's NVLSTree chunk: 2.30.7 from min(nvlsChunkSize 128 KiB, 64 KiB from 4
    hosts); 2.18.3 from the 512 KiB Simple step; cut below 32 / 16 / 4 / 1 rounds of
    16 channels x 8 heads x chunk (2 hosts: 32 KiB below 8 MiB, 64 KiB below 64 MiB)."""
    two = comm("2.30.7", nodes=2)
    assert [nvlstree_chunk(two, s * M, 16) for s in (4, 8, 63, 64, 4096)] == [
        32768, 65536, 65536, 131072, 131072
    ]  # fmt: skip
    assert nvlstree_chunk(comm("2.30.7"), 4096 * M, 16) == 65536
    old = comm("2.18.3")
    assert [nvlstree_chunk(old, s * M, 16) for s in (256, 1024, 2048)] == [131072, 262144, 524288]


def test_nvlstree_fill_hand_computed():
    """2 hosts x 8 H100, 16 MiB on 16 channels: 64 KiB chunks, 2 rounds. A per-rail tree of 2
    hosts has one edge, crossed up and down (2 hops); per hop a NIC direction carries half
    of its one channel's load (link_load 1) x 16 channels = 8 chunks at 50 GB/s = 10.49 us.
    NVLink streams: a round's scatter (16 x 8 chunks), reduce and multicast (16 each) take
    16 x 10 x 64 KiB / (18 x 20.6 GB/s) = 28.3 us > 10.49, so both hops are fill."""
    c = tu.Comm(16, 2, tu.GPUS.get("H100"), 50.0)
    p = nvlstree_pipeline(c, 16 * M, 16)
    assert (p.chunk, p.chunks, p.hops) == (65536, 2, 2)
    assert p.fill_us == pytest.approx(2 * 8 * 65536 / 50e3)
    # network-bound (NICs at 2 GB/s): 1 hop + the NVLink stages
    slow = tu.Comm(16, 2, tu.GPUS.get("H100"), 2.0)
    nvl = 16 * 10 * 65536 / (1e3 * 18 * 20.6)
    assert nvlstree_pipeline(slow, 16 * M, 16).fill_us == pytest.approx(8 * 65536 / 2e3 + nvl)
    # 56 hosts: 2 x 6 hops, 16 chunks per NIC direction (link_load 2)
    deep = nvlstree_pipeline(comm("2.30.7"), 1024 * M, 16)
    assert deep.hops == 12 and deep.fill_us == pytest.approx(12 * 16 * 65536 / 50e3)


def test_fill_term_of_each_algorithm():
    """What a fill term would add: NVLSTree's fill; Tree's beyond the correction factor's
    charge (1 MiB LL128 at 56 hosts: 10.6 - 10.1 us; 4 MiB: none); nothing for Ring, in one
    host, or other operations."""
    c = comm("2.18.3")
    t = tree_pipeline(c, tu.LL128, 1 * M, 16)
    assert fill_us(c, "allreduce", "tree", "ll128", 1 * M, 16) == pytest.approx(
        t.fill_us - t.correction_us
    )
    assert fill_us(c, "allreduce", "tree", "ll128", 4 * M, 16) == 0.0
    assert fill_us(c, "allreduce", "nvlstree", "simple", 1024 * M, 16) == pytest.approx(
        nvlstree_pipeline(c, 1024 * M, 16).fill_us
    )
    assert fill_us(c, "allreduce", "ring", "simple", 1024 * M, 16) == 0.0
    assert fill_us(c, "allgather", "nvlstree", "simple", 1024 * M, 16) == 0.0
    assert fill_us(comm("2.18.3", nodes=1), "allreduce", "nvls", "simple", 1024 * M, 16) == 0.0
