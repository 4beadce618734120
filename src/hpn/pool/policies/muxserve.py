"""MuxServe (ICML 2024): spatial-temporal multiplexing under MuxServe's memory accounting.

Placement follows the accounting of MuxServe's placer (`MuxServe/muxserve/muxsched/
placement.py`, `MeshGroup`): a GPU keeps `kv_fraction` (0.4, its default
`gpu_memory_utilization`) of its memory for the KV cache, and 90 % of the rest is the
budget for weights (0.9 x 0.6 x 80 GB = 43.2 GB on an 80 GB GPU); a model fits where the
remaining budget holds its weights, and placing it charges its weights plus
`overhead_gb` (7.6 GB: 1.6 GB of process memory for its two processes and 6 GB of
activations, the same file). On an 80 GB GPU that is at most two 7B models or one 13B.

Placement follows MuxServe's greedy placer (`PlacementOptimizer.naive_greedy_placement`):
models in order of expected compute (rate x `rate_scale`: 2 for 13-14B, 4 for 30-34B, 8
for 65-72B, else 1), ties by more layers; each goes to the instance with the least compute
placed so far (rate x scale), then the most remaining budget, where it fits. A model that
fits nowhere is unserved (its requests fail, and `unserved` names it). MuxServe also
searches meshes of 2-8 GPUs that run a model with tensor parallelism (a 2-GPU mesh packs
two 13B and a 7B); here every instance is one of the pool's instances.

Co-located models share the GPU: prefill jobs run one at a time and decode steps of the
resident models interleave (temporal sharing; MuxServe's SM partitioning with MPS is not
modelled).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hpn.config import Model
from hpn.pool.policies.base import PolicyContext
from hpn.pool.policies.colocated import Colocated
from hpn.pool.requests import Request

KV_FRACTION = 0.4  # MeshGroup(gpu_memory_utilization=0.4)
WEIGHT_SHARE = 0.9  # free_gpu_memory = 0.9 * (1 - gpu_memory_utilization) * memory
OVERHEAD_GB = 7.6  # place_model: model_size + 1.6 + 6


def rate_scale(n_params: float) -> int:
    """MuxServe's compute weight of a model relative to a 7B (`LLM.rate_scale`).

    Parameters
    ----------
    n_params
        Parameter count.

    Returns
    -------
    int
        1, 2, 4 or 8.

    Examples
    --------
    >>> rate_scale(7e9), rate_scale(13e9), rate_scale(70e9)
    (1, 2, 8)
    """
    if n_params >= 60e9:
        return 8
    if n_params >= 28e9:
        return 4
    if n_params >= 12e9:
        return 2
    return 1


class MuxServeKnobs(Model):
    """`muxserve`: MuxServe's placer memory accounting."""

    kv_fraction: float = Field(KV_FRACTION, ge=0, lt=1, description="GPU memory share for KV")
    overhead_gb: float = Field(
        OVERHEAD_GB,
        ge=0,
        le=1_000.0,
        description="GB charged per model",  # no GPU has 1 TB
    )


class MuxServe(Colocated):
    """Static multiplexing placed by MuxServe's memory accounting."""

    name = "muxserve"
    summary = "static multiplexing: models placed by MuxServe's memory accounting"
    Knobs = MuxServeKnobs

    def __init__(
        self,
        ctx: PolicyContext,
        kv_fraction: float = KV_FRACTION,
        overhead_gb: float = OVERHEAD_GB,
        **kw: Any,
    ) -> None:
        super().__init__(ctx, **kw)
        p, rates, backend = ctx.predictor, ctx.rates, ctx.backend
        budget = WEIGHT_SHARE * (1.0 - kv_fraction) * p.gpu_memory
        free = {i.iid: budget * i.tp for i in self.workers}
        comp = {i.iid: 0.0 for i in self.workers}
        self.home = {}

        def load(m: str) -> float:
            return rates[m] * rate_scale(p.weights[m] / 2)

        order = sorted(rates, key=lambda m: (-load(m), -p.layers.get(m, 0), m))
        for m in order:
            fits = [i for i in self.workers if free[i.iid] >= p.weights[m]]
            if not fits:
                self.unserved.append(m)
                continue
            inst = max(fits, key=lambda i: (-comp[i.iid], free[i.iid], -i.iid))
            free[inst.iid] -= p.weights[m] + overhead_gb * 1e9
            comp[inst.iid] += load(m) / inst.tp
            backend.place(inst, m)
            self.home[m] = inst

    def on_arrival(self, req: Request) -> None:
        """To the instance the model was placed on, or fail it (unserved)."""
        inst = self.home.get(req.model)
        if inst is None:
            self.backend.fail(req)
            return
        self.admit(inst, req)
