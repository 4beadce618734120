"""The serving pool (Aegaeon, SOSP 2025): traces, cost model, policies, backend, metrics.

trace -> policy (scheduler) -> backend (simulated clock | real engine) -> metrics
"""

from hpn.pool.backend import Backend, Instance, SimulatedBackend
from hpn.pool.metrics import PoolResult
from hpn.pool.policies import POLICIES, get_policy
from hpn.pool.simulate import Slo, simulate
from hpn.pool.traces import Trace, load_trace, market

__all__ = [
    "POLICIES",
    "Backend",
    "Instance",
    "PoolResult",
    "SimulatedBackend",
    "Slo",
    "Trace",
    "get_policy",
    "load_trace",
    "market",
    "simulate",
]
