"""The ``[routing]`` table: how switches and hosts hash, as commands and configs set it.

Every field defaults to None, meaning the production default of :class:`HashConfig` (seeds per
switch, hash offsets ToR 0 / Agg 10 / core 0, crc32 everywhere, LAG offsets 8 / 2 / 8, Linux
``layer3+4`` bond). Per-tier values are written ``TOR,AGG,CORE`` (``0,10,0``), one value for
every tier (``crc16``), or ``tier=value`` pairs (``agg=10``, ``tor=crc32,agg=crc16``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from hpn.config import Model
from hpn.errors import InputError

if TYPE_CHECKING:
    from hpn.routing.base import Router
    from hpn.topology.fabric import Fabric

TIERS = ("tor", "agg", "core")
DEFAULT_SEEDS: Literal["same", "tier", "switch"] = "switch"
"""Hash seeds by default: one per switch (Linux per-namespace seed, Cumulus, Dell)."""


def per_tier(text: str, field: str, cast: Callable[[str], Any] = str) -> dict[str, Any]:
    """``"0,10,0"``, ``"5"`` or ``"agg=10"`` -> ``{tier: value}`` for the tiers given.

    Parameters
    ----------
    text
        Three values (tor, agg, core), one for all tiers, or ``tier=value`` pairs.
    field
        Field named in errors.
    cast
        Type of the values.

    Returns
    -------
    dict
        Value per tier.

    Examples
    --------
    >>> per_tier("0,10,0", "offsets", int)
    {'tor': 0, 'agg': 10, 'core': 0}
    >>> per_tier("agg=10", "offsets", int)
    {'agg': 10}
    """
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts:
        raise InputError(field, "expected TOR,AGG,CORE, one value, or tier=value pairs")
    try:
        if all("=" in p for p in parts):
            out = {}
            for p in parts:
                k, _, v = p.partition("=")
                k = k.strip().lower()
                if k not in TIERS:
                    raise InputError(field, f"unknown tier {k!r}; choose from tor, agg, core")
                out[k] = cast(v.strip())
            return out
        if len(parts) == 1:
            return dict.fromkeys(TIERS, cast(parts[0]))
        if len(parts) == 3:
            return {t: cast(v) for t, v in zip(TIERS, parts, strict=True)}
    except ValueError:
        raise InputError(field, f"bad value in {text!r}") from None
    raise InputError(field, f"expected 1 or 3 values (TOR,AGG,CORE), got {len(parts)}")


class RoutingTable(Model):
    """``[routing]``: switch and host hashing for the ``ecmp`` and ``hpn`` policies."""

    ecmp_seeds: Literal["same", "tier", "switch"] | None = Field(
        None,
        description="hash seeds: same (every switch hashes alike: one seed, no offsets unless "
        "--ecmp-offset), tier (SONiC per-role) or switch (default: switch)",
    )
    ecmp_offset: str | None = Field(
        None,
        description="hash offset per tier, TOR,AGG,CORE bits rotated before the modulo "
        "(default: 0,10,0)",
    )
    ecmp_hash: str | None = Field(
        None,
        description="hash function per tier (crc32, crc32c, crc16, crc16-arc, xor16, mix64, "
        "linux: a Linux router's multipath hash), one name or TOR,AGG,CORE (default: crc32)",
    )
    lag_offset: str | None = Field(
        None, description="LAG member hash offset per tier (default: 8,2,8)"
    )
    bond: str | None = Field(
        None,
        description="host port choice: l34 (Linux layer3+4), rr, linux (a multipath route), "
        "or a hash (default: l34; linux when --ecmp-hash linux)",
    )

    def hashing(self) -> dict[str, Any] | None:
        """The router's ``hashing`` fields the table sets (None if it sets none)."""
        out: dict[str, Any] = {}
        if self.ecmp_seeds is not None:
            out["seeds"] = self.ecmp_seeds
        if self.ecmp_offset is not None:
            for t, v in per_tier(self.ecmp_offset, "routing.ecmp_offset", int).items():
                out[f"{t}_offset"] = v
        if self.lag_offset is not None:
            for t, v in per_tier(self.lag_offset, "routing.lag_offset", int).items():
                out[f"{t}_lag_offset"] = v
        if self.ecmp_hash is not None:
            for t, v in per_tier(self.ecmp_hash, "routing.ecmp_hash").items():
                out[f"{t}_hash"] = v
        if self.bond is not None:
            out["bond_hash"] = self.bond
        return out or None


def command_router(
    fabric: Fabric, policy: str | None, seed: int, table: RoutingTable | None
) -> Router:
    """The router a command runs with: ``policy`` (None: the fabric's default) and the
    ``[routing]`` table's hashing; an error if hashing is set for a policy without it.

    Parameters
    ----------
    fabric
        The fabric.
    policy
        Policy name; None: the fabric's default.
    seed
        Seed.
    table
        The command's ``[routing]`` table; None: default hashing.

    Returns
    -------
    Router
        The router.
    """
    from hpn.routing.base import router_for

    hashing = table.hashing() if table is not None else None
    return router_for(fabric, policy, seed=seed, hashing=hashing)
