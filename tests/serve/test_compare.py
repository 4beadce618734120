"""The simulator fed an engine profile: a hand-computed timeline (no torch needed)."""

from __future__ import annotations

import pytest

from hpn.pool.backend import Cluster
from hpn.pool.policies.base import Slo
from hpn.pool.traces.base import Trace
from hpn.serve.compare import EngineCost, engine_trace, predict


def _profile():
    return {
        "device": {"kind": "cpu", "memory_bytes": 1 << 30, "link_bps": 1e8},
        "fits": {
            "a": {"prefill": [0.002, 1e-5, 0.0], "decode": [0.004, 0.0, 1e-4]},
            "b": {"prefill": [0.002, 1e-5, 0.0], "decode": [0.004, 0.0, 1e-4]},
        },
        "switch_s": {"a": 0.25, "b": 0.5},
        "cold_switch_s": {"a": 1.25, "b": 1.5},
        "weights": {"a": 2.5e7, "b": 5e7},
    }


def test_engine_cost_reads_the_profile():
    c = EngineCost(_profile(), {"a": 1000.0, "b": 2000.0})
    assert c.switch_time("b") == 0.5 and c.device_copy_time("a") == 0.0
    # whole blocks of 16 tokens, as the engine copies them: 100 tokens move as 112
    assert c.kv_transfer_time("a", 100) == pytest.approx(112 * 1000 / 1e8)
    assert c.prefill_time("a", [10]) == pytest.approx(0.002 + 1e-4)
    assert c.memory_budget(1) == 1 << 30


def test_a_system_that_starts_an_engine_pays_the_cold_switch():
    tr = Trace.build([0.0], [0], [10], [2], ["a"], ["engine"])
    res = predict(tr, "serverless", Cluster(1, 0, 0, 1), _profile(), {"a": 1000.0}, Slo(10.0, 1.0))
    assert res.finished == 1
    assert res.ttft_p50_s >= 1.25  # the cold scale-up, not the 0.25 s copy


def test_predict_follows_the_fitted_timeline():
    tr = Trace.build([0.0], [0], [10], [3], ["a"], ["engine"])
    res = predict(tr, "dedicated", Cluster(1, 0, 0, 1), _profile(), {"a": 1000.0}, Slo(1.0, 0.1))
    # first token after the prefill (a + b*L), then two decode steps (a + c*B) each
    prefill, step = 0.002 + 10 * 1e-5, 0.004 + 1e-4
    assert res.finished == 1
    assert res.ttft_p50_s == pytest.approx(prefill)
    assert res.tbt_p50_s == pytest.approx(step)
    assert res.span_s == pytest.approx(prefill + 2 * step)


def test_aegaeon_prediction_pays_the_profiled_switches():
    tr = Trace.build([0.0, 0.0], [0, 1], [10, 10], [2, 2], ["a", "b"], ["engine"] * 2)
    res = predict(
        tr, "aegaeon", Cluster(2, 1, 1, 1), _profile(), {"a": 1e3, "b": 1e3}, Slo(10.0, 1.0)
    )
    assert res.finished == 2
    assert res.switches >= 3  # a and b on the prefill instance, at least one on the decoder
    # prefill instance: load a (0.25 s), prefill a while b pre-loads behind it (0.5 s more),
    # b made resident without a copy, prefill b: TTFTs 0.2521 and 0.7521 (median of two)
    p = 0.002 + 10 * 1e-5
    assert res.ttft_p50_s == pytest.approx(((0.25 + p) + (0.75 + p)) / 2)


def test_engine_trace_maps_models_in_turn_and_clips():
    tr = Trace.build(
        [0.0, 1.0, 2.0], [0, 1, 2], [5, 900, 7], [3, 400, 2], ["x", "y", "z"], ["k"] * 3
    )
    e = engine_trace(tr, ["a", "b"], 256, 64)
    assert e.names == ("a", "b")
    assert e.model.tolist() == [0, 1, 0]
    assert e.input_len.tolist() == [5, 256, 7] and e.output_len.tolist() == [3, 64, 2]


def _shared_profile():
    p = _profile()
    p["device"]["concurrent"] = 2
    # alone an instance runs twice as fast as with both computing (the grid's concurrency)
    p["contention"] = {"k": [1, 2], "prefill": [0.5, 1.0], "decode": [0.5, 1.0]}
    return p


