"""The serving pool (Aegaeon, SOSP 2025): traces, cost model, policies, backend, metrics.

trace -> policy (scheduler) -> backend (simulated clock | real engine) -> metrics
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpn.lazy import lazy_getattr

if TYPE_CHECKING:
    from hpn.pool.backend import Backend, Cluster, Done, Instance, MetricsSink
    from hpn.pool.metrics import Recorder
    from hpn.pool.policies import POLICIES, get_policy
    from hpn.pool.policies.base import Policy, Slo
    from hpn.pool.predictor import Predictor
    from hpn.pool.result import PoolResult
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
_HOME = {
    **dict.fromkeys(["Backend", "Cluster", "Done", "Instance", "MetricsSink"], "hpn.pool.backend"),
    "Recorder": "hpn.pool.metrics",
    "POLICIES": "hpn.pool.policies",
    "get_policy": "hpn.pool.policies",
    "Policy": "hpn.pool.policies.base",
    "Slo": "hpn.pool.policies.base",
    "Predictor": "hpn.pool.predictor",
    "PoolResult": "hpn.pool.result",
    "simulate": "hpn.pool.simulate",
    "SimulatedBackend": "hpn.pool.simulated",
    **dict.fromkeys(["Trace", "load_trace", "market"], "hpn.pool.traces"),
}


__getattr__ = lazy_getattr(__name__, _HOME)  # on first use: importing the package stays cheap
