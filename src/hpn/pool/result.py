"""What one serving-pool run measured: :class:`PoolResult` (numpy-free, so ``hpn pool
simulate`` can name it as its result without importing the simulator)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from hpn.result import DETAIL, Result


@dataclass
class PoolResult(Result):
    """What one simulated run measured (attainment under both accountings, TTFT/TBT, switches).

    Its JSON form (:meth:`to_json`) is the result of ``hpn pool simulate``; the per-model
    attainments are a detail (``to_json(detail=True)``).
    """

    policy: str
    gpu: str
    gpus: int
    models: int
    requests: int
    slo_attainment: float
    slo_attainment_artifact: float
    finished: int
    failed: int
    ttft_p50_s: float
    ttft_p99_s: float
    tbt_p50_s: float
    tbt_p99_s: float
    switches: int
    gpu_utilization: float
    models_per_gpu: float
    span_s: float
    wall_s: float = 0.0
    unserved_models: int = 0  # models the policy could not place (all their requests fail)
    per_model: dict[str, float] = field(default_factory=dict, repr=False, metadata=DETAIL)
    per_model_artifact: dict[str, float] = field(default_factory=dict, repr=False, metadata=DETAIL)

    def heading(self) -> str:
        """``pool simulate: POLICY``."""
        return f"pool simulate: {self.policy}"

    def rounded(self, digits: int = 4) -> PoolResult:
        """A copy with every float figure rounded to ``digits`` (what ``pool simulate`` prints).

        Parameters
        ----------
        digits
            Decimal digits kept.

        Returns
        -------
        PoolResult
            The per-model attainments are kept as they are.
        """
        floats: dict[str, Any] = {
            f.name: round(v, digits)
            for f in dataclasses.fields(self)
            if isinstance(v := getattr(self, f.name), float)
        }
        return dataclasses.replace(self, **floats)

    def worst_model(self, metric: str = "deadline") -> float:
        """The lowest per-model attainment under ``metric``.

        Parameters
        ----------
        metric
            ``deadline`` or ``artifact``.

        Returns
        -------
        float
            1.0 when no model was measured.
        """
        pm = self.per_model if metric == "deadline" else self.per_model_artifact
        return min(pm.values()) if pm else 1.0
