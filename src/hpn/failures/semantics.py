"""What a fault does under each access design (P §2.3, §4, §9.3).

- ``dual-tor`` (HPN, non-stacked): the two ToRs of a NIC are independent. A dead port (or a
  dead ToR) takes down only those links; the engine re-routes the NIC's flows over its other
  port, hence under dual-plane over the other plane, at that port's rate. A NIC is cut off
  only when both its ports are down.
- ``single-tor``: one port per NIC; a dead port or ToR cuts its NICs off, their flows stall
  and the synchronous job halts.
- ``stacked`` (stacked dual-ToR, the baseline of P §4.1): wired as dual-ToR, but a ToR fault
  takes the whole pair down (failure class (a): the partner shuts itself off), cutting off
  every NIC under the pair.

ToR-Agg, Agg and core faults are the same in every design: the links go down and routing
re-hashes (ECMP) or re-selects source ports (``hpn``) over the surviving uplinks.

Who moves the flows off a down link, and after how long, is :mod:`hpn.failures.failover`: the
host at once, the network after the BGP withdrawal, or, where no switch of the flows' plane
reaches the destination any more (dual-plane, a NIC-ToR link), only the sender's re-selection
(HPN: probe + path search; plain ECMP: never before the repair). Until then they are held:
blackholed, at rate 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.failures.failover import Failover, hold_times
from hpn.failures.faults import Fault, fault_links, fault_nodes
from hpn.topology.fabric import Fabric, LinkTier, NodeKind

DESIGNS = ("dual-tor", "single-tor", "stacked")


@dataclass(frozen=True, eq=False)
class Outage:
    """Directed links ``links`` at capacity 0 during [start, end) seconds; the flows crossing
    ``links[i]`` are held (blackholed, not re-routed) for its first ``hold[i]`` seconds, and
    ``who[i]`` moves them (0 the host, 1 the network, 2 the sender's re-selection)."""

    start: float
    end: float
    links: np.ndarray
    label: str
    hold: np.ndarray | None = None
    who: np.ndarray | None = None
    scale: float = 0.0  # capacity left on ``links`` (0: down; gray failures: 1 - loss)

    def held(self, t: float) -> np.ndarray:
        """The links whose flows are held at time ``t`` (none outside the outage)."""
        if self.hold is None or not self.start <= t < self.end:
            return self.links[:0]
        return self.links[t < self.start + self.hold]

    def changes(self) -> list[float]:
        """Times the outage's state changes: start, end of every hold, end."""
        out = [self.start, self.end]
        if self.hold is not None:
            out += [self.start + h for h in np.unique(self.hold) if 0 < h < self.end - self.start]
        return [x for x in out if math.isfinite(x)]


def ports_per_nic(fabric: Fabric) -> int:
    """NIC-ToR links per GPU (2 under dual-ToR, 1 under single-ToR)."""
    lk, kind = fabric.links, fabric.nodes.kind
    up = (lk.tier == LinkTier.NIC_TOR) & (kind[lk.src] == NodeKind.GPU)
    if not up.any():
        raise InputError("fabric", "has no GPU NIC-ToR links to fail")
    return int(np.bincount(lk.src[up]).max())


def design_of(fabric: Fabric, stacked: bool = False) -> str:
    """The design a fabric and the ``--stacked`` flag describe."""
    if ports_per_nic(fabric) < 2:
        if stacked:
            raise InputError("--stacked", "needs a dual-ToR fabric (drop --single-tor)")
        return "single-tor"
    return "stacked" if stacked else "dual-tor"


def tor_partners(fabric: Fabric, tor: int) -> np.ndarray:
    """The ToRs that share NICs with ``tor`` (its stacked pair)."""
    lk = fabric.links
    nic_up = lk.tier == LinkTier.NIC_TOR
    gpus = lk.src[nic_up & (lk.dst == tor)]
    other = lk.dst[nic_up & np.isin(lk.src, gpus)]
    return np.unique(other[other != tor])


def fault_down_links(fabric: Fabric, f: Fault, design: str) -> np.ndarray:
    """Directed links the fault takes down under ``design``."""
    links = fault_links(fabric, f)
    if design == "stacked" and f.kind == "tor":
        _, tor = fault_nodes(fabric, f)
        lk = fabric.links
        for p in tor_partners(fabric, tor):
            links = np.union1d(links, np.flatnonzero((lk.src == p) | (lk.dst == p)))
    return links


def outages(
    fabric: Fabric,
    faults: list[Fault],
    design: str,
    routing: str | None = None,
    failover: Failover | None = None,
) -> list[Outage]:
    """Every (start, end, links) window of the faults under ``design``; with ``routing``,
    the holds of :mod:`hpn.failures.failover` (``failover``: its delays, default
    :class:`Failover`), else every flow moves at once."""
    if design not in DESIGNS:
        raise InputError("design", f"unknown design {design!r}; choose from {', '.join(DESIGNS)}")
    out = []
    for f in faults:
        links = fault_down_links(fabric, f, design)
        hold = who = None
        if routing is not None and f.kind != "gray":
            hold, who = hold_times(fabric, links, routing, failover or Failover())
            if f.kind == "silent":  # nobody moves anything until the failure is detected
                hold = hold + f.detect
        elif f.kind == "silent":
            hold = np.full(len(links), f.detect)
        scale = 1.0 - f.loss if f.kind == "gray" else 0.0
        for i, (a, b) in enumerate(f.windows()):
            label = f.text or f.kind
            label = label if f.count == 1 else f"{label} #{i + 1}"
            out.append(Outage(a, b, links, label, hold, who, scale))
    return out


class Reach:
    """Which of a job's GPUs are cut off (every NIC-ToR link down) under a set of down links."""

    def __init__(self, fabric: Fabric, gpus: np.ndarray):
        lk = fabric.links
        self.gpus = np.asarray(gpus, np.int64).ravel()
        m = (lk.tier == LinkTier.NIC_TOR) & np.isin(lk.src, self.gpus)
        self.links = np.flatnonzero(m)
        pos = {int(g): i for i, g in enumerate(self.gpus)}
        self.owner = np.array([pos[int(s)] for s in lk.src[self.links]], np.int64)
        self.ports = np.bincount(self.owner, minlength=len(self.gpus))

    def cut_off(self, down: np.ndarray) -> np.ndarray:
        """Bool per job GPU: all its NIC ports are down (``down``: bool per directed link)."""
        dead = np.bincount(self.owner, weights=down[self.links], minlength=len(self.gpus))
        return dead >= self.ports

    def degraded(self, down: np.ndarray) -> np.ndarray:
        """Bool per job GPU: some but not all of its ports are down."""
        dead = np.bincount(self.owner, weights=down[self.links], minlength=len(self.gpus))
        return (dead > 0) & (dead < self.ports)