def _timeline(profile, tr, cluster, policy="dedicated", options=None):
    logs: list = []
    predict(
        tr, policy, cluster, profile, {"a": 1e3, "b": 1e3}, Slo(10.0, 1.0), timeline=logs,
        options=options,
    )  # fmt: skip
    return {r["rid"]: r for r in logs[0]["requests"]}, logs[0]["events"]


def test_shared_device_charges_steps_by_instances_computing():
    # r0 (model a, instance 0) at t=0: 10-token prompt, 4 tokens; r1 (b, instance 1) at
    # t=0.004, 2 tokens. Base prefill p = 0.0021 s, base step s = 0.0041 s.
    tr = Trace.build([0.0, 0.004], [0, 1], [10, 10], [4, 2], ["a", "b"], ["engine"] * 2)
    reqs, events = _timeline(_shared_profile(), tr, Cluster(2, 0, 0, 1))
    p, s = 0.002 + 10 * 1e-5, 0.004 + 1e-4
    # r0 alone: prefill p/2 -> 0.00105; steps s/2 end at 0.0031 and 0.00515 (r1's prefill
    # starts at 0.004, inside the second step: r0 is re-planned at its boundary 0.00515);
    # the third step with both computing: 0.00515 + s = 0.00925
    assert reqs[0]["first_t"] == pytest.approx(p / 2)
    assert reqs[0]["done_t"] == pytest.approx(p / 2 + 2 * (s / 2) + s)
    # r1: prefill with both computing, p -> 0.0061; its one step starts with r0 still
    # decoding: s -> 0.0102 (r0 ends at 0.00925, but a step is charged when it starts)
    assert reqs[1]["first_t"] == pytest.approx(0.004 + p)
    assert reqs[1]["done_t"] == pytest.approx(0.004 + p + s)
    kinds = [e["ev"] for e in events]
    assert kinds.count("prefill") == 2 and kinds.count("decode") == 2


def test_without_contention_data_instances_are_independent():
    tr = Trace.build([0.0, 0.004], [0, 1], [10, 10], [4, 2], ["a", "b"], ["engine"] * 2)
    reqs, _ = _timeline(_profile(), tr, Cluster(2, 0, 0, 1))
    p, s = 0.002 + 10 * 1e-5, 0.004 + 1e-4
    assert reqs[0]["done_t"] == pytest.approx(p + 3 * s)
    assert reqs[1]["done_t"] == pytest.approx(0.004 + p + s)


def test_timeline_logs_serverless_scale_ups():
    # one request: the autoscaler's tick at 1 s starts an engine (evict + cold load 1.25 s),
    # the balancer's polls at 1 s, 2 s, 3 s find it ready at 2.25 s -> prefill at 3 s
    tr = Trace.build([0.0], [0], [10], [2], ["a"], ["engine"])
    reqs, events = _timeline(_profile(), tr, Cluster(1, 0, 0, 1), "serverless")
    loads = [(e["t"], e["ev"]) for e in events if e["ev"].startswith("load")]
    assert loads == [(1.0, "load"), (pytest.approx(2.25), "load-done")]
    assert [e["ev"] for e in events if e["t"] <= 1.0] == ["evict", "load"]
    assert reqs[0]["first_t"] == pytest.approx(3.0 + 0.002 + 10 * 1e-5)


def test_shared_device_counts_a_cold_scale_up_as_compute():
    # serverless (engines started afresh): alone the cold load takes 0.5 x 1.25 s
    p = _shared_profile()
    p["contention"]["load"] = [0.5, 1.0]
    tr = Trace.build([0.0], [0], [10], [2], ["a"], ["engine"])
    _, events = _timeline(p, tr, Cluster(1, 0, 0, 1), "serverless")
    loads = [(e["t"], e["ev"]) for e in events if e["ev"].startswith("load")]
    assert loads == [(1.0, "load"), (pytest.approx(1.0 + 0.625), "load-done")]


