"""The flow-level simulator: fluid max-min rates, an event loop, a task DAG as input."""

from hpn.engine.dag import FlowDAG
from hpn.engine.result import Result, Series
from hpn.engine.sim import CapacityEvents, simulate

__all__ = ["CapacityEvents", "FlowDAG", "Result", "Series", "simulate"]
