"""Collective algorithms: closed forms on non-blocking fabrics, step counts, DAG shape."""

from __future__ import annotations

import numpy as np
import pytest

from hpn.engine import simulate
from hpn.errors import InputError
from hpn.topology import build
from hpn.topology.fabric import LinkTier
from hpn.workload.collectives import (
    ALGORITHMS,
    Ctx,
    Params,
    add_collective,
    bandwidths,
    get_op,
    place,
    sweep,
)
from hpn.workload.collectives.hd import hd_schedule
from hpn.workload.collectives.ring import ring_order
from hpn.workload.collectives.tree import btree, depth, dtree

NIC = 50e9  # bytes/s: 2 x 200G
NVL = 200e9  # bytes/s per direction (400 GB/s bidirectional)
GB = 2**30


@pytest.fixture(scope="module")
def seg():
    """One single-ToR HPN segment, no latency: non-blocking per rail, one 400G port per NIC
    (so closed forms do not depend on how a router spreads connections over ports)."""
    return build("hpn", segments=1, dual_tor=False, link_latency=0, nvlink_latency=0)


def run(fabric, op, ranks, size, algo=None, routing="hpn", **kw):
    ctx = Ctx(fabric)
    s, e = add_collective(
        ctx, op, ranks, size, algo, Params(**{"alpha": 0, "model": "alpha", **kw})
    )
    ctx.dag.validate(fabric.num_nodes)
    res = simulate(fabric, ctx.dag, routing)
    return float(res.task_finish[e] - res.task_start[s]), ctx, res


def test_busbw_factors():
    assert get_op("allreduce").busbw_factor(8) == pytest.approx(1.75)
    assert get_op("allgather").busbw_factor(8) == pytest.approx(0.875)
    assert get_op("reducescatter").busbw_factor(4) == pytest.approx(0.75)
    assert get_op("alltoall").busbw_factor(4) == pytest.approx(0.75)
    assert get_op("broadcast").busbw_factor(9) == 1.0
    assert get_op("sendrecv").busbw_factor(9) == 1.0
    assert bandwidths("allreduce", 8.0, 2.0, 2) == (4.0, 4.0)


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reducescatter"])
def test_ring_busbw_is_the_nic_rate(seg, op):
    ranks = place(seg, 16, per_host=1).gpus
    t, _, _ = run(seg, op, ranks, 4 * GB, "ring")
    _, busbw = bandwidths(op, 4 * GB, t, 16)
    assert busbw == pytest.approx(NIC, rel=1e-6)


def test_one_connection_gets_one_port():
    f = build("hpn", segments=1, link_latency=0, nvlink_latency=0)  # dual-ToR: 2 x 200G
    ranks = place(f, 8, per_host=1).gpus
    t, _, _ = run(f, "allreduce", ranks, GB, "ring", conns=1)
    assert bandwidths("allreduce", GB, t, 8)[1] == pytest.approx(NIC / 2, rel=1e-6)
    t, _, _ = run(f, "allreduce", ranks, GB, "ring", conns=2)  # host-chosen disjoint ports
    assert bandwidths("allreduce", GB, t, 8)[1] == pytest.approx(NIC, rel=1e-6)


def test_ring_closed_form_with_latency():
    f = build("hpn", segments=1)
    ranks = place(f, 8, per_host=1).gpus
    ctx = Ctx(f)
    s, e = add_collective(ctx, "allreduce", ranks, 2**28, "ring", Params(alpha=1e-6, model="alpha"))
    res = simulate(f, ctx.dag, "ideal")
    n = 8
    expect = 2 * (n - 1) / n * 2**28 / NIC + 2 * 500e-9 + 2 * (n - 1) * 1e-6
    assert res.task_finish[e] - res.task_start[s] == pytest.approx(expect, rel=1e-9)


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reducescatter"])
def test_stepwise_matches_coupled(seg, op):
    ranks = place(seg, 16, per_host=1).gpus
    size = 64 * 2**20
    t1, _, _ = run(seg, op, ranks, size, "ring")
    t2, ctx, _ = run(seg, op, ranks, size, "ring", stepwise=True)
    assert t2 == pytest.approx(t1, rel=1e-9)
    assert ctx.dag.num_flows > 16 * 2
    # NVLink and NIC edges in one ring: the steps skew, the coupled pipeline is the fluid limit
    ranks = place(seg, 16, per_host=4).gpus
    t1, _, _ = run(seg, op, ranks, size, "ring")
    t2, _, _ = run(seg, op, ranks, size, "ring", stepwise=True)
    assert t1 <= t2 * (1 + 1e-9) and t2 < 1.15 * t1


