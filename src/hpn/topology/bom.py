"""Bill of materials: switches, optics and cables, switch power, the heat-sink check, cost.

Chip power by capacity is read off the paper's Fig 9a (data of an unnamed chip vendor,
about +-5 %); between points it is interpolated on a log-log scale and beyond 51.2T
extrapolated along the last segment (flagged). Heat-sink limits are Fig 9b: a 51.2T chip
(~750 W) is beyond a heat pipe (~660 W) and the vendor's vapor chamber (~730 W), which is why
Alibaba designed its own (~810 W).
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

import numpy as np
from pydantic import Field, field_validator

from hpn.config import Model
from hpn.errors import InputError
from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind
from hpn.units import format_bandwidth

CHIP_POWER_W = {3.2e12: 175.0, 6.4e12: 310.0, 12.8e12: 365.0, 25.6e12: 520.0, 51.2e12: 750.0}
HEAT_SINK_LIMIT_W = {
    "heat_pipe": 660.0,
    "vendor_vapor_chamber": 730.0,
    "optimized_vapor_chamber": 810.0,
}


class Prices(Model):
    """Unit prices, keyed by chip capacity (``51.2T``) or port speed (``400G``)."""

    currency: str = "USD"
    switch: dict[str, float] = Field(default_factory=dict)
    transceiver: dict[str, float] = Field(default_factory=dict)
    cable: dict[str, float] = Field(default_factory=dict)

    @field_validator("switch", "transceiver", "cable")
    @classmethod
    def _non_negative(cls, table: dict[str, float]) -> dict[str, float]:
        for key, price in table.items():
            if price < 0:
                raise ValueError(f"price of {key} must be >= 0, got {price}")
        return table


class SwitchRow(TypedDict):
    """One tier's switches in a bill of materials."""

    tier: str
    chip: str
    count: int
    power_w: float


class LinkRow(TypedDict):
    """One tier's links of one speed in a bill of materials."""

    tier: str
    speed: str
    cables: int
    transceivers: int


class BomTotals(TypedDict):
    """Switches, cables and transceivers in all; switch power."""

    switches: int
    cables: int
    transceivers: int
    switch_power_kw: float


class ChipFigures(TypedDict):
    """The switch chip: capacity label, power, whether the power was extrapolated."""

    capacity: str
    power_w: float
    power_extrapolated: bool


class HeatSinkFit(TypedDict):
    """A heat sink's limit and whether it cools the chip."""

    limit_w: float
    fits: bool


class BomCost(TypedDict):
    """Cost of switches, transceivers and cables at the given prices."""

    currency: str
    switches: float
    transceivers: float
    cables: float
    total: float


class Bom(TypedDict):
    """A bill of materials (the JSON of ``hpn topo bom``)."""

    switches: list[SwitchRow]
    links: list[LinkRow]
    totals: BomTotals
    chip: ChipFigures
    thermal: dict[str, HeatSinkFit]
    cost: NotRequired[BomCost]


def chip_power(capacity: float) -> tuple[float, bool]:
    """(watts, extrapolated) for a chip of ``capacity`` bit/s.

    Parameters
    ----------
    capacity
        Chip switching capacity, bit/s.

    Returns
    -------
    tuple of (float, bool)
        Power in watts (log-log interpolation of Fig 9a), and whether it was extrapolated
        beyond the figure's 3.2T..51.2T.

    Examples
    --------
    >>> watts, extrapolated = chip_power(51.2e12)
    >>> round(watts), extrapolated
    (750, False)
    >>> chip_power(102.4e12)[1]
    True
    """
    caps = np.array(sorted(CHIP_POWER_W))
    watts = np.array([CHIP_POWER_W[c] for c in caps])
    x, lx, ly = np.log(capacity), np.log(caps), np.log(watts)
    if caps[0] <= capacity <= caps[-1]:
        return float(np.exp(np.interp(x, lx, ly))), False
    i = (0, 1) if capacity < caps[0] else (-2, -1)
    slope = (ly[i[1]] - ly[i[0]]) / (lx[i[1]] - lx[i[0]])
    return float(np.exp(ly[i[1]] + slope * (x - lx[i[1]]))), True


