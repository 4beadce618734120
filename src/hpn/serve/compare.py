"""The simulator checked against the engine: the same trace, policy, cluster and profile.

`EngineCost` is the simulator's ground truth built from an engine profile (fitted prefill
and decode coefficients, measured switch times, the instance's link and budget), so
`predict` runs the unchanged `SimulatedBackend` and policies on this device's numbers. A
pre-loaded model becomes resident on the engine without a copy, so its device copy time is
0 here too.
"""

from __future__ import annotations

import time

from hpn.pool.backend import Cluster
from hpn.pool.costs import CostModel
from hpn.pool.gpus import GPU
from hpn.pool.metrics import PoolResult, Recorder, summarize
from hpn.pool.models import LLM
from hpn.pool.policies import get_policy
from hpn.pool.policies.base import Slo
from hpn.pool.requests import Request
from hpn.pool.traces.base import Trace
from hpn.serve.backend import BLOCK_TOKENS, KV_FLOOR_BLOCKS
from hpn.serve.profile import predictor, switch_seconds


class EngineCost(CostModel):
    """Ground truth for the simulator from an engine profile.

    Parameters
    ----------
    profile
        A profile (`hpn.serve.profile.measure`): fits, switch_s, weights, device.
    kv_bytes_per_token
        KV bytes per token of each model in the engine's dtype.
    cold
        Scale-ups start the model afresh (a policy whose system starts an engine per
        scale-up, as the engine then does: `engine.cold_start`).
    """

    def __init__(self, profile: dict, kv_bytes_per_token: dict[str, float], cold: bool = False):
        dev = profile["device"]
        link = dev.get("link_bps") or 1e12  # unthrottled (CUDA): KV moves ~free
        budget = float(dev["memory_bytes"])
        gpu = GPU(f"engine-{dev['kind']}", budget, 1e15, 0.0, link, 0.0)
        super().__init__(gpu, eta=1.0)
        self.budget = budget
        self.profile = profile
        self.cold = cold
        self.kvb = dict(kv_bytes_per_token)
        for name in profile["fits"]:
            if name in self.kvb:
                self.add_engine(name)

    def add_engine(self, name: str) -> None:
        f = self.profile["fits"][name]
        self.pre[name] = tuple(f["prefill"])
        self.dec[name] = tuple(f["decode"])
        w = float(self.profile["weights"][name])
        # an LLM record for the catalog-shaped bookkeeping; bytes come from the profile
        self.models[name] = LLM(name, w / 2, 1, 1, 1)

    def memory_budget(self, tp: int) -> float:
        return self.budget * tp

    def weights(self, name: str | None) -> float:
        return float(self.profile["weights"][name]) if name is not None else 0.0

    def kv_floor(self, model) -> float:
        name = model if isinstance(model, str) else model.name
        return KV_FLOOR_BLOCKS * BLOCK_TOKENS * self.kvb[name]

    def kv_bytes(self, model: str, tokens: float) -> float:
        return tokens * self.kvb[model]

    def kv_transfer_time(self, model: str, tokens: float) -> float:
        return tokens * self.kvb[model] / self.gpu.host_link

    def switch_time(self, model: str) -> float:
        return switch_seconds(self.profile, model, self.cold)

    def prefetch_time(self, model: str) -> float:
        return float(self.profile["switch_s"][model])

    def device_copy_time(self, model: str) -> float:
        return 0.0


def requests_of(trace: Trace, slo: Slo) -> list[Request]:
    return [
        Request(i, trace.names[m], float(a), int(li), int(lo), slo.ttft, slo.tbt)
        for i, (a, m, li, lo) in enumerate(
            zip(trace.arrival, trace.model, trace.input_len, trace.output_len, strict=True)
        )
    ]


def predict(
    trace: Trace,
    policy: str,
    cluster: Cluster,
    profile: dict,
    kv_bytes_per_token: dict[str, float],
    slo: Slo = Slo(),
    rates: dict[str, float] | None = None,
    drain: float = 300.0,
) -> PoolResult:
    """Simulate `trace` (model names = served models) on the profiled device."""
    wall = time.perf_counter()
    from hpn.serve.engine import cold_start

    cls = get_policy(policy)
    cold = cold_start(cls, {})
    cost = EngineCost(profile, kv_bytes_per_token, cold)
    sink = Recorder()
    from hpn.pool.simulated import SimulatedBackend

    backend = SimulatedBackend(cost, cluster, sink)
    rates = rates or {m: 1.0 for m in trace.names}
    pol = cls(backend, predictor(profile, kv_bytes_per_token, cold), cluster, rates, slo)
    reqs = requests_of(trace, slo)
    end = trace.duration + drain
    backend.run(reqs, pol.on_arrival, until=end)
    n = len(backend.instances)
    res = summarize(
        reqs,
        sink.gaps,
        policy=cls.name,
        gpu=cost.gpu.name,
        gpus=n,
        switches=sink.switches,
        busy_gpu_s=sink.busy_gpu_s,
        span=min(backend.now(), end) or max(trace.duration, 1e-9),
        wall=time.perf_counter() - wall,
    )
    res.models = len(set(trace.names))
    res.models_per_gpu = res.models / n
    return res


def engine_trace(trace: Trace, served: list[str], max_input: int, max_output: int) -> Trace:
    """`trace` with its models mapped in turn onto the served ones and lengths clipped
    (what the replay sends), for the simulator's prediction."""
    import numpy as np

    from hpn.serve.replay import assign_models

    names = assign_models(trace.names, served, {})
    idx = {m: i for i, m in enumerate(served)}
    model = np.array([idx[names[trace.names[k]]] for k in trace.model], dtype=np.int32)
    return Trace.build(
        trace.arrival,
        model,
        np.clip(trace.input_len, 1, max_input),
        np.clip(trace.output_len, 1, max_output),
        served,
        ["engine"] * len(served),
    )
