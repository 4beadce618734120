"""Fabric builders: HPN and its variants, DCN+, fat trees, rail-only; as node and link arrays."""

from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind
from hpn.topology.presets import PRESETS, build, make_spec, spec_from_table

__all__ = [
    "PRESETS",
    "Fabric",
    "LinkTier",
    "Network",
    "NodeKind",
    "build",
    "make_spec",
    "spec_from_table",
]
