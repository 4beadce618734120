"""What a policy estimates with: the `Predictor` (separate from the backend's ground truth).

A policy never reads the backend's cost model; it asks a predictor for the latency of a
prefill, a decode step, a model switch or a KV move, and for memory sizes. In simulation the
predictor is built from the same tables as the ground truth (`Predictor.from_cost`), so the
estimates are exact; a real engine builds it from a fitted profile of its device, and the
two then differ as predictions and measurements do (vidur keeps its execution-time
predictor apart from its schedulers the same way).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hpn.pool.costs import CostModel, decode_latency, prefill_latency

Coef = tuple[float, float, float]


@dataclass
class Predictor:
    """Per-model estimate tables (seconds, bytes); the formulas are `costs`'s.

    Attributes
    ----------
    prefill, decode
        Latency coefficients per model (`costs.prefill_latency`, `costs.decode_latency`).
    switch_s
        Estimated scale-up time per model (weights not pre-loaded).
    kv_s_per_token
        KV transfer time per token per model (host <-> device).
    weights, kv_bytes_per_token, layers
        Weight bytes (all shards), KV bytes per token and layer count per model.
    memory_per_gpu
        Bytes per GPU for weights plus KV (activations excluded).
    """

    prefill: dict[str, Coef] = field(default_factory=dict)
    decode: dict[str, Coef] = field(default_factory=dict)
    switch_s: dict[str, float] = field(default_factory=dict)
    kv_s_per_token: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    kv_bytes_per_token: dict[str, float] = field(default_factory=dict)
    layers: dict[str, int] = field(default_factory=dict)
    memory_per_gpu: float = 0.0
    gpu_memory: float = 0.0

    @classmethod
    def from_cost(cls, cost: CostModel) -> Predictor:
        """Exact estimates: a copy of the ground truth's tables (simulation)."""
        return cls(
            prefill=dict(cost.pre),
            decode=dict(cost.dec),
            switch_s={m: cost.switch_time(m) for m in cost.models},
            kv_s_per_token={m: cost.kv_transfer_time(m, 1.0) for m in cost.models},
            weights={m: cost.weights(m) for m in cost.models},
            kv_bytes_per_token={m: x.kv_bytes_per_token for m, x in cost.models.items()},
            layers={m: x.layers for m, x in cost.models.items()},
            memory_per_gpu=cost.memory_budget(1),
            gpu_memory=cost.gpu.memory_bytes,
        )

    @property
    def models(self) -> list[str]:
        """The models the predictor knows."""
        return list(self.weights)

    def prefill_time(self, model: str, lens: list[int]) -> float:
        """Estimated prefill time of a batch of prompts of lengths `lens`."""
        return prefill_latency(self.prefill[model], lens)

    def decode_step(self, model: str, batch: int, ctx_sum: float) -> float:
        """Estimated decode-step time over `batch` sequences of `ctx_sum` tokens."""
        return decode_latency(self.decode[model], batch, ctx_sum)

    def switch_time(self, model: str) -> float:
        """Estimated scale-up time of `model` (not pre-loaded)."""
        return self.switch_s[model]

    def kv_transfer_time(self, model: str, tokens: float) -> float:
        """Estimated host <-> device KV transfer time of `tokens` tokens."""
        return tokens * self.kv_s_per_token[model]

    def memory_budget(self, tp: int) -> float:
        """Bytes for weights plus KV on an instance of `tp` GPUs."""
        return self.memory_per_gpu * tp
