"""The cost model: fitted latencies near the profiles, derived sizes, switch times."""

import pytest

from hpn.errors import InputError
from hpn.gpus import GiB, get_gpu
from hpn.pool.calibration import fits, length_quantiles
from hpn.pool.costs import CostModel, latency_for
from hpn.pool.models import MODELS, get_model


def cost(gpu="h800", **kw):
    c = CostModel(get_gpu(gpu), **kw)
    for name in ("qwen2.5-7b", "yi-1.5-9b", "llama-2-13b"):
        c.add(name, get_model(name))
    return c


def test_fitted_latency_matches_profile_points():
    c = cost()
    # profile table (ms): qwen2_5_7b H800 L=1024 B=1 prefill 25.6, decode step ~9.3
    assert c.prefill_time("qwen2.5-7b", [1024]) == pytest.approx(25.6e-3, rel=0.15)
    assert c.decode_step("qwen2.5-7b", 1, 1029) == pytest.approx(9.3e-3, rel=0.1)
    h20 = cost("h20")
    assert h20.prefill_time("llama-2-13b", [1024]) == pytest.approx(217.4e-3, rel=0.1)


def test_fits_are_nonnegative_and_sourced():
    for key, f in fits().items():
        assert min(f["prefill"]) >= 0 and min(f["decode"]) >= 0, key
        assert f["r2_prefill"] > 0.9
    q = length_quantiles()
    assert q["input"] == sorted(q["input"]) and len(q["input"]) == len(q["quantiles"])


def test_latency_grows_with_batch_and_context():
    c = cost()
    assert c.decode_step("llama-2-13b", 8, 8000) > c.decode_step("llama-2-13b", 1, 1000)
    assert c.prefill_time("yi-1.5-9b", [2000]) > c.prefill_time("yi-1.5-9b", [200])


def test_derived_models_scale_with_size():
    g = get_gpu("h20")
    small = latency_for(MODELS["qwen1.5-1.8b"], g)
    big = latency_for(MODELS["qwen2.5-72b"], g)
    ref = latency_for(MODELS["qwen2.5-7b"], g)
    assert small.prefill[1] < ref.prefill[1] < big.prefill[1]
    assert small.decode[0] < ref.decode[0] < big.decode[0]
    assert "derived" in big.source and "fit" in ref.source


def test_switch_times():
    c = cost()
    w7 = MODELS["qwen2.5-7b"].weight_bytes
    assert c.switch_time("qwen2.5-7b") == pytest.approx(w7 / (64 * GiB * 0.625))
    assert 0.3 < c.switch_time("qwen2.5-7b") < 1.0  # optimized: under a second
    u = CostModel(get_gpu("h800"), switch="unoptimized")
    m = get_model("13b")
    u.add("x", type(m)(**{**m.__dict__, "tp": 2}))
    assert u.switch_time("x") == pytest.approx(26.9, abs=0.3)  # A §5.1: 13B at TP=2
    assert c.device_copy_time("llama-2-13b") < 0.05


def test_model_too_big_for_gpu():
    with pytest.raises(InputError, match="does not fit"):
        CostModel(get_gpu("a10")).add("x", get_model("13b"))
    with pytest.raises(InputError, match="unknown GPU"):
        get_gpu("tpu")
    with pytest.raises(InputError, match="unknown switch"):
        CostModel(get_gpu("h800"), switch="fast")