def test_stepwise_broadcast_pipeline_fill(seg):
    ranks = place(seg, 6, per_host=1).gpus
    size, chunk = 2**24, 2**20
    t1, _, _ = run(seg, "broadcast", ranks, size, "ring", channels=1, conns=1)
    t2, _, _ = run(
        seg, "broadcast", ranks, size, "ring", channels=1, conns=1, stepwise=True, chunk=chunk
    )
    chunks, edges = size // chunk, 5
    assert t2 == pytest.approx(t1 * (chunks + edges - 1) / chunks, rel=1e-9)


def test_ring_orders_are_rail_local():
    for c in range(8):
        o = ring_order(6, 8, c)
        assert sorted(o) == list(range(48))
        host, local = np.divmod(o, 8)
        cross = host != np.roll(host, -1)
        assert (local[cross] == np.roll(local, -1)[cross]).all()  # same GPU index = same rail
        assert cross.sum() == 6
    assert list(ring_order(1, 4, 1)) == [1, 2, 3, 0]


def test_in_host_ring_is_nvlink_bound(seg):
    ranks = place(seg, 8).gpus  # one host
    t, _, res = run(seg, "allgather", ranks, GB, "ring")
    assert bandwidths("allgather", GB, t, 8)[1] == pytest.approx(NVL, rel=1e-6)
    assert (seg.links.tier[res.link_bytes > 0] == LinkTier.NVLINK).all()


def test_nvls_in_host_closed_form(seg):
    ranks = place(seg, 8).gpus
    t, _, _ = run(seg, "allreduce", ranks, GB, "nvls")
    assert t == pytest.approx(GB * (1 + 1 / 8) / NVL, rel=1e-6)
    t_ring, _, _ = run(seg, "allreduce", ranks, GB, "ring")
    assert t_ring == pytest.approx(2 * 7 / 8 * GB / NVL, rel=1e-6)
    ranks = place(seg, 32).gpus  # across hosts: NVLink and per-rail rings at once
    t, _, _ = run(seg, "allreduce", ranks, GB, "nvls")
    assert t == pytest.approx(max(GB * 9 / 8 / NVL, 2 * 3 / 4 * GB / 8 / NIC), rel=1e-6)


def test_btree_and_dtree():
    parent = btree(8)
    assert list(parent) == [-1, 2, 4, 2, 0, 6, 4, 6]
    assert depth(parent) == 3
    for n in (2, 5, 8, 13, 56):
        for t in dtree(n):
            assert (t < 0).sum() == 1
            assert np.bincount(t[t >= 0], minlength=n).max() <= 2
            assert depth(t) <= int(np.ceil(np.log2(n))) + 1
        t0, t1 = dtree(n)
        inner0 = np.bincount(t0[t0 >= 0], minlength=n) > 0
        inner1 = np.bincount(t1[t1 >= 0], minlength=n) > 0
        assert (inner0 & inner1).sum() <= 1  # interior in one tree, leaf in the other


def test_tree_steps_and_bandwidth(seg):
    ranks = place(seg, 8, per_host=1).gpus
    ctx = Ctx(seg)
    s, e = add_collective(ctx, "allreduce", ranks, 0.0, "tree", Params(alpha=1.0, model="alpha"))
    res = simulate(seg, ctx.dag, "ideal")
    assert res.task_finish[e] - res.task_start[s] == pytest.approx(2 * 3)  # 2 log2(8) steps
    t, _, _ = run(seg, "allreduce", ranks, 4 * GB, "tree")
    assert bandwidths("allreduce", 4 * GB, t, 8)[1] == pytest.approx(NIC * 7 / 8, rel=0.01)


