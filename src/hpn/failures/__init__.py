"""Failures: fault injection with dual-ToR failover semantics, and Monte Carlo reliability."""

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
