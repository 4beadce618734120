"""The cost model: prefill and decode-step latency, model-switch and KV-transfer time, memory.

Latency uses the fitted profile coefficients (`calibration`) when the (model, GPU) pair was
profiled at TP=1. Otherwise it is derived from the closest profiled model on the same GPU
[assumption, aegaeon-facts §12.3]: prefill slope and per-sequence decode cost scale with the
parameters per GPU; the fixed decode step cost scales with weight bytes per GPU (it tracks
weight bytes on H20: 15.2/17.7/26 GB -> 11.9/14.4/21.5 ms) but keeps half of it as launch
overhead for smaller models; the per-context-token decode cost is the KV read at HBM
bandwidth; TP adds two all-reduces per layer per step (`ALLREDUCE_S` each).

Switch (A App A.2, §5.1): optimized = weights per GPU / (host link x eta), eta = 0.625
(the paper; the artifact code uses 0.15); unoptimized adds an engine re-init of
`REINIT_S` and loads at 2.83 GB/s per GPU, which gives the paper's 26.9 s for LLaMA-13B
at TP=2 (22.3 s + 13 GB / 2.83 GB/s). A pre-loaded (prefetched) model only needs an
on-device copy at half the HBM bandwidth. A baseline with its own loader (a `Loader`:
engine start-up plus weights at its store's bandwidth) replaces the switch formula.

This module is the one home of the serving cost formulas: `prefill_latency` and
`decode_latency` are used by the ground truth (`CostModel`, which the simulated backend
charges) and by the estimates policies make (`predictor.Predictor`). A policy may put
another latency source in place of the fitted profile (`LatencySource`, e.g. the Aegaeon
simulator's own fits, `artifact_costs`): its `Latency` can evaluate the decode batch term
at a fixed value and truncate every step to whole milliseconds, as that simulator does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from hpn.errors import InputError
from hpn.gpus import GPU
from hpn.pool.calibration import fits
from hpn.pool.models import LLM, MODELS

ETA_PAPER = 0.625
ETA_ARTIFACT = 0.15
REINIT_S = 22.3
UNOPT_LOAD_BPS = 2.83e9
ALLREDUCE_S = 10e-6
MEMORY_FRACTION = 0.9  # ~10 % of VRAM kept for activations (A §5.2)
BLOCK_TOKENS = 16
KV_FLOOR_BLOCKS = 1024  # pre-loading disabled below this much KV space (Art stage_engine.py)
SWITCH_MODES = ("optimized", "unoptimized")


def prefill_latency(coef: tuple[float, float, float], lens: list[int]) -> float:
    """Prefill time of one batch: a + b * sum(L) + c * sum(L^2).

    Parameters
    ----------
    coef
        ``(a, b, c)``, seconds.
    lens
        Prompt length of each request, tokens.

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    >>> round(prefill_latency((0.01, 1e-4, 1e-8), [100, 200]), 6)
    0.0405
    """
    a, b, c = coef
    return a + b * sum(lens) + c * sum(x * x for x in lens)


def decode_latency(coef: tuple[float, float, float], batch: int, ctx_sum: float) -> float:
    """One decode step over `batch` sequences holding `ctx_sum` KV tokens: a + b*ctx + c*B.

    Parameters
    ----------
    coef
        ``(a, b, c)``, seconds.
    batch
        Sequences in the step.
    ctx_sum
        KV tokens they hold.

    Returns
    -------
    float
        Seconds.
    """
    a, b, c = coef
    return a + b * ctx_sum + c * batch


@dataclass(frozen=True)
class Loader:
    """How a serving system scales a model up: engine start-up, then the weights (per GPU)
    at `bandwidth` bytes/s. `source` names where each number comes from; `sizes` gives,
    per catalog model, the weight bytes the system charges when they differ from the
    catalog's (the Aegaeon simulator's rounded sizes)."""

    name: str
    bandwidth: float
    startup_s: float = 0.0
    source: str = ""
    sizes: tuple[tuple[str, float], ...] = ()

    def time(self, shard_bytes: float) -> float:
        """Scale-up time for `shard_bytes` of weights per GPU."""
        return self.startup_s + shard_bytes / self.bandwidth


@dataclass(frozen=True)
class Latency:
    """Coefficients in seconds: prefill (a, b/token, c/token^2), decode (a, b/ctx token, c/seq).

    ``batch_at``: the value the decode batch term is evaluated at instead of the batch size
    (None: the batch size); ``whole_ms``: every prefill and decode step truncated towards
    zero to whole milliseconds (``int(1000 * t)``).
    """

    prefill: tuple[float, float, float]
    decode: tuple[float, float, float]
    source: str
    batch_at: int | None = None
    whole_ms: bool = False

    def prefill_s(self, lens: list[int]) -> float:
        """Seconds to prefill prompts of lengths `lens`."""
        return self._form(prefill_latency(self.prefill, lens))

    def decode_s(self, batch: int, ctx_sum: float) -> float:
        """Seconds of one decode step over `batch` sequences holding `ctx_sum` tokens."""
        b = batch if self.batch_at is None else self.batch_at
        return self._form(decode_latency(self.decode, b, ctx_sum))

    def _form(self, t: float) -> float:
        return max(0, math.trunc(1000.0 * t)) / 1000.0 if self.whole_ms else t


class LatencySource(Protocol):
    """Where a cost model takes each model's latency from, in place of the fitted profile."""

    name: str

    def latency(self, model: LLM, gpu: GPU) -> Latency:
        """The latency of `model` on `gpu` (InputError when there is none)."""
        ...


