"""Workloads as FlowDAGs: traffic patterns (and, later, LLM training jobs)."""

from hpn.workload.patterns import PATTERNS, endpoints, make_pattern

__all__ = ["PATTERNS", "endpoints", "make_pattern"]
