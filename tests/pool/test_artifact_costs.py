"""The Aegaeon simulator's latency model (`pool.artifact_costs`): the fit recovers a known
line from profiles written for it, is evaluated as the simulator's workers call it (decode
batch term at -1, whole ms), and the simulated backend charges such steps one by one."""

import math

import pytest

from hpn.errors import InputError
from hpn.gpus import get_gpu
from hpn.pool.artifact_costs import BATCHES, LENS, ArtifactLatency, execution_dir, fit
from hpn.pool.backend import Cluster
from hpn.pool.costs import CostModel
from hpn.pool.models import get_model
from hpn.pool.requests import Request
from hpn.pool.simulated import SimulatedBackend
from tests.pool.artifact_profiles import TokenSink, write_profiles

SEVEN = get_model("qwen2.5-7b")
H100 = get_gpu("h100")


def test_the_fit_recovers_the_line_and_leaves_out_the_test_split(tmp_path):
    pre, dec = (0.016, 1.46e-5, -6.6e-10), (0.0086, 2.6e-7, 7.6e-5)
    root = write_profiles(tmp_path, prefill=pre, decode=dec, outlier=1.0)
    folder = execution_dir(root) / "qwen2.5-7b" / "h100"
    p, d, n = fit(str(folder), 8192)
    grid = [(a, b) for a in LENS for b in BATCHES if a * b <= 8192 and (a + 10) * b < 10240]
    assert n == len(grid) - math.ceil(len(grid) / 3)  # every third point is the test split
    # the 1 s outliers sit only on the test split: the fit is the line itself
    assert p == pytest.approx(pre, rel=1e-6, abs=1e-15)
    assert d == pytest.approx(dec, rel=1e-6, abs=1e-15)


def test_the_latency_is_evaluated_as_the_simulators_workers_call_it(tmp_path):
    root = write_profiles(tmp_path, prefill=(0.0205, 1e-5, 0.0), decode=(0.0091, 0.0, 6e-4))
    lat = ArtifactLatency(root).latency(SEVEN, H100)
    # decode: 9.1 ms + 0.6 ms x B evaluated at B = -1: 8.5 ms, truncated to 8 ms at any batch
    assert [lat.decode_s(b, 500) for b in (1, 4, 16)] == [0.008] * 3
    # prefill: int(1000 * (0.0205 + 1e-5 * 2313)) = int(43.63) = 43 ms
    assert lat.prefill_s([770, 771, 772]) == 0.043
    c = CostModel(H100, latency=ArtifactLatency(root))
    c.add("m0", SEVEN)
    assert c.decode_step("m0", 1, 500) == 0.008 and c.grid == 1e-3
    plain = CostModel(H100)  # the fitted profile: the batch term at B, no truncation
    plain.add("m0", SEVEN)
    assert plain.grid is None and plain.forms == {}
    assert plain.decode_step("m0", 1, 500) != 0.008


@pytest.mark.parametrize("what", ["folder", "model", "gpu"])
def test_missing_profiles_are_one_input_error_naming_artifact(tmp_path, what):
    root = write_profiles(tmp_path / "art") if what != "folder" else tmp_path
    model = get_model("llama-2-13b") if what == "model" else SEVEN
    gpu = get_gpu("h800") if what == "gpu" else H100
    with pytest.raises(InputError, match="artifact") as e:
        ArtifactLatency(root).latency(model, gpu)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("slope", [2e-6, -2e-6])
def test_each_decode_step_is_charged_at_its_own_context(tmp_path, slope):
    # step = int(1000 * (a + slope * ctx)) ms moves by a millisecond within the run: the
    # token times are those of a step-by-step loop, not of runs at the first step's time
    a = 0.0105 if slope > 0 else 0.0125
    root = write_profiles(tmp_path, decode=(a, slope, 0.0))
    c = CostModel(H100, latency=ArtifactLatency(root))
    c.add("m0", SEVEN)
    sink = TokenSink()
    b = SimulatedBackend(c, Cluster(gpus=1), sink)
    inst = b.instances[0]
    b.place(inst, "m0")
    reqs = [Request(0, "m0", 0.0, 100, 300, 10.0, 0.1), Request(1, "m0", 0.0, 120, 500, 10.0, 0.1)]
    for r in reqs:
        r.generated, r.kv_at = 1, inst  # prefilled
    b.call_at(0.0, lambda: b.decode(inst, [reqs], None, lambda _d: None))
    b.run([], lambda _r: None)
    want: dict[int, list[int]] = {0: [], 1: []}
    t, gen = 0, {0: 1, 1: 1}
    steps = set()
    while any(gen[r.rid] < r.output_len for r in reqs):
        live = [r for r in reqs if gen[r.rid] < r.output_len]
        ms = round(
            1000 * c.decode_step("m0", len(live), sum(r.input_len + gen[r.rid] for r in live))
        )
        steps.add(ms)
        t += ms
        for r in live:
            gen[r.rid] += 1
            want[r.rid].append(t)
    assert len(steps) >= 2  # the step time does change
    assert {k: [round(1000 * x) for x in v] for k, v in sink.t.items()} == want


def test_a_decode_step_of_zero_ms_is_refused_not_looped(tmp_path):
    root = write_profiles(tmp_path, decode=(0.0009, 0.0, 0.0))  # int(0.9 ms) = 0
    c = CostModel(H100, latency=ArtifactLatency(root))
    c.add("m0", SEVEN)
    b = SimulatedBackend(c, Cluster(gpus=1), TokenSink())
    inst = b.instances[0]
    b.place(inst, "m0")
    r = Request(0, "m0", 0.0, 100, 30, 10.0, 0.1)
    r.generated, r.kv_at = 1, inst
    with pytest.raises(InputError, match="decode step of m0 takes 0 s"):
        b.decode(inst, [[r]], None, lambda _d: None)
