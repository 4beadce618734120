"""Failures: fault injection with dual-ToR failover semantics, and Monte Carlo reliability."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpn.lazy import lazy_getattr

if TYPE_CHECKING:
    from hpn.failures.checkpoint import Recovery
    from hpn.failures.faults import KINDS, Fault, fault_links, parse_fault
    from hpn.failures.run import run_fail
    from hpn.failures.semantics import DESIGNS, Outage, design_of, outages
    from hpn.failures.timeline import run_timeline
    from hpn.failures.workload import Iteration, SimpleStep, iteration_from_config, simple_iteration

__all__ = [
    "DESIGNS",
    "KINDS",
    "Fault",
    "Iteration",
    "Outage",
    "Recovery",
    "SimpleStep",
    "design_of",
    "fault_links",
    "iteration_from_config",
    "outages",
    "parse_fault",
    "run_fail",
    "run_timeline",
    "simple_iteration",
]
_HOME = {
    "Recovery": "hpn.failures.checkpoint",
    "KINDS": "hpn.failures.faults",
    "Fault": "hpn.failures.faults",
    "fault_links": "hpn.failures.faults",
    "parse_fault": "hpn.failures.faults",
    "run_fail": "hpn.failures.run",
    "DESIGNS": "hpn.failures.semantics",
    "Outage": "hpn.failures.semantics",
    "design_of": "hpn.failures.semantics",
    "outages": "hpn.failures.semantics",
    "run_timeline": "hpn.failures.timeline",
    "Iteration": "hpn.failures.workload",
    "SimpleStep": "hpn.failures.workload",
    "iteration_from_config": "hpn.failures.workload",
    "simple_iteration": "hpn.failures.workload",
}


__getattr__ = lazy_getattr(__name__, _HOME)  # on first use: importing the package stays cheap
