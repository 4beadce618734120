"""MuxServe-like spatial-temporal multiplexing (ICML 2024), as a memory-bound placement.

Models are placed once, most popular first, on the instance with the most free memory where
their weights plus a KV floor (1,024 blocks of 16 tokens, the same floor Aegaeon keeps)
fit; a model that fits nowhere is unserved (its requests fail). Co-located models share the
GPU: prefill jobs run one at a time and decode steps of the resident models interleave
(temporal sharing; the SM partitioning of MuxServe is not modelled).
"""

from __future__ import annotations

from hpn.pool.costs import BLOCK_TOKENS, KV_FLOOR_BLOCKS
from hpn.pool.policies.base import Slo
from hpn.pool.policies.colocated import Colocated
from hpn.pool.requests import Request


class MuxServe(Colocated):
    name = "muxserve"
    summary = "static multiplexing: models placed by popularity while memory lasts"

    def __init__(self, backend, predictor, cluster, rates, slo=Slo(), **kw):
        super().__init__(backend, predictor, cluster, rates, slo, **kw)
        p = predictor
        free = {i.iid: p.memory_budget(i.tp) for i in self.workers}
        self.home = {}
        for m in sorted(rates, key=lambda m: (-rates[m], m)):
            need = p.weights[m] + KV_FLOOR_BLOCKS * BLOCK_TOKENS * p.kv_bytes_per_token[m]
            inst = max(self.workers, key=lambda i: (free[i.iid], -i.iid), default=None)
            if inst is None or free[inst.iid] < need:
                continue
            free[inst.iid] -= need
            backend.place(inst, m)
            self.home[m] = inst

    def on_arrival(self, req: Request) -> None:
        inst = self.home.get(req.model)
        if inst is None:
            self.backend.fail(req)
            return
        self.admit(inst, req)