_TIER_NAMES = {
    LinkTier.NIC_TOR: "nic_tor",
    LinkTier.TOR_AGG: "tor_agg",
    LinkTier.AGG_CORE: "agg_core",
    LinkTier.FE_NIC_TOR: "frontend_nic_tor",
    LinkTier.FE_TOR_AGG: "frontend_tor_agg",
    LinkTier.FE_AGG_CORE: "frontend_agg_core",
}


def bill_of_materials(f: Fabric, prices: Prices | None = None) -> Bom:
    """Switches by tier, optics and cables by tier and speed, power, thermal check, cost.

    Parameters
    ----------
    f
        The fabric.
    prices
        Unit prices; None: no ``cost`` part.

    Returns
    -------
    Bom
        ``switches`` (:class:`SwitchRow` each), ``links`` (:class:`LinkRow` each), ``totals``,
        ``chip``, ``thermal`` (fits per heat sink) and, with prices, ``cost``.

    Raises
    ------
    InputError
        When a price is missing for a chip or speed the fabric uses.
    """
    chip = float(getattr(f.spec, "chip", 0.0) or 0.0)
    if not chip:  # fat trees and imports: the chip is what the busiest switch needs
        sw = f.nodes.kind[f.links.src] >= NodeKind.TOR
        chip = float(np.bincount(f.links.src[sw], f.links.capacity[sw]).max()) if sw.any() else 0
    chip_label = format_bandwidth(chip) + "bps" if chip else "n/a"
    watts, extrapolated = chip_power(chip) if chip else (0.0, False)
    switches: list[SwitchRow] = []
    for net in Network:
        for kind in (NodeKind.TOR, NodeKind.AGG, NodeKind.CORE):
            n = f.count(kind, net)
            if n:
                tier = ("frontend_" if net == Network.FRONTEND else "") + kind.name.lower()
                switches.append(
                    {"tier": tier, "chip": chip_label, "count": n, "power_w": round(n * watts, 1)}
                )
    links: list[LinkRow] = []
    phys = slice(0, None, 2)
    tiers, caps = f.links.tier[phys], f.links.capacity[phys]
    for t, name in _TIER_NAMES.items():
        m = tiers == t
        for cap in np.unique(caps[m]):
            n = int(np.count_nonzero(m & (caps == cap)))
            links.append(
                {
                    "tier": name,
                    "speed": format_bandwidth(float(cap)),
                    "cables": n,
                    "transceivers": 2 * n,
                }
            )
    total_switches = sum(s["count"] for s in switches)
    out: Bom = {
        "switches": switches,
        "links": links,
        "totals": {
            "switches": total_switches,
            "cables": sum(x["cables"] for x in links),
            "transceivers": sum(x["transceivers"] for x in links),
            "switch_power_kw": round(total_switches * watts / 1e3, 2),
        },
        "chip": {
            "capacity": chip_label,
            "power_w": round(watts, 1),
            "power_extrapolated": extrapolated,
        },
        "thermal": {
            name: {"limit_w": lim, "fits": watts <= lim} for name, lim in HEAT_SINK_LIMIT_W.items()
        },
    }
    if prices is not None:
        out["cost"] = _cost(out, prices, chip_label.removesuffix("bps"))
    return out


def _price(table: dict[str, float], key: str, what: str) -> float:
    if key not in table:
        raise InputError(f"prices.{what}", f"no price for {key!r}; priced: {sorted(table)}")
    return float(table[key])


def _cost(bom: Bom, prices: Prices, chip: str) -> BomCost:
    sw = sum(s["count"] for s in bom["switches"]) * _price(prices.switch, chip, "switch")
    optics = sum(
        x["transceivers"] * _price(prices.transceiver, x["speed"], "transceiver")
        for x in bom["links"]
    )
    cables = sum(x["cables"] * _price(prices.cable, x["speed"], "cable") for x in bom["links"])
    return {
        "currency": prices.currency,
        "switches": sw,
        "transceivers": optics,
        "cables": cables,
        "total": sw + optics + cables,
    }