def test_a_configured_start_up_is_charged_before_the_copy():
    # startup 3 s: the cold load lasts max(build + copy 1.25 s, 3 s + copy 0.25 s) = 3.25 s
    tr = Trace.build([0.0], [0], [10], [2], ["a"], ["engine"])
    _, events = _timeline(_profile(), tr, Cluster(1, 0, 0, 1), "serverless", {"startup": 3})
    loads = [(e["t"], e["ev"]) for e in events if e["ev"].startswith("load")]
    assert loads == [(1.0, "load"), (pytest.approx(4.25), "load-done")]
    # shorter than the build: the build as measured
    _, events = _timeline(_profile(), tr, Cluster(1, 0, 0, 1), "serverless", {"startup": 0.5})
    loads = [(e["t"], e["ev"]) for e in events if e["ev"].startswith("load")]
    assert loads == [(1.0, "load"), (pytest.approx(2.25), "load-done")]


def test_a_kv_swapped_straight_back_in_waits_for_its_swap_out():
    """A transfer waits for the last transfer of its blocks (A §5.3; the engine's
    `move_kv` does): out over the d2h link, then in over the h2d link, not both at once."""
    from hpn.pool.metrics import Recorder
    from hpn.pool.requests import Request
    from hpn.pool.simulated import SimulatedBackend

    be = SimulatedBackend(EngineCost(_profile(), {"a": 625.0}), Cluster(1, 0, 0, 1), Recorder())
    inst = be.instances[0]
    r = Request(0, "a", 0.0, 1600, 2, 10.0, 1.0)  # 1e6 bytes at 1e8 B/s: 0.01 s a way
    q = Request(1, "a", 0.0, 800, 2, 10.0, 1.0)  # another request's KV: 0.005 s
    landed: list[tuple[str, float]] = []

    def swap(_r):
        be.move_kv([r], inst, None, lambda d: landed.append(("out", d.t)))
        be.move_kv([r], None, inst, lambda d: landed.append(("in", d.t)))
        be.move_kv([q], None, inst, lambda d: landed.append(("other", d.t)))

    be.run([r], swap)
    # out 0 -> 0.01; in from 0.01 (not 0: the blocks are still leaving) -> 0.02; the other
    # request's copy in waits for nothing of its own, only the h2d link: 0.02 -> 0.025
    assert [k for k, _ in landed] == ["out", "in", "other"]
    assert [t for _, t in landed] == pytest.approx([0.01, 0.02, 0.025])


def test_the_first_decode_after_a_scale_up_warms_up_first():
    """The profile's `decode_warmup_s` delays the first decode of a model on an instance
    after its weights were copied in: not a later decode of the same weights, again after
    the model was scaled down and up. The quota counts from the end of the first step."""
    from hpn.pool.metrics import Recorder
    from hpn.pool.requests import Request
    from hpn.pool.simulated import SimulatedBackend

    prof = {**_profile(), "decode_warmup_s": {"a": 0.03, "b": 0.0}}
    be = SimulatedBackend(EngineCost(prof, {"a": 1e3, "b": 1e3}), Cluster(1, 0, 0, 1), Recorder())
    inst = be.instances[0]
    step = 0.004 + 1e-4  # a + c*B of one request (the context term is 0)
    r1, r2, r3 = (Request(i, "a", 0.0, 10, 3, 10.0, 1.0) for i in range(3))
    for r in (r1, r2, r3):
        r.generated, r.kv_at = 1, inst  # prefilled elsewhere, KV here
    done: list[float] = []

    def go(_r):
        # load a (0.25 s); decode r1: warm-up 0.03 + 2 steps; r2 on the same weights: 2
        # steps; load b (0.5), load a again (0.25): r3 warms up again
        be.load(inst, "a", lambda d: be.decode(inst, [[r1]], None, then_r2))

    def then_r2(d):
        done.append(d.t)
        be.decode(inst, [[r2]], None, then_b)

    def then_b(d):
        done.append(d.t)
        be.load(inst, "b", lambda _: be.load(inst, "a", lambda _: be.decode(inst, [[r3]], 0, fin)))

    def fin(d):
        done.append(d.t)

    be.run([r1], go)
    t1 = 0.25 + 0.03 + 2 * step
    t2 = t1 + 2 * step
    t3 = t2 + 0.5 + 0.25 + 0.03 + step  # budget 0 from the end of the first step: one step
    assert done == pytest.approx([t1, t2, t3])
    assert (r1.done_t, r2.done_t) == pytest.approx((t1, t2))  # r2: no warm-up
    assert r3.generated == 2
