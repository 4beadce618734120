"""`aegaeon-artifact` prefill rules (the Aegaeon simulator's MixServe, hand-built timelines;
each fails on `aegaeon`'s Alg 1 dispatch or on the rule before it): a request joins a queued
group of its model with no size limit, the least-loaded prefill instance is the one with the
fewest queued groups (work under way not counted), a model switch costs the swap less the
prefill time run since the last switch (at least 10 ms), and an idle instance takes its
request only after the arrivals of the same millisecond."""

import pytest

from hpn.pool.requests import Request
from hpn.pool.simulate import simulate
from hpn.pool.traces.base import Trace
from tests.pool.artifact_profiles import write_profiles

SEVEN = "qwen2.5-7b"
SWAP = 0.875  # the simulator's 7B: 14 GB at 16 GB/s


def trace(rows, models):
    a, m, i, o = zip(*rows, strict=True)
    return Trace.build(a, m, i, o, [f"m{k}" for k in range(models)], [SEVEN] * models)


def run(rows, n_models, prefill_gpus=1, dispatch="artifact", prefill=0.0205, tmp=None):
    """First-token times by arrival order, on whole-ms costs (prefill `prefill` s each)."""
    art = write_profiles(tmp, prefill=(prefill, 0.0, 0.0), decode=(0.0105, 0.0, 0.0))
    opts = {"costs": "artifact", "artifact": str(art), "prefill_dispatch": dispatch}
    seen: list[Request] = []
    simulate(
        trace(rows, n_models),
        "aegaeon-artifact",
        gpu="h100",
        prefill_gpus=prefill_gpus,
        decode_gpus=1,
        options=opts,
        observe=seen.extend,
    )
    return [r.first_t for r in sorted(seen, key=lambda r: r.arrival)]


def test_a_request_joins_a_queued_group_of_its_model_past_eight(tmp_path):
    # One prefill instance swapping in m0 for r0; r0..r7 (m0) make one group, r8 (m1) opens
    # a second, r9 (m0) arrives last. The simulator's MixServe joins r9 to the m0 group (no
    # size limit: its KV fits), so it is prefilled before r8 and its switch; Alg 1 closes a
    # group at 8 requests and r9 waits behind r8's group.
    rows = [(0.001 * k, 0, 100, 10) for k in range(8)] + [(0.008, 1, 100, 10), (0.009, 0, 100, 10)]
    first = run(rows, 2, tmp=tmp_path)
    assert first[9] < first[8]
    assert first[9] == pytest.approx(SWAP + 9 * 0.020, abs=1e-9)
    alg1 = run(rows, 2, dispatch="alg1", tmp=tmp_path)
    assert alg1[9] > alg1[8]


def test_the_least_loaded_instance_has_the_fewest_queued_groups(tmp_path):
    # Two prefill instances. r0 (m0) goes to P0, which pops it at once and swaps: P0's queue
    # is empty again. r1 (m1) then goes to P0 too (0 queued groups, the first on ties),
    # behind r0, though P1 is idle; Alg 1 counts P0's switch under way and picks P1.
    rows = [(0.0, 0, 100, 10), (0.001, 1, 100, 10)]
    first = run(rows, 2, prefill_gpus=2, tmp=tmp_path)
    # r0 at 0.875 + 0.020; r1's switch credits r0's 20 ms prefill: 0.855 s
    assert first[0] == pytest.approx(SWAP + 0.020, abs=1e-9)
    assert first[1] == pytest.approx(SWAP + 0.020 + (SWAP - 0.020) + 0.020, abs=1e-9)
    alg1 = run(rows, 2, prefill_gpus=2, dispatch="alg1", tmp=tmp_path)
    assert alg1[1] < 0.001 + SWAP + 0.1


def test_a_switch_is_credited_the_prefill_time_since_the_last_switch(tmp_path):
    # One prefill instance, 500 ms prefills. r0 (m0) is prefilled 0.875-1.375 s; r1 (m1)
    # arrives at 1.5 s, with nothing to pre-load before it: the simulator's switch costs the
    # 875 ms swap less the 500 ms prefilled since the last switch; Alg 1 loads m1 in full.
    rows = [(0.0, 0, 100, 10), (1.5, 1, 100, 10)]
    first = run(rows, 2, prefill=0.5005, tmp=tmp_path)
    assert first[1] == pytest.approx(1.5 + (SWAP - 0.5) + 0.5, abs=1e-9)
    alg1 = run(rows, 2, prefill=0.5005, dispatch="alg1", tmp=tmp_path)
    assert alg1[1] == pytest.approx(1.5 + SWAP + 0.5, abs=1e-6)
    # two prefills (1 s) exceed the swap: the switch for r2 (m1, at 2 s) costs the 10 ms floor
    rows = [(0.0, 0, 100, 10), (0.001, 0, 100, 10), (2.0, 1, 100, 10)]
    first = run(rows, 2, prefill=0.5005, tmp=tmp_path)
    assert first[2] == pytest.approx(2.0 + 0.010 + 0.5, abs=1e-9)


def test_an_idle_instance_takes_its_request_after_the_arrivals_of_the_millisecond(tmp_path):
    # Two prefill instances, r0 (m0) and r1 (m1) at the same millisecond. r0 opens a group
    # on P0, which is idle; P0 takes r0 only after r1 is dispatched, so for r1 P0 still has
    # one queued group and r1 goes to the idle P1: both are prefilled after one swap. Taken
    # at once (the queue empty again), r1 would go to P0 behind r0 and a second swap.
    rows = [(0.0, 0, 100, 10), (0.0, 1, 100, 10)]
    first = run(rows, 2, prefill_gpus=2, tmp=tmp_path)
    assert first == pytest.approx([SWAP + 0.020, SWAP + 0.020], abs=1e-9)


def test_aegaeon_keeps_alg1_by_default():
    from hpn.pool.policies import get_policy

    assert get_policy("aegaeon").options()["prefill_dispatch"] == "alg1"
    assert get_policy("aegaeon-artifact").options()["prefill_dispatch"] == "artifact"
