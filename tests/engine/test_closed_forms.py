"""The engine against closed forms: one flow, fair sharing, two bottlenecks, ring AllReduce."""

import numpy as np
import pytest

from hpn.engine import FlowDAG, simulate
from hpn.routing import Paths
from hpn.topology import build
from hpn.topology.assembly import Assembly
from hpn.topology.fabric import LinkTier, NodeKind
from tests.engine.fabrics import star


def test_one_flow_is_size_over_capacity_plus_latency():
    f = star(2, capacity=40e9, latency=2e-6)
    dag = FlowDAG()
    dag.add_flows(0, 1, 5e6)
    r = simulate(f, dag)
    assert r.fct[0] == pytest.approx(5e6 * 8 / 40e9 + 2 * 2e-6, rel=1e-12)
    assert r.makespan == pytest.approx(r.finish[0])
    assert r.mean_rate[0] == pytest.approx(8 * 5e6 / r.fct[0])


@pytest.mark.parametrize("n", [2, 3, 7])
def test_n_equal_flows_share_one_link_equally(n):
    f = star(n + 1, capacity=100e9, latency=0.0)
    dag = FlowDAG()
    dag.add_flows(np.arange(n), n, 1e6)  # incast: all share the ToR -> host n link
    r = simulate(f, dag)
    np.testing.assert_allclose(r.fct, n * 1e6 * 8 / 100e9, rtol=1e-12)
    down = f.link_between(n + 1, n)
    assert r.link_busy[down] == pytest.approx(r.makespan)
    assert r.link_peak_util[down] == pytest.approx(1.0)
    assert r.link_bytes[down] == pytest.approx(n * 1e6)


def two_bottlenecks(c1: float, c2: float):
    """s0 -(c1)- A -(c2)- B. f0: s0->A->B->d0, f1: s0->A->d1, f2, f3: s2, s3 (on A) -> B."""
    asm = Assembly()
    h = asm.add_nodes(NodeKind.HOST, 7, host=np.arange(7))  # s0 d1 s2 s3 | d0 d2 d3
    a, b = asm.add_nodes(NodeKind.TOR, 2)
    big = 1e12
    asm.add_links([h[0]], [a], c1, 0.0, LinkTier.NIC_TOR, port=0)
    asm.add_links(h[1:4], [a] * 3, big, 0.0, LinkTier.NIC_TOR, port=0)
    asm.add_links(h[4:], [b] * 3, big, 0.0, LinkTier.NIC_TOR, port=0)
    asm.add_links([a], [b], c2, 0.0, LinkTier.TOR_AGG)
    return asm.fabric(None)


def test_a_flow_crossing_two_bottlenecks_gets_the_smaller_share():
    c1, c2, size = 100e9, 90e9, 1e6
    f = two_bottlenecks(c1, c2)
    dag = FlowDAG()
    dag.add_flows([0, 0, 2, 3], [4, 1, 5, 6], size)
    r = simulate(f, dag)
    r0 = min(c1 / 2, c2 / 3)  # 30G: A->B is f0's bottleneck
    r1 = c1 - r0  # f1 takes what f0 leaves on s0->A
    assert r.fct[0] == pytest.approx(size * 8 / r0, rel=1e-9)
    assert r.fct[1] == pytest.approx(size * 8 / r1, rel=1e-9)
    np.testing.assert_allclose(r.fct[2:], size * 8 / r0, rtol=1e-9)


def test_rates_rise_when_a_competitor_finishes():
    f = star(3, capacity=100e9, latency=0.0)
    dag = FlowDAG()
    dag.add_flows([0, 1], [2, 2], [1e6, 3e6])  # share ToR->2: 50G each until the 1MB ends
    r = simulate(f, dag)
    t1 = 2 * 1e6 * 8 / 100e9
    assert r.fct[0] == pytest.approx(t1)
    assert r.fct[1] == pytest.approx(t1 + 2e6 * 8 / 100e9)


def ring_allreduce(fabric, ring, total: float, coupled: bool) -> FlowDAG:
    """Ring AllReduce of ``total`` bytes: one coupled group, or 2(n-1) dependent steps."""
    n = len(ring)
    nxt = np.roll(ring, -1)
    dag = FlowDAG()
    if coupled:
        dag.add_flows(ring, nxt, 2 * (n - 1) / n * total, coupled=True)
        return dag
    prev = None
    for _ in range(2 * (n - 1)):
        ids = dag.add_flows(ring, nxt, total / n)
        if prev is not None:  # GPU i forwards in step k the chunk it received in step k-1
            dag.add_deps(np.roll(prev, 1), ids)
        prev = ids
    return dag


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_allreduce_matches_closed_form_both_ways(n):
    fabric = build("fat-tree", k=4, speed=100e9, link_latency=0.0)  # non-blocking
    ring = np.arange(n)
    total = 64e6
    expect = 2 * (n - 1) / n * total * 8 / 100e9
    group = simulate(fabric, ring_allreduce(fabric, ring, total, True), seed=3)
    steps = simulate(fabric, ring_allreduce(fabric, ring, total, False), seed=3)
    assert group.makespan == pytest.approx(expect, rel=1e-2)
    assert group.makespan == pytest.approx(expect, rel=1e-9)  # no latency: exact
    assert steps.makespan == pytest.approx(group.makespan, rel=1e-9)


def test_ring_with_latency_steps_pay_it_per_step():
    fabric = build("fat-tree", k=4, speed=100e9)  # 500 ns per link
    n, total = 8, 64e6
    ring = np.arange(n)
    expect = 2 * (n - 1) / n * total * 8 / 100e9
    group = simulate(fabric, ring_allreduce(fabric, ring, total, True))
    steps = simulate(fabric, ring_allreduce(fabric, ring, total, False))
    assert group.makespan == pytest.approx(expect, rel=1e-2)
    assert steps.makespan == pytest.approx(expect, rel=1e-2)
    assert steps.makespan > group.makespan  # latency on each of the 2(n-1) steps


def test_coupled_group_moves_at_its_slowest_edge():
    f = star(4, capacity=100e9, latency=0.0)
    dag = FlowDAG()
    dag.add_flows([0, 1], [1, 2], 1e6, coupled=True)  # ring edges 0->1, 1->2
    dag.add_flows(3, 2, 1e6)  # competes with the 1->2 edge only
    r = simulate(f, dag)
    # ToR->2 carries one group member and the solo flow: 50G each; the group's other edge
    # is held to 50G too (it could run at 100G on its own).
    np.testing.assert_allclose(r.fct, 1e6 * 8 / 50e9, rtol=1e-9)


def test_explicit_paths_are_used_and_checked():
    f = star(3, capacity=100e9, latency=0.0)
    up, down = f.link_between(0, 3), f.link_between(3, 2)
    dag = FlowDAG()
    dag.add_flows(0, 2, 1e6, paths=Paths.from_lists([[up, down]]))
    r = simulate(f, dag)
    assert list(r.paths[0]) == [up, down]
    bad = FlowDAG()
    bad.add_flows(0, 2, 1e6, paths=Paths.from_lists([[up, f.link_between(3, 1)]]))
    with pytest.raises(Exception, match="not a walk"):
        simulate(f, bad)
