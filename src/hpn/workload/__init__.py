"""Workloads as FlowDAGs: traffic patterns (and, later, LLM training jobs)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpn.workload.patterns import PATTERNS, endpoints, make_pattern

__all__ = ["PATTERNS", "endpoints", "make_pattern"]
_HOME = {
    "PATTERNS": "hpn.workload.patterns",
    "endpoints": "hpn.workload.patterns",
    "make_pattern": "hpn.workload.patterns",
}


def __getattr__(name: str) -> Any:  # on first use: importing the package stays cheap
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
