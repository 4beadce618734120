"""`serverless-artifact` rules that the Aegaeon simulator's worker loop implies (hand-built
timelines): the LRU stamp of a worker under a prefill, failed requests that still count in
a queue's tail until the worker purges, the backend's last completed decode step, a step
ending at an arrival's millisecond, the purge that lets a request behind a failed one into
the head run, and a wait of exactly 15 s."""

import pytest

from hpn.gpus import get_gpu
from hpn.pool.backend import Cluster
from hpn.pool.costs import CostModel
from hpn.pool.models import get_model
from hpn.pool.requests import Request
from hpn.pool.simulate import simulate
from hpn.pool.simulated import SimulatedBackend
from hpn.pool.traces.base import Trace
from tests.pool.artifact_profiles import TokenSink, write_profiles

SEVEN = "qwen2.5-7b"


def trace(rows, models):
    """Rows (arrival, model, input, output); `models`: how many 7B models, or their kinds."""
    a, m, i, o = zip(*rows, strict=True)
    kinds = [SEVEN] * models if isinstance(models, int) else list(models)
    return Trace.build(a, m, i, o, [f"m{k}" for k in range(len(kinds))], kinds)


def run(rows, n_models, gpus, **kw):
    seen: list[Request] = []
    simulate(trace(rows, n_models), "serverless-artifact", gpus=gpus, observe=seen.extend, **kw)
    return sorted(seen, key=lambda r: r.arrival)


def test_step_end_is_the_last_completed_decode_step():
    c = CostModel(get_gpu("h800"))
    c.add("m0", get_model(SEVEN))
    b = SimulatedBackend(c, Cluster(gpus=1), TokenSink())
    inst = b.instances[0]
    b.place(inst, "m0")
    r = Request(0, "m0", 0.0, 100, 50, 10.0, 0.1)
    r.generated, r.kv_at = 1, inst  # prefilled
    d = c.decode_step("m0", 1, 101)  # every step of the run (the backend plans runs of steps)
    seen = {}

    def start():
        b.decode(inst, [[r]], None, lambda _d: None)
        assert b.step_end(inst) is None  # no step has ended yet
        for k, t in enumerate((0.5 * d, 2.5 * d, 10.2 * d, 3 * d)):
            b.call_at(t, lambda k=k: seen.setdefault(k, b.step_end(inst)))

    b.call_at(0.0, start)
    b.run([], lambda _r: None)
    assert seen[0] is None
    assert seen[1] == pytest.approx(2 * d, rel=1e-9)  # the 2nd step ended before 2.5 d
    assert seen[2] == pytest.approx(10 * d, rel=1e-9)
    # at exactly 3 d the 3rd step has not ended: an event scheduled before the operation
    # (every arrival) runs before its step end of the same time, as in the simulator
    assert seen[3] == pytest.approx(2 * d, rel=1e-9)
    assert b.step_end(inst) is None  # the operation is over


def test_a_prefill_under_way_does_not_refresh_the_lru_stamp():
    # w0 decodes r0 (m0); w1 decodes r1 (m1) until r2 (m1, 8,000 tokens) joins its run and
    # is prefilled. r3 (m2) arrives mid-prefill: w1's stamp is the end of the step before
    # the prefill, older than w0's last decode step, so the swap goes to w1 and r3 waits
    # behind r1's 3,000 tokens (Art Worker.do_batch sets time_last_batch_ms after a batch).
    c = CostModel(get_gpu("h800"))
    c.add("m1", get_model(SEVEN))
    p = c.prefill_time("m1", [8000])
    assert p > 0.05
    rows = [
        (0.0, 0, 100, 1000),
        (0.001, 1, 100, 3000),
        (5.0, 1, 8000, 10),
        (5.0 + p / 2, 2, 100, 10),
    ]
    r0, r1, _, r3 = run(rows, 3, gpus=2)
    assert r0.done_t < 15.0 < r1.done_t
    assert r3.first_t > r1.done_t  # behind w1's run, not w0's shorter one


