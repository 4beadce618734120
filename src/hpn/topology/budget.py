"""Port budgets: a switch's ports follow from its chip capacity and port speeds.

Nothing here is a lookup table. A spec that needs more ports than a chip has is refused with an
:class:`~hpn.errors.InputError` naming the tier, the ports needed and the ports available.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hpn.errors import InputError
from hpn.units import format_bandwidth as fmt

_EPS = 1e-9


def ports(capacity: float, speed: float) -> int:
    """How many ports of ``speed`` a chip of ``capacity`` has.

    Parameters
    ----------
    capacity
        Chip switching capacity, bit/s.
    speed
        Port speed, bit/s.

    Returns
    -------
    int
        ``floor(capacity / speed)`` (a rounding error of 1e-9 tolerated).

    Examples
    --------
    >>> ports(51.2e12, 400e9)
    128
    """
    return int(math.floor(capacity / speed + _EPS))


@dataclass(frozen=True)
class TorBudget:
    down_active: int
    down_backup: int
    down_speed: float
    uplinks: int
    up_speed: float
    chip: float

    @property
    def oversubscription(self) -> float:
        """Active downlink bandwidth over uplink bandwidth."""
        up = self.uplinks * self.up_speed
        return self.down_active * self.down_speed / up if up else math.inf


def tor_budget(
    chip: float,
    down_speed: float,
    up_speed: float,
    active: int | None,
    backup: int,
    uplinks: int | None,
) -> TorBudget:
    """Split a ToR chip: active downlinks default to half the chip, uplinks to what is left.

    Parameters
    ----------
    chip
        ToR chip capacity, bit/s.
    down_speed
        Downlink (NIC port) speed, bit/s.
    up_speed
        Uplink (to Agg) speed, bit/s.
    active
        Active downlinks; None: as many as half the chip carries.
    backup
        Backup downlinks (ports for backup hosts).
    uplinks
        Uplinks; None: every port left after the downlinks.

    Returns
    -------
    TorBudget
        The split.

    Raises
    ------
    InputError
        When the downlinks and uplinks asked for do not fit on the chip (field ``tor``).

    Examples
    --------
    The HPN ToR (P §5): a 51.2T chip, 128 + 8 ports of 200G down, 60 of 400G up:

    >>> t = tor_budget(51.2e12, 200e9, 400e9, None, 8, None)
    >>> t.down_active, t.down_backup, t.uplinks, round(t.oversubscription, 3)
    (128, 8, 60, 1.067)
    """
    if active is None:
        active = ports(chip / 2, down_speed)
    down_bw = (active + backup) * down_speed
    if down_bw > chip * (1 + _EPS):
        raise InputError(
            "tor",
            f"needs {active + backup} downlinks of {fmt(down_speed)} = {fmt(down_bw)}, "
            f"the {fmt(chip)} chip has {ports(chip, down_speed)} such ports",
        )
    left = ports(chip - down_bw, up_speed)
    if uplinks is None:
        uplinks = left
    elif uplinks > left:
        raise InputError(
            "tor",
            f"needs {uplinks} uplinks of {fmt(up_speed)} beside {active + backup} downlinks of "
            f"{fmt(down_speed)}, the {fmt(chip)} chip has {left} uplink ports left",
        )
    if active < 1:
        raise InputError("tor", f"a {fmt(chip)} chip has no {fmt(down_speed)} downlink port")
    return TorBudget(active, backup, down_speed, uplinks, up_speed, chip)


@dataclass(frozen=True)
class AggBudget:
    down: int
    up: int
    speed: float

    @property
    def oversubscription(self) -> float:
        """Downlinks over uplinks (inf without uplinks)."""
        return self.down / self.up if self.up else math.inf


def agg_budget(chip: float, speed: float, oversubscription: float) -> AggBudget:
    """Split an Agg's radix into downlinks and uplinks at ``down : up = oversubscription``.

    Parameters
    ----------
    chip
        Agg chip capacity, bit/s.
    speed
        Port speed, bit/s (downlinks and uplinks alike).
    oversubscription
        Wanted downlink : uplink ratio (the count is rounded; at least one downlink).

    Returns
    -------
    AggBudget
        The split.

    Examples
    --------
    >>> agg_budget(51.2e12, 400e9, 15.0)
    AggBudget(down=120, up=8, speed=400000000000.0)
    """
    radix = ports(chip, speed)
    down = int(round(radix * oversubscription / (oversubscription + 1)))
    down = min(max(down, 1), radix)
    return AggBudget(down=down, up=radix - down, speed=speed)


def require(tier: str, needed: int, available: int, what: str) -> None:
    """Refuse when a tier needs more ports than it has.

    Parameters
    ----------
    tier
        The field named in the error (``"agg"``, ``"frontend.core"``).
    needed, available
        Ports needed and ports the tier has.
    what
        What the ports are for, in the message.

    Raises
    ------
    InputError
        When ``needed > available``.
    """
    if needed > available:
        raise InputError(tier, f"needs {needed} {what}, {available} available")
