"""Workloads as FlowDAGs: traffic patterns (and, later, LLM training jobs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpn.lazy import lazy_getattr

if TYPE_CHECKING:
    from hpn.workload.patterns import PATTERNS, endpoints, make_pattern

__all__ = ["PATTERNS", "endpoints", "make_pattern"]
_HOME = {
    "PATTERNS": "hpn.workload.patterns",
    "endpoints": "hpn.workload.patterns",
    "make_pattern": "hpn.workload.patterns",
}


__getattr__ = lazy_getattr(__name__, _HOME)  # on first use: importing the package stays cheap
