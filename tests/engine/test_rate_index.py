"""FlowState.at_least through the rate index equals a scan of every transmitting flow."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine import flows
from hpn.engine.flows import FlowState


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 400))
def test_at_least_equals_a_scan(seed, n):
    rng = np.random.default_rng(seed)
    fl = FlowState.of(np.full(n, 1e6))
    scan = flows.SCAN
    flows.SCAN = 0  # always through the index
    try:
        now = 0.0
        fl.begin(np.arange(n), now)
        rates = rng.choice([1.0, 2.0, 2.0, 3.5, 7.0], n)  # ties
        fl.set_rates(fl.active(), rates, now, every=True)
        for _ in range(40):
            now += 1e-6
            op = rng.integers(0, 3)
            act = fl.active()
            if op == 0 and len(act):  # some flows end
                fl.end(rng.choice(act, int(rng.integers(1, min(len(act), 5) + 1)), False), now)
            elif op == 1 and len(act):  # a partial re-fill changes some rates
                some = np.unique(rng.choice(act, int(rng.integers(1, len(act) + 1))))
                fl.set_rates(some, rng.choice([0.5, 2.0, 9.0], len(some)), now)
            else:  # flows begin (rate 0 until a fill gives them one)
                idle = np.flatnonzero(~fl.sending & np.isnan(fl.tx_end))
                if len(idle):
                    fl.begin(idle[: int(rng.integers(1, 4))], now)
            floor = float(rng.choice([0.4, 1.0, 2.0, 3.0, 8.0, 100.0]))
            act = fl.active()
            np.testing.assert_array_equal(fl.at_least(floor), act[fl.rate[act] >= floor])
    finally:
        flows.SCAN = scan
