"""`aegaeon-artifact`: `aegaeon` with the Aegaeon authors' simulator's MixServe rules.

The artifact evaluates Aegaeon in its own SimPy simulator as `MixServePolicy` (Art
``aegaeon/sim/scheduler.py``; ``worker.py`` `PrefillWorker`, `DecodeWorker`). This policy is
`aegaeon` with ``prefill_dispatch = "artifact"`` (see `hpn.pool.policies.aegaeon`: the first
fitting queued group, else the prefill instance with the fewest queued groups; one request
at a time with the simulator's switch credit) and the simulator's swap (its model sizes at
16 GB/s, as `serverless-artifact`). A request's first token is its prefill's end, so these
rules decide the first tokens; the decode partition keeps `aegaeon`'s rules (A Alg 2).

Costs: the fitted profile by default; ``costs = "artifact"`` with ``artifact = DIR`` charges
the simulator's own latency model (`hpn.pool.artifact_costs`), as for `serverless-artifact`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hpn.gpus import GPU
from hpn.pool.costs import LatencySource, Loader
from hpn.pool.policies.aegaeon import MAX_GPSIZE, Aegaeon, AegaeonKnobs
from hpn.pool.policies.base import PolicyContext
from hpn.pool.policies.quotas import Q_MAX
from hpn.pool.policies.serverless_artifact import ArtifactCosts, ArtifactDir, ServerlessArtifact


class AegaeonArtifactKnobs(AegaeonKnobs):
    """`aegaeon-artifact`: aegaeon on the authors' simulator's MixServe rules."""

    prefill_dispatch: Literal["alg1", "artifact"] = Field(
        "artifact",
        description="prefill dispatch: artifact (the authors' simulator's MixServe) or alg1",
    )
    costs: ArtifactCosts = "fitted"
    artifact: ArtifactDir = None


class AegaeonArtifact(Aegaeon):
    """Aegaeon with the authors' simulator's MixServe prefill rules (module docstring)."""

    name = "aegaeon-artifact"
    summary = "aegaeon on the Aegaeon artifact's MixServe rules (first fitting group, BS1)"
    Knobs = AegaeonArtifactKnobs

    def __init__(
        self,
        ctx: PolicyContext,
        q_max: float = Q_MAX,
        max_group: int = MAX_GPSIZE,
        prefetch: bool = True,
        prefill_dispatch: str = "artifact",
        costs: str = "fitted",
        artifact: str | None = None,
    ) -> None:
        super().__init__(ctx, q_max, max_group, prefetch, prefill_dispatch)

    @classmethod
    def loader(cls, gpu: GPU, switch: str, options: dict[str, Any]) -> Loader:
        """The artifact simulator's swap: its model sizes at 16 GB/s."""
        return ServerlessArtifact.loader(gpu, switch, options)

    @classmethod
    def latency(cls, gpu: GPU, options: dict[str, Any]) -> LatencySource | None:
        """The simulator's own latency model with ``costs = "artifact"``; else None."""
        return ServerlessArtifact.latency(gpu, options)
