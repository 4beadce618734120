"""Every policy against the scripted fake backend (tests/pool/fake.py), with timelines
computed by hand from its made-up durations: load 1.0 s, prefill 0.5 s, decode step 0.2 s
per batch, KV move 0.1 s per request."""

import pytest

from hpn.pool.backend import Backend, Cluster, Instance
from hpn.pool.policies import POLICIES, PolicyContext, get_policy
from hpn.pool.requests import Request
from tests.pool.fake import ScriptedBackend, predictor


def req(rid, model, t, out, inp=100):
    return Request(rid, model, t, inp, out, 10.0, 0.1)


def drive(policy, cluster, models, reqs, rates=None, **kw):
    be = ScriptedBackend(cluster, **kw)
    rates = rates or {m: 0.1 for m in models}
    pol = get_policy(policy)(PolicyContext(be, predictor(models), cluster, rates))
    be.run(reqs, pol.on_arrival)
    return be


def ops(be):
    return [(round(t, 9), op, iid) for t, op, iid, _ in be.log]


def test_aegaeon_prefill_then_decode_instance():
    r = req(0, "a", 0.0, 3)
    be = drive("aegaeon", Cluster(2, 1, 1), ["a"], [r])
    # load a on the prefill instance (1.0), prefill (0.5): first token at 1.5; KV to host
    # (0.1); load a on the decode instance (1.0) -> 2.6; KV in (0.1) -> 2.7; two steps
    assert ops(be) == [
        (0.0, "load", 0),
        (1.0, "prefill", 0),
        (1.5, "move_kv", None),
        (1.6, "load", 1),
        (2.6, "move_kv", 1),
        (2.7, "decode", 1),
    ]
    assert (r.first_t, r.done_t) == (pytest.approx(1.5), pytest.approx(3.1))
    assert be.done_count == {"load": 2, "prefill": 1, "move_kv": 2, "decode": 1}


def test_serverless_autoscaler_ticks_fcfs_gpu_and_balancer_polls():
    a, b = req(0, "a", 0.0, 3), req(1, "b", 0.1, 2)
    be = drive("serverless", Cluster(1), ["a", "b"], [a, b])
    # tick 1.0: an engine for a gets the GPU (start 1.0 -> 2.0); b's engine waits for a GPU.
    # a's balancer slept 1 s (0 -> 1.0), found no ready engine, polls again at 2.0: prefill
    # -> 2.5, two steps -> 2.9. Tick 3.0: a idle, keep-alive 0: its engine stops and b's
    # gets the GPU (3.0 -> 4.0). b's balancer polls 1.1, 2.1, 3.1, 4.1: prefill -> 4.6, one
    # step -> 4.8.
    assert ops(be) == [
        (1.0, "load", 0),
        (2.0, "prefill", 0),
        (2.5, "decode", 0),
        (3.0, "load", 0),
        (4.1, "prefill", 0),
        (4.6, "decode", 0),
    ]
    assert (a.first_t, a.done_t, b.first_t, b.done_t) == pytest.approx((2.5, 2.9, 4.6, 4.8))


def test_serverless_artifact_binds_early_and_swaps_after_the_run():
    a, b = req(0, "a", 0.0, 3), req(1, "b", 0.1, 2)
    be = drive("serverless-artifact", Cluster(1), ["a", "b"], [a, b])
    # a -> the empty worker; b bound at once behind a (its stamp 0 is the oldest): a loads
    # (1.0), prefill -> 1.5, two steps -> 1.9; then swap to b -> 2.9, prefill -> 3.4, step
    assert ops(be) == [
        (0.0, "load", 0),
        (1.0, "prefill", 0),
        (1.5, "decode", 0),
        (1.9, "load", 0),
        (2.9, "prefill", 0),
        (3.4, "decode", 0),
    ]
    assert (a.done_t, b.first_t, b.done_t) == pytest.approx((1.9, 3.4, 3.6))


