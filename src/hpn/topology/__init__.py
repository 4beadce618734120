"""Fabric builders: HPN and its variants, DCN+, fat trees, rail-only; as node and link arrays."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpn.lazy import lazy_getattr

if TYPE_CHECKING:
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
_HOME = {
    "Fabric": "hpn.topology.fabric",
    "LinkTier": "hpn.topology.fabric",
    "Network": "hpn.topology.fabric",
    "NodeKind": "hpn.topology.fabric",
    "PRESETS": "hpn.topology.presets",
    "build": "hpn.topology.presets",
    "make_spec": "hpn.topology.presets",
    "spec_from_table": "hpn.topology.presets",
}


__getattr__ = lazy_getattr(__name__, _HOME)  # on first use: importing the package stays cheap
