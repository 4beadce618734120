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
    assert c.kv_transfer_time("a", 100) == pytest.approx(100 * 1000 / 1e8)
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
