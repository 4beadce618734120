"""The engine's fast paths against the full model on training iterations (2 pods; a pod with
one link failed): routing each connection once, the compiled kernels. Results must be
bit-identical, and the stats say which paths were taken."""

import numpy as np
import pytest

from hpn.engine import CapacityEvents, kernels, simulate
from hpn.engine.links import LinkLedger
from hpn.engine.sim import Sim, run_sim
from hpn.routing import make_router
from hpn.topology import build
from hpn.topology.fabric import LinkTier
from hpn.workload.collectives import Ctx
from hpn.workload.training import JobConfig
from hpn.workload.training.dag import add_job
from hpn.workload.training.planner import make_plan

JOB = {
    "name": "t",
    "model": {"name": "m", "layers": 8, "hidden": 1024, "heads": 8, "seq_len": 512,
              "vocab": 1000},
    "parallel": {"tp": 8, "pp": 2, "dp": 128, "micro_batch": 1, "global_batch": 512},
}  # fmt: skip


def _dag(fabric):
    ctx = Ctx(fabric)
    add_job(ctx, make_plan(JobConfig(**JOB)), None)
    return ctx.dag


class _PerFlow:
    """A policy wrapper that hides ``per_connection``: the engine routes every flow."""

    def __init__(self, router):
        self.inner, self.name = router, router.name

    def route(self, *a, **kw):
        return self.inner.route(*a, **kw)


def _same(a, b):
    for name in ("task_start", "task_finish", "tx_end", "finish", "link_bytes", "link_busy"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.paths.links, b.paths.links)


def _slow(monkeypatch):
    monkeypatch.setattr(kernels, "HAVE_NUMBA", False)
    monkeypatch.setattr(LinkLedger, "compiled", False)


@pytest.fixture(scope="module")
def two_pods():
    fabric = build("hpn", pods=2, segments=1)
    return fabric, _dag(fabric)


@pytest.mark.parametrize("routing", ["ecmp", "hpn"])
def test_two_pod_iteration_fast_equals_full(two_pods, routing, monkeypatch):
    fabric, dag = two_pods
    assert (fabric.nodes.pod[dag.tasks.src] != fabric.nodes.pod[dag.tasks.dst]).any()
    fast = simulate(fabric, dag, make_router(routing, seed=2))
    assert fast.stats["routed_paths"] < dag.num_flows  # each connection routed once
    _slow(monkeypatch)
    full = simulate(fabric, dag, _PerFlow(make_router(routing, seed=2)))
    assert full.stats["routed_paths"] == dag.num_flows  # the fast path not taken
    assert full.stats["kernels"] == "numpy"
    _same(fast, full)


def test_pod_with_a_failed_link_fast_equals_full(monkeypatch):
    fabric = build("hpn", segments=2)
    dag = _dag(fabric)
    uplink = int(np.flatnonzero(fabric.links.tier == LinkTier.TOR_AGG)[0])
    ev = CapacityEvents.of([(1e-4, uplink, 0.0), (1e-4, uplink ^ 1, 0.0)], reroute=True)
    fast = simulate(fabric, dag, "ecmp", seed=1, capacity_events=ev)
    _slow(monkeypatch)
    full = simulate(fabric, dag, _PerFlow(make_router("ecmp", seed=1)), capacity_events=ev)
    _same(fast, full)


def test_a_policy_counting_every_flow_is_routed_flow_by_flow(two_pods):
    fabric, dag = two_pods
    res = simulate(fabric, dag, "ideal")
    assert res.stats["routed_paths"] == dag.num_flows


class _FullRefill(Sim):
    """Every rate computation re-fills every sending flow (no partial re-fills)."""

    def _full_refill(self) -> bool:
        return True


def _close(a, b, rtol=1e-9):
    for name in ("task_start", "task_finish", "tx_end", "finish"):
        x, y = getattr(a, name), getattr(b, name)
        np.testing.assert_array_equal(np.isnan(x), np.isnan(y))
        np.testing.assert_allclose(x, y, rtol=rtol, atol=0, err_msg=name)
    np.testing.assert_allclose(a.link_bytes, b.link_bytes, rtol=rtol, atol=1e-3)


@pytest.mark.parametrize("routing", ["ecmp", "hpn"])
def test_partial_refills_equal_full_refills_on_two_pods(two_pods, routing):
    fabric, dag = two_pods
    router = make_router(routing, seed=2)
    fast = simulate(fabric, dag, router)
    full = run_sim(_FullRefill, fabric, dag, router, 0, None, None, None, None)
    st_fast, st_full = fast.stats, full.stats
    assert st_full["full_refills"] == st_full["rate_computations"]  # the fast path not taken
    assert st_fast["full_refills"] < st_fast["rate_computations"] / 10
    _close(fast, full)


def test_partial_refills_equal_full_refills_with_a_failed_link():
    fabric = build("hpn", segments=2)
    dag = _dag(fabric)
    uplink = int(np.flatnonzero(fabric.links.tier == LinkTier.TOR_AGG)[0])
    ev = CapacityEvents.of([(1e-4, uplink, 0.0), (1e-4, uplink ^ 1, 0.0)], reroute=True)
    router = make_router("ecmp", seed=1)
    fast = simulate(fabric, dag, router, capacity_events=ev)
    full = run_sim(_FullRefill, fabric, dag, router, 0, ev, None, None, None)
    assert full.stats["full_refills"] == full.stats["rate_computations"]
    _close(fast, full)


def test_connections_group_flows_by_source_destination_and_key():
    from hpn.engine.paths import connections

    src = np.array([0, 1, 0, 2, 0, 1])
    dst = np.array([1, 0, 1, 3, 1, 0])
    key = np.array([7, 7, 7, 7, 8, 7])  # key 7 shared by three pairs: the slow path
    first, inv = connections(src, dst, key, 4)
    np.testing.assert_array_equal(first, [0, 1, 3, 4])
    np.testing.assert_array_equal(inv, [0, 1, 0, 2, 3, 1])
    first, inv = connections(src, dst, np.array([5, 6, 5, 9, 8, 6]), 4)  # keys per pair
    np.testing.assert_array_equal(first, [0, 1, 3, 4])
    np.testing.assert_array_equal(inv, [0, 1, 0, 2, 3, 1])


def test_progress_is_reported_up_to_every_task(two_pods):
    from hpn.workload.training import train

    fabric, dag = two_pods
    seen: list[tuple[int, int]] = []
    simulate(fabric, dag, "ecmp", progress=lambda done, total: seen.append((done, total)))
    done = [d for d, _ in seen]
    assert done == sorted(done) and seen[-1] == (dag.num_tasks, dag.num_tasks)
    calls: list[tuple[int, int]] = []
    train(fabric, [JobConfig(**JOB)], "ecmp", progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (dag.num_tasks, dag.num_tasks)  # the iteration's simulation
