"""Hand-computed timelines for the Aegaeon artifact details of aegaeon-facts §4 and the
simulated ServerlessLLM loader of §10."""

import math

import pytest

from hpn.gpus import get_gpu
from hpn.pool.backend import Cluster
from hpn.pool.costs import CostModel
from hpn.pool.metrics import Recorder
from hpn.pool.models import get_model
from hpn.pool.policies.aegaeon import Aegaeon
from hpn.pool.policies.base import PolicyContext
from hpn.pool.predictor import Predictor
from hpn.pool.requests import Request
from hpn.pool.simulated import SimulatedBackend

SEVEN = "qwen2.5-7b"
L = 100


def setup(n_models=1, prefill=0, decode=1):
    cost = CostModel(get_gpu("h800"))
    for k in range(n_models):
        cost.add(f"m{k}", get_model(SEVEN))
    be = SimulatedBackend(cost, Cluster(prefill + decode, prefill, decode, 1), Recorder())
    return cost, be


def aegaeon(cost, be, rates):
    return Aegaeon(PolicyContext(be, Predictor.from_cost(cost), be.cluster, rates))


def prefilled(rid, model, out):
    """A request whose first token (prefill) came out at t = 0."""
    r = Request(rid, model, 0.0, L, out, 10.0, 0.1)
    r.emit(0.0, 0.0, 1)
    return r


def test_quota_counts_from_the_end_of_the_first_step():
    cost, be = setup()
    inst = be.instances[0]
    be.place(inst, "m0")
    r = prefilled(0, "m0", 1000)
    d = cost.decode_step("m0", 1, L + 1)
    done = []
    be.decode(inst, [[r]], 2.5 * d, lambda d: done.append(d.t))
    be.run([], None)
    # first step (d), then the quota 2.5 d rounded up to whole steps: 1 + 3 steps
    assert r.generated == 1 + 4
    assert done == [pytest.approx(4 * d)]


def test_request_joins_the_running_batch_at_its_next_step():
    cost, be = setup()
    inst = be.instances[0]
    be.place(inst, "m0")
    r1, r2 = prefilled(0, "m0", 1000), prefilled(1, "m0", 1000)
    r2.kv_at = inst
    d1 = cost.decode_step("m0", 1, L + 1)
    done = []
    be.decode(inst, [[r1]], 1.0, lambda d: done.append(d.t))
    be.call_at(2.5 * d1, lambda: be.join(inst, [r2]))
    be.run([], None)
    # r1 alone for 3 steps; both from 3 d1 on with the two-sequence step time
    d2 = cost.decode_step("m0", 2, (L + 4) + (L + 1))
    n2 = math.ceil((d1 + 1.0 - 3 * d1) / d2 - 1e-9)
    assert done == [pytest.approx(3 * d1 + n2 * d2)]
    assert r1.generated == 1 + 3 + n2 and r2.generated == 1 + n2
    assert r1.last_t == r2.last_t == pytest.approx(3 * d1 + n2 * d2)


def test_turn_swaps_its_kv_in_before_preloading_the_next_model():
    cost, be = setup(n_models=2)
    dec = be.instances[0]
    be.place(dec, "m0")
    pol = aegaeon(cost, be, {"m0": 0.1, "m1": 0.1})
    a, c = prefilled(0, "m0", 3), prefilled(1, "m1", 1000)
    pol._to_decode([a, c])
    be.run([], None, until=5.0)
    k1, k2 = cost.kv_transfer_time("m0", L + 1), cost.kv_transfer_time("m0", L + 2)
    d1, d2 = cost.decode_step("m0", 1, L + 1), cost.decode_step("m0", 1, L + 2)
    # the lone batch of a swaps in (k1) and yields after one step to the round {a, c};
    # a is swapped out (k2) and back in (k2: the copy in waits for its blocks to leave,
    # A §5.3), m1 is pre-loaded behind it, not before it
    assert a.done_t == pytest.approx(k1 + d1 + 2 * k2 + d2)
    assert cost.switch_time("m1") > 10 * k2


def test_serverless_artifact_loads_at_the_artifact_simulators_speed():
    from hpn.pool.simulate import simulate
    from hpn.pool.traces.base import Trace

    t = Trace.build([0.0], [0], [L], [2], ["m0"], ["llama-2-13b"])
    res = simulate(t, "serverless-artifact", gpus=1)
    cost = CostModel(get_gpu("h800"))
    cost.add("m0", get_model("llama-2-13b"))
    load = cost.weights("m0") / 16e9
    assert load > cost.switch_time("m0")  # slower than Aegaeon's optimized path
    assert res.ttft_p50_s == pytest.approx(load + cost.prefill_time("m0", [L]))


def test_new_request_joins_the_decoding_batch_of_its_model():
    cost, be = setup()
    dec = be.instances[0]
    be.place(dec, "m0")
    pol = aegaeon(cost, be, {"m0": 0.1})
    a, b = prefilled(0, "m0", 1000), prefilled(1, "m0", 2)
    a.kv_at = dec  # resident: the lone batch decodes at once
    pol._to_decode([a])
    be.call_at(0.05, pol._to_decode, [b])
    be.run([], None)  # tokens are recorded when the lone batch's operation ends (closed form)
    d1 = cost.decode_step("m0", 1, L + 1)
    k = math.ceil((0.05 + cost.kv_transfer_time("m0", L + 1)) / d1 - 1e-9)
    d2 = cost.decode_step("m0", 2, (L + 1 + k) + (L + 1))
    # b's KV is swapped in, and b decodes from the next step of a's running batch
    assert b.done_t == pytest.approx(k * d1 + d2)
