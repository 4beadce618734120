"""Config pieces shared by commands: the ``[fabric]`` table, progress callbacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema

from hpn.config import Model
from hpn.errors import InputError
from hpn.routing.config import RoutingTable as _RoutingTable

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called by long services; the CLI draws a bar with it."""


def _fabric(value: Any) -> Model:
    from hpn.topology.presets import spec_from_table

    if isinstance(value, Model):
        return value
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InputError("fabric", f"expected a table, got {type(value).__name__}")
    return spec_from_table(value)


FabricSpec = Annotated[
    Any,
    BeforeValidator(_fabric),
    WithJsonSchema({"type": "object", "description": "a [fabric] table: preset and its fields"}),
]
"""A ``[fabric]`` table (``preset`` plus that preset's spec fields), validated into its spec."""


def fabric_field() -> Any:
    """The ``fabric`` field of a command config (default: the ``hpn`` preset)."""
    return Field(default_factory=dict, validate_default=True, description="the fabric")


# The ``[routing]`` table: its fields (``--ecmp-seeds``, ``--ecmp-offset``, ...) live with the
# routing semantics; ``hashing()`` gives the fields the user set (None: the defaults).
RoutingTable = _RoutingTable


def routing_field() -> Any:
    """The ``routing`` field of a command config."""
    return Field(default_factory=RoutingTable, description="hash settings of the routing")