def _fit(profile: str | None, gpu: GPU) -> dict | None:
    return fits().get(f"{profile}/{gpu.name}") if profile else None


def latency_for(model: LLM, gpu: GPU, tp: int | None = None) -> Latency:
    """Latency coefficients of `model` on `gpu` at tensor parallelism `tp`.

    Its own profile fit when there is one (at TP 1); else scaled from the fitted model of the
    nearest size per GPU, plus two all-reduces per layer when ``tp > 1``.

    Parameters
    ----------
    model
        Catalog model.
    gpu
        GPU preset.
    tp
        Tensor-parallel degree; None: the model's own.

    Returns
    -------
    Latency
        Prefill and decode coefficients and where they came from.

    Raises
    ------
    InputError
        When no model has a profile on `gpu`.
    """
    tp = tp or model.tp
    own = _fit(model.profile, gpu)
    if own is not None and tp == 1:
        return Latency(tuple(own["prefill"]), tuple(own["decode"]), f"fit {model.profile}")
    refs = [(m, fit) for m in MODELS.values() if (fit := _fit(m.profile, gpu)) is not None]
    if not refs:
        raise InputError("gpu", f"no latency profile for any model on {gpu.name}")
    per_gpu = model.n_params / tp
    ref, f = min(refs, key=lambda mf: abs(mf[0].n_params - per_gpu))
    s = per_gpu / ref.n_params
    comm = 2 * model.layers * ALLREDUCE_S if tp > 1 else 0.0
    pa, pb, pc = f["prefill"]
    da, _db, dc = f["decode"]
    da = da * (s if s >= 1 else 0.5 + 0.5 * s)
    db = model.kv_bytes_per_token / tp / gpu.hbm_bandwidth
    return Latency(
        (pa + comm, pb * s, pc * s),
        (da + comm, db, dc * s),
        f"derived from {ref.profile} (x{s:.2f} params/GPU, tp={tp})",
    )


