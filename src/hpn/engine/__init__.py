"""The flow-level simulator: fluid max-min rates, an event loop, a task DAG as input."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpn.lazy import lazy_getattr

if TYPE_CHECKING:
    from hpn.engine.dag import FlowDAG
    from hpn.engine.events import CapacityEvents
    from hpn.engine.result import Result, Series
    from hpn.engine.sim import simulate

__all__ = ["CapacityEvents", "FlowDAG", "Result", "Series", "simulate"]
_HOME = {
    "FlowDAG": "hpn.engine.dag",
    "Result": "hpn.engine.result",
    "Series": "hpn.engine.result",
    "CapacityEvents": "hpn.engine.events",
    "simulate": "hpn.engine.sim",
}


__getattr__ = lazy_getattr(__name__, _HOME)  # on first use: importing the package stays cheap
