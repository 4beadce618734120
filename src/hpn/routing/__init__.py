"""Routing policies: flows -> paths of link ids (CSR), registered by name."""

from hpn.routing import ecmp as _ecmp  # noqa: F401  (registers "ecmp")
from hpn.routing import hpn_select as _hpn  # noqa: F401  (registers "hpn")
from hpn.routing import ideal as _ideal  # noqa: F401  (registers "ideal")
from hpn.routing import shortest as _shortest  # noqa: F401  (registers "random")
from hpn.routing.base import (
    ROUTERS,
    Paths,
    Router,
    default_policy,
    describe,
    make_router,
    register_router,
    router_for,
)

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