def test_a_failed_request_counts_in_the_tail_until_its_worker_purges():
    # w0 decodes r0 (m0, 3,000 tokens) with r2 (m2) bound behind it; w1 served r1 (m1) and
    # at 15 s starts swapping in the 13B for r4 (1.625 s; its stamp stays at r1's end).
    # At 16 s r3 (m0) fails r2; w0 purges r2 only at its next step, so for r3 w0's tail is
    # still m2 and there is no m0 slot: r3 is bound by scale-up to the least recently used
    # w1, behind r4 and a swap, instead of joining r0's run (prefilled at the next step).
    kinds = [SEVEN, SEVEN, SEVEN, "llama-2-13b"]
    rows = [
        (0.0, 0, 100, 3000),
        (0.001, 1, 100, 10),
        (0.002, 2, 100, 10),
        (15.0, 3, 100, 10),
        (16.0, 0, 100, 10),
    ]
    r0, _, r2, _, r3 = run(rows, kinds, gpus=2)
    assert r2.failed and r2.first_t < 0
    assert r3.first_t - r3.arrival > 1.0
    # without the failed request in the way r3 joins r0's run at once
    joined = run([rows[0], rows[1], rows[3], rows[4]], kinds, gpus=2)[3]
    assert joined.first_t - joined.arrival < 0.5


def test_the_lru_choice_at_a_step_end_of_the_same_millisecond(tmp_path):
    # Whole-ms costs (swap 875 ms, prefill 20 ms, decode steps 10 ms): w0 serves r0 (1,000
    # tokens; steps end at 0.905 + 0.01 k), w1 r1 (200 tokens; 0.906 + 0.01 k, done 2.886).
    # r2 (m2) arrives at 1.006, when a step of w1 ends: for the arrival that step has not
    # ended, so w1's stamp is 0.996, older than w0's 1.005: r2 swaps in on w1 after r1.
    art = write_profiles(tmp_path, prefill=(0.0205, 0.0, 0.0), decode=(0.0105, 0.0, 0.0))
    opts = {"costs": "artifact", "artifact": str(art)}
    rows = [(0.0, 0, 100, 1000), (0.001, 1, 100, 200), (1.006, 2, 100, 10)]
    r0, r1, r2 = run(rows, 3, gpus=2, gpu="h100", options=opts)
    assert r1.done_t == pytest.approx(2.886, abs=1e-9)
    assert r2.first_t == pytest.approx(2.886 + 0.875 + 0.020, abs=1e-9)  # not after r0 (~11 s)


def test_a_request_behind_a_failed_one_joins_the_head_run_at_the_next_step():
    # One worker: r0 (m0) decodes 3,000 tokens; r1 (m1) and r2 (m0) are bound behind it.
    # r3 at 16 s fails r1 (no token for 15 s); the worker purges it at its next step, r2 is
    # then part of the head run and is prefilled there (Art do_purge, then make_batch),
    # not after r0's whole run (~28 s).
    rows = [(0.0, 0, 100, 3000), (0.001, 1, 100, 10), (5.0, 0, 100, 10), (16.0, 2, 100, 10)]
    r0, r1, r2, _ = run(rows, 3, gpus=1)
    assert r1.failed and not r2.failed and r0.done_t > 25.0
    assert 16.0 < r2.first_t < 16.1


def test_a_wait_of_exactly_fifteen_seconds_does_not_fail():
    # r1 waits behind r0's run; r2 arrives 15.000 s after it (16.007 - 1.007 is
    # 15.000000000000002 in floating point): the simulator's whole ms say 15000, not over
    rows = [(0.0, 0, 100, 3000), (1.007, 1, 100, 10), (16.007, 2, 100, 10)]
    _, r1, _ = run(rows, 3, gpus=1)
    assert not r1.failed and r1.first_t > 16.007
