"""The compiled steps of a departure batch (hpn.engine.steps) against the numpy code they
replace: the same simulation, bit for bit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine import flows, simulate, state
from hpn.engine.kernels import HAVE_NUMBA
from hpn.engine.links import LinkLedger
from tests.engine.test_incremental import dags

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba (the fast extra) not installed")

FIELDS = (
    "task_start",
    "task_finish",
    "tx_end",
    "finish",
    "link_bytes",
    "link_busy",
    "link_peak_util",
)


def _numpy_run(fabric, dag, seed, ev):
    try:
        flows.FlowState.compiled = state.TaskState.compiled = False
        LinkLedger.compiled = False
        return simulate(fabric, dag, "ecmp", seed=seed, capacity_events=ev, sample_interval=1e-4)
    finally:
        flows.FlowState.compiled = state.TaskState.compiled = True
        LinkLedger.compiled = True


@settings(max_examples=100, deadline=None)
@given(dags(), st.sampled_from([flows.SCAN, 0]))
def test_compiled_steps_are_bit_identical_to_numpy(case, scan):
    fabric, dag, seed, ev = case
    old, flows.SCAN = flows.SCAN, scan  # 0: rates always looked up in the rate index
    try:
        fast = simulate(fabric, dag, "ecmp", seed=seed, capacity_events=ev, sample_interval=1e-4)
    finally:
        flows.SCAN = old
    ref = _numpy_run(fabric, dag, seed, ev)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name), err_msg=name)
    np.testing.assert_array_equal(fast.series.tier, ref.series.tier)
    assert fast.stats["rate_computations"] == ref.stats["rate_computations"]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 60))
def test_compiled_completion_is_the_numpy_one(seed, n):
    # random DAG edges (repeated edges too), tasks finishing in random batches: the same
    # finish times, counts left and ready successors (sorted, each once) every batch
    rng = np.random.default_rng(seed)
    m = int(rng.integers(0, 3 * n))
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    before, after = np.minimum(a, b), np.maximum(a, b)
    keep = before < after
    before, after = before[keep], after[keep]
    fast, ref = (state.TaskState.of(n, before, after) for _ in range(2))
    order = rng.permutation(n)
    cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 6))))
    try:
        for i, tasks in enumerate(np.split(order, cuts)):
            got = fast.complete(tasks.astype(np.int64), 1e-6 * i)
            state.TaskState.compiled = False
            want = ref.complete(tasks.astype(np.int64), 1e-6 * i)
            state.TaskState.compiled = True
            np.testing.assert_array_equal(got, want)
            for name in ("finish", "indeg"):
                np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name))
            assert fast.done == ref.done
    finally:
        state.TaskState.compiled = True
