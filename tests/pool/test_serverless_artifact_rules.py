"""`serverless-artifact` rules that the Aegaeon simulator's worker loop implies (hand-built
timelines): the LRU stamp of a worker under a prefill, failed requests that still count in
a queue's tail until the worker purges, and the backend's last completed decode step."""

import pytest

from hpn.gpus import get_gpu
from hpn.pool.backend import Cluster
from hpn.pool.costs import CostModel
from hpn.pool.models import get_model
from hpn.pool.requests import Request
from hpn.pool.simulate import simulate
from hpn.pool.simulated import SimulatedBackend
from hpn.pool.traces.base import Trace

SEVEN = "qwen2.5-7b"


def trace(rows, n_models):
    a, m, i, o = zip(*rows, strict=True)
    names = [f"m{k}" for k in range(n_models)]
    return Trace.build(a, m, i, o, names, [SEVEN] * n_models)


def run(rows, n_models, gpus):
    seen: list[Request] = []
    simulate(trace(rows, n_models), "serverless-artifact", gpus=gpus, observe=seen.extend)
    return sorted(seen, key=lambda r: r.arrival)


class _Sink:
    def tokens(self, *a):
        pass

    def switched(self, *a):
        pass

    def busy(self, *a):
        pass

    def failed(self, *a):
        pass


def test_step_end_is_the_last_completed_decode_step():
    c = CostModel(get_gpu("h800"))
    c.add("m0", get_model(SEVEN))
    b = SimulatedBackend(c, Cluster(gpus=1), _Sink())
    inst = b.instances[0]
    b.place(inst, "m0")
    r = Request(0, "m0", 0.0, 100, 50, 10.0, 0.1)
    r.generated, r.kv_at = 1, inst  # prefilled
    d = c.decode_step("m0", 1, 101)  # every step of the run (the backend plans runs of steps)
    seen = {}

    def start():
        b.decode(inst, [[r]], None, lambda _d: None)
        assert b.step_end(inst) is None  # no step has ended yet
        for k, t in enumerate((0.5 * d, 2.5 * d, 10.2 * d)):
            b.call_at(t, lambda k=k: seen.setdefault(k, b.step_end(inst)))

    b.call_at(0.0, start)
    b.run([], lambda _r: None)
    assert seen[0] is None
    assert seen[1] == pytest.approx(2 * d, rel=1e-9)  # the 2nd step ended before 2.5 d
    assert seen[2] == pytest.approx(10 * d, rel=1e-9)
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
    # r2 (m2) is bound behind r0's long run on w0 and fails at 16 s, when r3 (m0) arrives.
    # w0 is decoding: it purges r2 only at its next step, so for r3 w0's tail is still m2
    # and there is no m0 slot: r3 is bound by scale-up behind a whole run instead of
    # joining r0's run (where it would be prefilled at the next step).
    rows = [(0.0, 0, 100, 3000), (0.001, 1, 100, 3000), (0.002, 2, 100, 10), (16.0, 0, 100, 10)]
    r0, _, r2, r3 = run(rows, 3, gpus=2)
    assert r2.failed and r2.first_t < 0
    assert r3.first_t - r3.arrival > 5.0
    # without the failed request in the way r3 joins r0's run at once
    joined = run([rows[0], rows[1], rows[3]], 2, gpus=2)[2]
    assert joined.first_t - joined.arrival < 0.5
