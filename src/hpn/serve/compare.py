"""The simulator checked against the engine: the same trace, policy, cluster and profile.

`EngineCost` is the simulator's ground truth built from an engine profile (fitted prefill
and decode coefficients, measured switch times, the instance's link and budget), so
`predict` runs the simulator's backend and policies on this device's numbers. A
pre-loaded model becomes resident on the engine without a copy, so its device copy time is
0 here too.

The engine's instances share one device (CPU: threads on the same cores and interpreter;
CUDA: one GPU), unlike the simulator's GPUs, which compute independently. With a profile
that measured this (`profile.contention`), `SharedDeviceBackend` charges every prefill and
decode step at the profiled time for the number of instances computing at that moment
(processor sharing at step granularity: a running decode is re-planned at its next step
boundary whenever that number changes).
"""

from __future__ import annotations

import time

from hpn.gpus import GPU
from hpn.pool.backend import Cluster
from hpn.pool.costs import CostModel
from hpn.pool.metrics import Recorder, summarize
from hpn.pool.models import LLM
from hpn.pool.policies import get_policy
from hpn.pool.policies.base import PolicyContext, Slo
from hpn.pool.requests import Request
from hpn.pool.result import PoolResult
from hpn.pool.simulated import SimulatedBackend
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
    startup
        Such a start-up lasts at least this long before the weights' copy (the policy's
        configured ``startup``, which the engine waits out: `engine.startup_s`).
    """

    def __init__(
        self,
        profile: dict,
        kv_bytes_per_token: dict[str, float],
        cold: bool = False,
        startup: float = 0.0,
    ):
        dev = profile["device"]
        link = dev.get("link_bps") or 1e12  # unthrottled (CUDA): KV moves ~free
        budget = float(dev["memory_bytes"])
        gpu = GPU(f"engine-{dev['kind']}", budget, 1e15, 0.0, link, 0.0)
        super().__init__(gpu, eta=1.0)
        self.budget = budget
        self.profile = profile
        self.cold = cold
        self.startup = startup
        self.kvb = dict(kv_bytes_per_token)
        self.active = int(profile["device"].get("concurrent", 1))  # instances computing
        self.shared = profile.get("contention")
        self.pre = _Scaled(self, "prefill")
        self.dec = _Scaled(self, "decode")
        for name in profile["fits"]:
            if name in self.kvb:
                self.add_engine(name)

    def factor(self, kind: str) -> float:
        """Time of a `kind` ("prefill"/"decode") operation with `active` instances
        computing, relative to the profile's grid (1 without contention data)."""
        c = self.shared
        if not c:
            return 1.0
        if kind not in c:
            return 1.0
        k = min(max(self.active, 1), len(c[kind]))
        return float(c[kind][k - 1])

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
        if not self.cold:
            return switch_seconds(self.profile, model)
        return switch_seconds(self.profile, model, True, self.startup, self.factor("load"))

    def prefetch_time(self, model: str) -> float:
        return float(self.profile["switch_s"][model])

    def device_copy_time(self, model: str) -> float:
        return 0.0


class _Scaled(dict):
    """Coefficients by model, scaled by the cost's contention factor when read (the
    latency formulas are linear in them)."""

    def __init__(self, cost: EngineCost, kind: str):
        super().__init__()
        self.cost, self.kind = cost, kind

    def __getitem__(self, model: str) -> tuple[float, float, float]:
        f = self.cost.factor(self.kind)
        a, b, c = super().__getitem__(model)
        return (a * f, b * f, c * f)


class SharedDeviceBackend(SimulatedBackend):
    """`SimulatedBackend` whose instances share one device: the cost's `active` count is
    the number of instances in a prefill, a decode or a cold scale-up (a model built
    afresh: CPU work), and each change re-plans the running decodes from their next step
    boundary. Weight copies of a warm scale-up and KV copies are paced by the link, not
    counted."""

    def __init__(self, cost: EngineCost, cluster: Cluster, sink):
        super().__init__(cost, cluster, sink)
        self.engine_cost = cost
        self.computing: set[int] = set()
        cost.active = 0

    def _computing(self, iid: int, on: bool) -> None:
        if on == (iid in self.computing):
            return
        (self.computing.add if on else self.computing.discard)(iid)
        self.engine_cost.active = len(self.computing)
        for inst in self.instances:
            if inst.iid != iid and self._slots[inst.iid].op is not None:
                SimulatedBackend.join(self, inst, [], 0)  # re-plan at its next boundary

    def load(self, inst, model, on_done) -> None:
        if not (self.engine_cost.cold and model not in (inst.resident, inst.prefetched)):
            super().load(inst, model, on_done)
            return
        cost = self.engine_cost
        self._computing(inst.iid, True)
        if cost.startup > 0:  # the build computes; the rest of the start-up waits
            p = cost.profile
            build = (float(p["cold_switch_s"][model]) - float(p["switch_s"][model])) * (
                cost.factor("load")
            )
            self.call_at(self.now() + max(0.0, build), self._computing, inst.iid, False)

        def done(d):
            self._computing(d.inst.iid, False)
            on_done(d)

        super().load(inst, model, done)

    def prefill(self, inst, reqs, on_done) -> None:
        self._computing(inst.iid, True)

        def done(d):
            self._computing(d.inst.iid, False)
            on_done(d)

        super().prefill(inst, reqs, done)

    def decode(self, inst, batches, budget, on_done, stop_on_finish=False) -> None:
        self._computing(inst.iid, True)

        def done(d):
            self._computing(d.inst.iid, False)
            on_done(d)

        super().decode(inst, batches, budget, done, stop_on_finish)


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
    timeline: list | None = None,
    options: dict | None = None,
) -> PoolResult:
    """Simulate `trace` (model names = served models) on the profiled device; with a
    `timeline` list, append the simulated backend's event log (`hpn.serve.timeline`)."""
    wall = time.perf_counter()
    from hpn.serve.engine import cold_start, startup_s

    cls = get_policy(policy)
    options = options or {}
    cold = cold_start(cls, options)
    startup = startup_s(cls, options)
    cost = EngineCost(profile, kv_bytes_per_token, cold, startup)
    sink = Recorder()
    from hpn.serve.timeline import Traced, traced

    base: type[SimulatedBackend] = SharedDeviceBackend if cost.shared else SimulatedBackend
    backend = (base if timeline is None else traced(base))(cost, cluster, sink)
    rates = rates or {m: 1.0 for m in trace.names}
    pred = predictor(profile, kv_bytes_per_token, cold, startup)
    pol = cls(PolicyContext(backend, pred, cluster, rates, slo), **options)
    reqs = requests_of(trace, slo)
    end = trace.duration + drain
    backend.run(reqs, pol.on_arrival, until=end)
    if isinstance(backend, Traced):
        assert timeline is not None
        for r in reqs:
            backend.requests.setdefault(r.rid, r)
        timeline.append(backend.dump())
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
