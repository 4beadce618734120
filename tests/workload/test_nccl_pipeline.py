"""NCCL's chunking of a Tree AllReduce (enqueue.cc computeColl) and the pipeline fill,
hand-computed at 448 GPUs (56 hosts of 8 H800, 16 channels)."""

import pytest

from hpn.workload.collectives import tuning as tu
from hpn.workload.collectives.pipeline import tree_chunk, tree_pipeline

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
