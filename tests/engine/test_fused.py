"""The compiled loop of quiet departure batches (hpn.engine.steps.run_quiet) against the
loop taking every batch in Python: the same simulation, bit for bit, the same counts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine import CapacityEvents, FlowDAG, flows, simulate, steps
from hpn.engine.kernels import HAVE_NUMBA
from hpn.engine.sim import Sim
from hpn.engine.state import DONE, START, EventQueue, Lane
from hpn.topology import build
from hpn.topology.fabric import LinkTier
from hpn.workload import make_pattern
from tests.engine.test_incremental import dags
from tests.engine.test_steps import FIELDS

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba (the fast extra) not installed")


def _run(fabric, dag, fused, lane=Sim.LANE, progress=None, **kw):
    old = Sim.fused, Sim.LANE
    Sim.fused, Sim.LANE = fused, lane
    try:
        return simulate(fabric, dag, "ecmp", progress=progress, **kw)
    finally:
        Sim.fused, Sim.LANE = old


def _same(a, b):
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    if a.series is not None:
        np.testing.assert_array_equal(a.series.time, b.series.time)
        np.testing.assert_array_equal(a.series.tier, b.series.tier)
    drop = {"sim_wall_s"}
    assert {k: v for k, v in a.stats.items() if k not in drop} == {
        k: v for k, v in b.stats.items() if k not in drop
    }


@pytest.fixture
def taken(monkeypatch):
    """Batches the compiled loop took, counted."""
    count = [0]
    run = steps.run_quiet

    def counted(*args):
        out = run(*args)
        count[0] += out[2]
        return out

    monkeypatch.setattr(steps, "run_quiet", counted)
    return count


@settings(max_examples=100, deadline=None)
@given(dags(), st.sampled_from([1, 4096]), st.sampled_from([flows.SCAN, 0]), st.booleans())
def test_fused_loop_is_the_step_by_step_loop(case, lane, scan, progress):
    # random DAGs (dependencies, coupled groups, capacity events, zero-size flows), a lane
    # that must grow, the rate index or the scan, a progress callback (runs of <= 256)
    fabric, dag, seed, ev = case
    calls: list = []
    cb = (lambda done, total: calls.append((done, total))) if progress else None
    old, flows.SCAN = flows.SCAN, scan
    try:
        kw = {"seed": seed, "capacity_events": ev, "sample_interval": 1e-4}
        fast = _run(fabric, dag, True, lane, cb, **kw)
        slow = _run(fabric, dag, False, **kw)
    finally:
        flows.SCAN = old
    _same(fast, slow)
    if progress and dag.num_tasks:
        assert calls[-1][0] == dag.num_tasks and all(t == dag.num_tasks for _, t in calls)


def _wave(fabric, seed, deps):
    """A permutation of 1 MB flows, and (``deps``) a second one after the first."""
    dag = make_pattern("permutation", fabric, 1e6, seed=seed)
    if deps:
        n = dag.num_flows
        d = FlowDAG()
        first = d.add_flows(dag.tasks.src, dag.tasks.dst, dag.tasks.size)
        second = d.add_flows(dag.tasks.dst, dag.tasks.src, np.full(n, 5e5))
        d.add_deps(first[: n // 2], second[: n // 2])  # half of the second wave waits
        dag = d
    return dag


@pytest.mark.parametrize("deps", [False, True])
def test_fused_loop_takes_a_permutation_and_gives_its_results(taken, deps):
    fabric = build("fat-tree", k=8)
    dag = _wave(fabric, 3, deps)
    fast = _run(fabric, dag, True, sample_interval=2e-5)
    assert taken[0] > fast.stats["batches"] // 3  # most batches taken in the compiled loop
    slow = _run(fabric, dag, False, sample_interval=2e-5)
    _same(fast, slow)


def test_fused_loop_with_a_failed_link_is_the_step_by_step_loop(taken):
    fabric = build("hpn", segments=2)
    dag = make_pattern("permutation", fabric, 2e6, seed=1)
    uplink = int(np.flatnonzero(fabric.links.tier == LinkTier.TOR_AGG)[0])
    ev = CapacityEvents.of([(3e-5, uplink, 0.0), (3e-5, uplink ^ 1, 0.0)], reroute=True)
    fast = _run(fabric, dag, True, capacity_events=ev, sample_interval=1e-5)
    assert taken[0] > 0
    slow = _run(fabric, dag, False, capacity_events=ev, sample_interval=1e-5)
    _same(fast, slow)


def test_quiet_departures_follow_the_hand_computed_timeline(taken):
    # fat tree k=4 (100 Gbit/s links, 0.5 us each), 1 MB flows between the two hosts of an
    # edge switch (2 hops, 1 us): A (0 -> 1) alone at 12.5 GB/s ends at 80 us; B and C
    # (2 -> 3) share host 2's uplink at 6.25 GB/s: 160 us; E, F and G (6 -> 7) share at a
    # third: 240 us. Each end leaves only slower flows (no re-fill): quiet departures
    fabric = build("fat-tree", k=4)
    dag = FlowDAG()
    dag.add_flows([0, 2, 2, 6, 6, 6], [1, 3, 3, 7, 7, 7], 1e6)
    r = _run(fabric, dag, True)
    np.testing.assert_allclose(r.path_latency, np.full(6, 1e-6), rtol=1e-12)
    np.testing.assert_allclose(r.fct * 1e6, [81, 161, 161, 241, 241, 241], rtol=1e-12)
    assert r.stats["rate_computations"] == 4  # the start, then three quiet departures
    assert r.stats["full_refills"] == 1
    assert taken[0] >= 1  # B and C's end (the first and last need new candidates: Python)
    _same(r, _run(fabric, dag, False))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31))
def test_lane_entries_pop_in_heap_order(seed):
    # completions split between the heap and the lane pop in the order of one heap
    rng = np.random.default_rng(seed)
    both, heap_only = EventQueue(lane=Lane.of(2)), EventQueue()
    for _ in range(int(rng.integers(1, 30))):
        t = float(rng.choice([1.0, 2.0, 3.0]))
        ids = rng.integers(0, 100, int(rng.integers(1, 4)))
        kind = int(rng.choice([DONE, START]))
        heap_only.push(np.full(1, t), kind, ids[:1])
        lane = both.lane
        if kind == DONE and rng.random() < 0.6:  # as run_quiet queues it
            if lane.n + 1 > len(lane.t) or lane.used + 1 > len(lane.ids):
                lane.grow(1)
            i = lane.n
            lane.t[i], lane.seq[i], lane.lo[i], lane.hi[i] = t, both.seq, lane.used, lane.used + 1
            lane.ids[lane.used] = ids[0]
            lane.n, lane.used, lane.first = i + 1, lane.used + 1, min(lane.first, t)
            both.seq += 1
        else:
            both.push(np.full(1, t), kind, ids[:1])
    for now in (1.0, 2.0, 3.0):
        assert both.next_time() == heap_only.next_time()
        got = [(k, ids.tolist()) for k, ids in both.pop_due(now)]
        want = [(k, ids.tolist()) for k, ids in heap_only.pop_due(now)]
        assert got == want
    assert both.popped == heap_only.popped
    assert both.lane.n == 0 and not both.heap and both.next_time() == np.inf