def test_hd_schedule_and_closed_form(seg):
    assert len(hd_schedule("allreduce", 16)) == 8
    assert len(hd_schedule("allgather", 16)) == 4
    assert sum(b for _, b in hd_schedule("reducescatter", 16)) == pytest.approx(15 / 16)
    with pytest.raises(InputError, match="power-of-two"):
        hd_schedule("allreduce", 12)
    ranks = place(seg, 16, per_host=1).gpus
    t, ctx, _ = run(seg, "allreduce", ranks, GB, "hd")
    assert ctx.dag.num_flows == 8 * 16 * 2
    assert bandwidths("allreduce", GB, t, 16)[1] == pytest.approx(NIC, rel=1e-6)


def test_hier_phases(seg):
    ranks = place(seg, 32).gpus  # 4 hosts x 8
    t, _, _ = run(seg, "allreduce", ranks, GB, "hier")
    expect = 2 * (7 / 8) * GB / NVL + 2 * (3 / 4) * (GB / 8) / NIC
    assert t == pytest.approx(expect, rel=1e-6)


def test_pxn_keeps_alltoall_on_rails():
    f = build("hpn", segments=1)
    ranks = place(f, 32).gpus
    _, _, r1 = run(f, "alltoall", ranks, 2**24, "direct")
    _, _, r2 = run(f, "alltoall", ranks, 2**24, "pxn")
    agg = f.links.tier == LinkTier.TOR_AGG
    assert r1.link_bytes[agg].sum() > 0  # cross-rail pairs go ToR -> Agg -> ToR
    assert r2.link_bytes[agg].sum() == 0  # PXN relays over NVLink to the right rail first
    net = f.links.tier == LinkTier.NIC_TOR
    assert r2.link_bytes[net].sum() == pytest.approx(r1.link_bytes[net].sum())  # same bytes


def test_dag_well_formed_and_keys_stable(seg):
    ranks = place(seg, 32).gpus
    ctx = Ctx(seg)
    add_collective(
        ctx, "allreduce", ranks, 2**20, "ring", Params(channels=4, conns=2, model="alpha")
    )
    add_collective(
        ctx, "allreduce", ranks, 2**20, "ring", Params(channels=4, conns=2, model="alpha")
    )
    t = ctx.dag.tasks
    ctx.dag.validate(seg.num_nodes)
    assert (t.src != t.dst).all()
    assert len(np.unique(t.group)) == 2 * 4 * 2
    half = len(t.keys) // 2
    assert (t.keys[:half] == t.keys[half:]).all()  # same connections, same routing keys


def test_refusals(seg):
    with pytest.raises(InputError, match="gpus"):
        place(seg, 2000)
    with pytest.raises(InputError, match="per_host"):
        place(seg, 8, per_host=9)
    with pytest.raises(InputError, match="use ring"):
        run(seg, "allgather", place(seg, 16).gpus, 1.0, "tree")
    with pytest.raises(InputError, match="unknown algorithm"):
        run(seg, "allreduce", place(seg, 16).gpus, 1.0, "magic")
    with pytest.raises(InputError, match="conns"):
        Params(conns=0)
    assert set(ALGORITHMS) >= {"ring", "tree", "hd", "hier", "nvls", "direct", "pxn"}


def test_placement_hpn_vs_dcn():
    h, d = build("hpn"), build("dcn-plus")
    ph, pd = place(h, 448), place(d, 448)
    assert ph.hosts == pd.hosts == 56
    assert set(h.nodes.segment[ph.ranks]) == {0}
    assert (h.nodes.rail[ph.gpus] == np.arange(8)).all()
    assert np.bincount(d.nodes.segment[pd.ranks]).tolist() == [128, 128, 128, 64]
    assert not h.nodes.backup[place(h, 1024 * 2).ranks].any()


def test_multi_allreduce_mechanism():
    """Rail-local rings with host-chosen disjoint ports reach the NIC rate on HPN; on DCN+
    the Agg picks the destination's ToR (hence its NIC port) on cross-segment edges."""
    sizes = [GB]
    h = sweep(build("hpn"), "multi-allreduce", sizes, 448, routing="hpn", seed=1)
    d = sweep(build("dcn-plus"), "multi-allreduce", sizes, 448, routing="hpn", seed=1)
    bh, bd = h.results[0]["busbw_GBps"], d.results[0]["busbw_GBps"]
    assert bh > 45
    assert bd < 0.75 * bh
    assert (
        sweep(build("hpn", segments=1), "allreduce", [2**20], 16, algo="auto").results[0]["algo"]
        in ALGORITHMS
    )
