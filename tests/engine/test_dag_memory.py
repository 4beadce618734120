"""The DAG's compact storage: edges sorted once and shared with the simulator's task state,
one value for scalar delays and for "no explicit paths", int32 ids, and the same runs."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine import FlowDAG, simulate
from hpn.engine.dag import ID
from hpn.engine.kernels import successors
from hpn.engine.memory import trim
from hpn.engine.state import TaskState
from hpn.topology import build


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31), st.integers(2, 30), st.integers(0, 80))
def test_sorted_edges_give_the_successors_of_the_raw_ones(seed, n, m):
    rng = np.random.default_rng(seed)
    before, after = rng.integers(0, n, m), rng.integers(0, n, m)
    d = FlowDAG()
    d.add_compute(np.zeros(n, np.int64), 1.0)
    d.add_deps(before, after)
    t = d.tasks
    want_succ, want_off = successors(before.astype(ID), after.astype(ID), n)
    if not m:
        assert t.dep_off is None
        return
    # stably sorted by predecessor: the same edges, and the CSR the task state reads
    assert (np.diff(t.dep_before) >= 0).all()
    np.testing.assert_array_equal(t.dep_after, want_succ)
    np.testing.assert_array_equal(t.dep_off, want_off)
    got = sorted(zip(t.dep_before.tolist(), t.dep_after.tolist(), strict=True))
    assert got == sorted(zip(before.tolist(), after.tolist(), strict=True))
    ts = TaskState.of(n, t.dep_before, t.dep_after, t.dep_off)
    assert ts.succ is t.dep_after  # shared, not copied
    ref = TaskState.of(n, before.astype(ID), after.astype(ID))
    np.testing.assert_array_equal(ts.succ, ref.succ)
    np.testing.assert_array_equal(ts.succ_off, ref.succ_off)
    np.testing.assert_array_equal(ts.indeg, ref.indeg)
    assert ts.indeg.dtype == ID


def test_scalar_delays_and_no_paths_are_one_value():
    d = FlowDAG()
    d.add_flows([0, 1, 2], [3, 4, 5], 1e3)
    d.add_compute([0, 1], [1e-6, 2e-6])
    t = d.tasks
    assert t.delay.strides == (0,) and t.delay.tolist() == [0.0] * 5
    assert t.has_path.strides == (0,) and not t.has_path.any()
    assert t.flow_task.dtype == ID
    d.add_compute([0], 1.0, delay=2.5)  # a different value: the parts joined
    assert d.tasks.delay.tolist() == [0.0] * 5 + [2.5]


def test_a_run_is_the_same_with_delays_edges_and_paths_given_either_way():
    f = build("fat-tree", k=4)
    runs = []
    for spread in (False, True):
        d = FlowDAG()
        a = d.add_compute([0], [1e-5])
        delay = np.full(3, 1e-6) if spread else 1e-6
        fl = d.add_flows([0, 1, 2], [15, 14, 13], 1e6, delay=delay)
        d.add_deps(a, fl)
        end = d.add_compute([0], [0.0])
        d.add_deps(fl[::-1], end)  # edges not in predecessor order
        runs.append(simulate(f, d))
    np.testing.assert_array_equal(runs[0].task_finish, runs[1].task_finish)
    np.testing.assert_array_equal(runs[0].task_start, runs[1].task_start)


def test_trim_skips_small_phases():
    assert trim(10) is False


def test_a_dag_without_flows_routes_nothing():
    d = FlowDAG()
    d.add_compute([0, 1], [1e-6, 2e-6])
    res = simulate(build("fat-tree", k=4), d)
    assert res.makespan == 2e-6 and len(res.fct) == 0