def test_muxserve_interleaves_decode_of_colocated_models():
    a, b = req(0, "a", 0.0, 3), req(1, "b", 0.1, 3)
    be = drive("muxserve", Cluster(1), ["a", "b"], [a, b])
    # both placed (no load); a prefilled 0-0.5, b 0.5-1.0; then steps over two batches
    # take 0.4: tokens 2 and 3 of both at 1.4 and 1.8
    assert [op for _, op, _ in ops(be)] == ["prefill", "prefill", "decode"]
    assert (a.first_t, b.first_t) == pytest.approx((0.5, 1.0))
    assert a.done_t == b.done_t == pytest.approx(1.8)
    assert be.sink.switches == 0


def test_dedicated_serves_one_model_per_instance_and_fails_the_rest():
    a, b = req(0, "a", 0.0, 2), req(1, "b", 0.0, 2)
    be = drive("dedicated", Cluster(1), ["a", "b"], [a, b], rates={"a": 0.2, "b": 0.1})
    assert b.failed and be.sink.failures == 1
    assert a.done_t == pytest.approx(0.5 + 0.2)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_finishes_every_request_on_the_fake(policy):
    cls = get_policy(policy)
    cluster = Cluster(4, 2, 2) if cls.split else Cluster(4)
    reqs = [req(i, "ab"[i % 2], 0.3 * i, 2 + i % 3) for i in range(8)]
    be = drive(policy, cluster, ["a", "b"], reqs)
    for r in reqs:
        assert r.done_t >= 0 and not r.failed
        assert r.generated == r.output_len
    # every operation a policy started completed exactly once (the log counts starts)
    started = {}
    for _, op, _, _ in be.log:
        started[op] = started.get(op, 0) + 1
    assert be.done_count == started


def test_instance_handles_are_built_from_the_cluster():
    be = ScriptedBackend(Cluster(6, 2, 4, tp=2))
    assert [(i.iid, i.role, i.tp) for i in be.instances] == [
        (0, "prefill", 2),
        (1, "decode", 2),
        (2, "decode", 2),
    ]
    assert isinstance(be, Backend) and all(isinstance(i, Instance) for i in be.instances)
    assert not hasattr(be.instances[0], "__dict__")  # a handle has no room for backend state


def test_serverless_artifact_victim_is_the_oldest_stamp_even_while_swapping():
    reqs = [req(0, "a", 0.0, 2), req(1, "b", 0.1, 2), req(2, "c", 2.0, 2), req(3, "d", 2.5, 2)]
    be = drive("serverless-artifact", Cluster(2), ["a", "b", "c", "d"], reqs)
    # w0: a loads 0-1, prefill -> 1.5, step -> 1.7 (stamp 1.7); w1: b 0.1-1.1, -> 1.6, -> 1.8.
    # c (2.0) goes to w0 (stamp 1.7 < 1.8) and swaps 2.0-3.0; d (2.5) also goes to w0:
    # its stamp is still 1.7 while it swaps, though w1 sits idle. d waits for c's run
    # (prefill 3.0-3.5, step -> 3.7), then w0 swaps to d 3.7-4.7, prefill -> 5.2, -> 5.4.
    loads = [(t, iid, m) for t, op, iid, m in be.log if op == "load"]
    assert loads == [(0.0, 0, "a"), (0.1, 1, "b"), (2.0, 0, "c"), (pytest.approx(3.7), 0, "d")]
    assert (reqs[3].first_t, reqs[3].done_t) == pytest.approx((5.2, 5.4))


def test_serverless_artifact_scales_up_when_free_slots_drop_below_one():
    reqs = [req(i, "a", 0.01 * i, 50) for i in range(5)]
    be = drive("serverless-artifact", Cluster(2), ["a"], reqs)
    # QS = 4: the first four bind to w0 (free slots 4, 3, 2, 1 >= R = 1); the fifth sees 0
    # free slots and scales a up on the empty w1
    loads = [(round(t, 9), iid) for t, op, iid, _ in be.log if op == "load"]
    assert loads == [(0.0, 0), (0.04, 1)]
