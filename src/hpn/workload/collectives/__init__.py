"""Collective communication on a fabric: operations, algorithms (registered by name),
placement and nccl-tests-style sweeps."""

from hpn.workload.collectives.algorithms import ALGORITHMS, add_collective, get_algorithm
from hpn.workload.collectives.context import Ctx, Params, conn_keys
from hpn.workload.collectives.ops import OPS, bandwidths, get_op
from hpn.workload.collectives.placement import Placement, host_gpus, place
from hpn.workload.collectives.run import collective_dag, sweep

__all__ = [
    "ALGORITHMS",
    "OPS",
    "Ctx",
    "Params",
    "Placement",
    "add_collective",
    "bandwidths",
    "collective_dag",
    "conn_keys",
    "get_algorithm",
    "get_op",
    "host_gpus",
    "place",
    "sweep",
]
