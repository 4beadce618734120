"""What every pool policy shares: the backend it drives and the cluster it was given."""

from __future__ import annotations

from dataclasses import dataclass

from hpn.pool.backend import Backend
from hpn.pool.costs import CostModel
from hpn.pool.requests import Request


@dataclass(frozen=True)
class Cluster:
    """GPUs given to a policy; `tp` GPUs form one instance."""

    gpus: int = 0
    prefill_gpus: int = 0
    decode_gpus: int = 0
    tp: int = 1

    def instances(self, gpus: int) -> int:
        return gpus // self.tp


class Policy:
    """A scheduler over a pool of instances. Subclasses set `name` and `split` (whether it
    uses a prefill/decode partition) and react to arrivals and backend callbacks."""

    name = ""
    split = False
    summary = ""

    def __init__(self, backend: Backend, cost: CostModel, cluster: Cluster, rates: dict):
        """`rates`: expected req/s per model (for placement decisions only)."""
        self.backend = backend
        self.cost = cost
        self.cluster = cluster
        self.rates = rates

    def on_arrival(self, req: Request) -> None:
        raise NotImplementedError
