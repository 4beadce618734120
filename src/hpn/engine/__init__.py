"""The flow-level simulator: fluid max-min rates, an event loop, a task DAG as input."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpn.engine.dag import FlowDAG
    from hpn.engine.result import Result, Series
    from hpn.engine.sim import CapacityEvents, simulate

__all__ = ["CapacityEvents", "FlowDAG", "Result", "Series", "simulate"]
_HOME = {
    "FlowDAG": "hpn.engine.dag",
    "Result": "hpn.engine.result",
    "Series": "hpn.engine.result",
    "CapacityEvents": "hpn.engine.sim",
    "simulate": "hpn.engine.sim",
}


def __getattr__(name: str) -> Any:  # on first use: importing the package stays cheap
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
