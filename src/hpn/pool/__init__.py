"""The serving pool (Aegaeon, SOSP 2025): traces, cost model, policies, backend, metrics.

trace -> policy (scheduler) -> backend (simulated clock | real engine) -> metrics
"""

from hpn.pool.backend import Backend, Cluster, Done, Instance, MetricsSink
from hpn.pool.metrics import PoolResult, Recorder
from hpn.pool.policies import POLICIES, get_policy
from hpn.pool.policies.base import Policy, Slo
from hpn.pool.predictor import Predictor
from hpn.pool.simulate import simulate
from hpn.pool.simulated import SimulatedBackend
from hpn.pool.traces import Trace, load_trace, market

__all__ = [
    "POLICIES",
    "Backend",
    "Cluster",
    "Done",
    "Instance",
    "MetricsSink",
    "Policy",
    "PoolResult",
    "Predictor",
    "Recorder",
    "SimulatedBackend",
    "Slo",
    "Trace",
    "get_policy",
    "load_trace",
    "market",
    "simulate",
]
