"""Routing policies: flows -> paths of link ids (CSR), registered by name.

Importing the package is cheap (its ``[routing]`` table, :mod:`hpn.routing.config`, needs no
numpy or scipy); the policies register themselves when a name below is first used.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ROUTERS",
    "Paths",
    "Router",
    "default_policy",
    "describe",
    "make_router",
    "register_router",
    "router_for",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'hpn.routing' has no attribute {name!r}")
    base = importlib.import_module("hpn.routing.base")
    base.load_policies()
    return getattr(base, name)