class CostModel:
    """Every duration the simulated backend charges, for one GPU type.

    Models are keyed by their trace name: two trace models of the same catalog kind are
    still different weights, so switching between them costs a full switch.
    """

    def __init__(
        self,
        gpu: GPU,
        switch: str = "optimized",
        eta: float = ETA_PAPER,
        loader: Loader | None = None,
        latency: LatencySource | None = None,
    ):
        if switch not in SWITCH_MODES:
            raise InputError("switch", f"unknown switch mode {switch!r}; use {SWITCH_MODES}")
        self.gpu = gpu
        self.switch_mode = switch
        self.eta = eta
        self.loader = loader
        self.source = latency
        self.pre: dict[str, tuple[float, float, float]] = {}
        self.dec: dict[str, tuple[float, float, float]] = {}
        self.models: dict[str, LLM] = {}
        # set when a model's latency is not the plain formulas (the backend then charges
        # decode_step step by step); grid: seconds every duration is a multiple of
        self.forms: dict[str, Latency] = {}
        self.grid: float | None = None

    def add(self, name: str, model: LLM) -> None:
        """Register trace model `name` as an instance of catalog model `model`."""
        if name in self.models:
            return
        if model.weight_bytes / model.tp > self.memory_budget(1) - self.kv_floor(model) / model.tp:
            raise InputError(
                "model", f"{model.name} at TP={model.tp} does not fit on {self.gpu.name}"
            )
        src = self.source
        lat = latency_for(model, self.gpu) if src is None else src.latency(model, self.gpu)
        self.pre[name] = lat.prefill
        self.dec[name] = lat.decode
        self.models[name] = model
        if lat.batch_at is not None or lat.whole_ms:
            self.forms[name] = lat
            if lat.whole_ms:
                self.grid = 1e-3

    # --- compute -------------------------------------------------------------------------
    def prefill_time(self, model: str, lens: list[int]) -> float:
        """Seconds to prefill one batch of prompts of lengths `lens`."""
        form = self.forms.get(model)
        return prefill_latency(self.pre[model], lens) if form is None else form.prefill_s(lens)

    def decode_step(self, model: str, batch: int, ctx_sum: float) -> float:
        """Seconds of one decode step over `batch` sequences holding `ctx_sum` tokens."""
        form = self.forms.get(model)
        if form is None:
            return decode_latency(self.dec[model], batch, ctx_sum)
        return form.decode_s(batch, ctx_sum)

    # --- memory and transfers ------------------------------------------------------------
    def memory_budget(self, tp: int) -> float:
        """Bytes for weights plus KV on an instance of `tp` GPUs."""
        return MEMORY_FRACTION * self.gpu.memory_bytes * tp

    def kv_floor(self, model: LLM | str) -> float:
        """KV bytes below which pre-loading is disabled (1,024 blocks of 16 tokens)."""
        m = self.models[model] if isinstance(model, str) else model
        return KV_FLOOR_BLOCKS * BLOCK_TOKENS * m.kv_bytes_per_token

    def weights(self, name: str | None) -> float:
        """Weight bytes of model `name` (all shards); 0 for None."""
        return self.models[name].weight_bytes if name is not None else 0.0

    def kv_bytes(self, model: str, tokens: float) -> float:
        """KV-cache bytes of `tokens` tokens of `model`."""
        return tokens * self.models[model].kv_bytes_per_token

    def decode_warmup(self, model: str) -> float:
        """Extra seconds of the first decode steps after `model` was scaled up on an
        instance (0: not modelled for the catalog's GPUs; an engine profile measures it,
        `hpn.serve.compare.EngineCost`)."""
        return 0.0

    def kv_transfer_time(self, model: str, tokens: float) -> float:
        """Seconds to move the KV of `tokens` tokens over the host link."""
        m = self.models[model]
        return tokens * m.kv_bytes_per_token / m.tp / (self.gpu.host_link * self.eta)

    def switch_time(self, model: str) -> float:
        """Scale-up time of `model` on an instance (weights not pre-loaded)."""
        m = self.models[model]
        shard = m.weight_bytes / m.tp
        if self.loader is not None:
            shard = dict(self.loader.sizes).get(m.name, m.weight_bytes) / m.tp
            return self.loader.time(shard)
        if self.switch_mode == "unoptimized":
            return REINIT_S + shard / UNOPT_LOAD_BPS
        return shard / (self.gpu.host_link * self.eta)

    def prefetch_time(self, model: str) -> float:
        """Seconds to pre-load the weights behind the running model."""
        m = self.models[model]
        return m.weight_bytes / m.tp / (self.gpu.host_link * self.eta)

    def device_copy_time(self, model: str) -> float:
        """Seconds to move a pre-loaded model into place (on-device copy)."""
        m = self.models[model]
        return m.weight_bytes / m.tp / (self.gpu.hbm_bandwidth / 2)
