"""The compiled steps of a departure batch (hpn.engine.steps) against the numpy code they
replace: the same simulation, bit for bit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine import simulate, state
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
        state.FlowState.compiled = False
        LinkLedger.compiled = False
        return simulate(fabric, dag, "ecmp", seed=seed, capacity_events=ev, sample_interval=1e-4)
    finally:
        state.FlowState.compiled = True
        LinkLedger.compiled = True


@settings(max_examples=100, deadline=None)
@given(dags(), st.sampled_from([state.SCAN, 0]))
def test_compiled_steps_are_bit_identical_to_numpy(case, scan):
    fabric, dag, seed, ev = case
    old, state.SCAN = state.SCAN, scan  # 0: rates always looked up in the rate index
    try:
        fast = simulate(fabric, dag, "ecmp", seed=seed, capacity_events=ev, sample_interval=1e-4)
    finally:
        state.SCAN = old
    ref = _numpy_run(fabric, dag, seed, ev)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name), err_msg=name)
    np.testing.assert_array_equal(fast.series.tier, ref.series.tier)
    assert fast.stats["rate_computations"] == ref.stats["rate_computations"]
