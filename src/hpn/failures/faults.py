"""Fault specs: the ``kind:key=value,...`` strings of ``hpn fail --fault``, and the links each
one takes down on a fabric.

Kinds (times in human units, ``repair`` is the outage's *duration*, omitted = never repaired):

- ``link:host=H,nic=N,port=P,at=T,repair=D``: one NIC port's link to its ToR (``host`` is the
  fabric's host index, as in ``host17/gpu5``; ``port`` 0 or 1, default 0);
- ``flap:host=H,nic=N,port=P,at=T,down=D,count=K,every=E``: that link down ``D``, ``K`` times
  (default 1), one flap every ``E`` (default ``2 D``);
- ``tor:segment=S,rail=R,plane=P,pod=0,...`` (or ``tor:host=H,nic=N,port=P,...``: the ToR that
  NIC port lands on): the ToR and all its links;
- ``tor-agg:<tor keys>,uplink=U,...``: the ToR's ``U``-th uplink (in wiring order);
- ``agg:pod=0,plane=P,index=I,...``: an Agg and all its links (``plane=-1`` single-plane);
- ``core-link:pod=0,plane=P,agg=I,uplink=U,...``: an Agg's ``U``-th uplink to the core;
- ``core:index=I,plane=P,...``: core switch ``I`` (as ``core-pP-I`` names it; ``plane``
  optional, checked) and all its links;
- ``silent:host=H,nic=N,port=P,at=T,repair=D,detect=E``: that NIC link drops every packet
  with its carrier up: nobody moves a flow until the failure is detected ``E`` later (default
  3 s: LACP's short timeout, three 1 s PDUs missed, IEEE 802.1AX; HPN's hosts bond with LACP,
  P §4.2), then as ``link``;
- ``gray:host=H,nic=N,port=P,at=T,repair=D,loss=L``: that NIC link drops a share ``L`` of
  the packets (0 < L < 1) and is never detected: its capacity is ``1 - L`` of nominal (an
  optimistic goodput: RoCE's go-back-N retransmits more than the lost packets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hpn.errors import InputError
from hpn.registry import Registry
from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind
from hpn.units import parse_duration

_TIMES = {"at", "repair", "down", "every", "detect"}
_FLOATS = {"loss"}
_TOR_KEYS = {"pod", "segment", "rail", "plane", "host", "nic", "port"}
KINDS: Registry[tuple[set[str], set[str]]] = Registry("fault kind", field="--fault")
"""Fault kinds: ``(required, allowed)`` keys of each."""
KINDS.add(
    "link",
    ({"host", "nic", "at"}, {"host", "nic", "port", "at", "repair"}),
    "one NIC port's link to its ToR",
)
KINDS.add(
    "flap",
    ({"host", "nic", "at", "down"}, {"host", "nic", "port", "at", "down", "count", "every"}),
    "that link, down seconds, count times",
)
KINDS.add(
    "silent",
    ({"host", "nic", "at"}, {"host", "nic", "port", "at", "repair", "detect"}),
    "a NIC link dropping all packets, carrier up, until detected",
)
KINDS.add(
    "gray",
    ({"host", "nic", "at", "loss"}, {"host", "nic", "port", "at", "repair", "loss"}),
    "a NIC link dropping a share of the packets, never detected",
)
KINDS.add("tor", ({"at"}, _TOR_KEYS | {"at", "repair"}), "a ToR and all its links")
KINDS.add("tor-agg", ({"at", "uplink"}, _TOR_KEYS | {"uplink", "at", "repair"}), "one ToR uplink")
KINDS.add(
    "agg", ({"index", "at"}, {"pod", "plane", "index", "at", "repair"}), "an Agg and all its links"
)
KINDS.add("core", ({"index", "at"}, {"plane", "index", "at", "repair"}), "a core and all its links")
KINDS.add(
    "core-link",
    ({"agg", "at"}, {"pod", "plane", "agg", "uplink", "at", "repair"}),
    "an Agg's uplink to the core",
)


@dataclass(frozen=True)
class Fault:
    """One parsed fault: its kind, integer keys, and times in seconds."""

    kind: str
    keys: dict[str, int] = field(default_factory=dict)
    at: float = 0.0
    repair: float = math.inf  # outage duration
    down: float = 0.0  # flap: seconds down per flap
    count: int = 1  # flap: number of flaps
    every: float = 0.0  # flap: period
    text: str = ""
    detect: float = 3.0  # silent: seconds until detected (LACP short timeout)
    loss: float = 0.0  # gray: share of packets dropped

    def windows(self) -> list[tuple[float, float]]:
        """The (start, end) outages of this fault, in seconds."""
        if self.kind == "flap":
            return [
                (self.at + i * self.every, self.at + i * self.every + self.down)
                for i in range(self.count)
            ]
        return [(self.at, self.at + self.repair)]


def parse_fault(text: str, name: str = "--fault") -> Fault:
    """Parse ``kind:key=value,...``; InputError naming what is wrong."""
    kind, sep, body = text.strip().partition(":")
    kind = kind.strip()
    if not sep or kind not in KINDS:
        raise InputError(
            name, f"expected KIND:key=value,... with KIND one of {', '.join(KINDS)}, got {text!r}"
        )
    required, allowed = KINDS[kind]
    vals: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in body.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key or not value.strip():
            raise InputError(name, f"expected key=value in {text!r}, got {item!r}")
        if key not in allowed:
            raise InputError(name, f"{kind} takes {', '.join(sorted(allowed))}; not {key!r}")
        if key in vals:
            raise InputError(name, f"{key!r} given twice in {text!r}")
        vals[key] = value.strip()
    tor_by_nic = kind in ("tor", "tor-agg") and "host" in vals
    need = set(required) | ({"host", "nic"} if tor_by_nic else set())
    if kind in ("tor", "tor-agg") and not tor_by_nic:
        need |= {"segment"}
    missing = sorted(need - set(vals))
    if missing:
        raise InputError(name, f"{kind} fault needs {', '.join(missing)} (in {text!r})")
    times = {k: parse_duration(v, f"{name} {k}") for k, v in vals.items() if k in _TIMES}
    ints: dict[str, int] = {}
    floats: dict[str, float] = {}
    for k, v in vals.items():
        if k in _TIMES:
            continue
        if k in _FLOATS:
            try:
                floats[k] = float(v)
            except ValueError:
                raise InputError(name, f"{k} must be a number, got {v!r}") from None
            if not 0 < floats[k] < 1:
                raise InputError(name, f"{k} must be in (0, 1), got {v!r}")
            continue
        try:
            ints[k] = int(v)
        except ValueError:
            raise InputError(name, f"{k} must be an integer, got {v!r}") from None
        if ints[k] < 0 and not (k == "plane" and ints[k] == -1):
            raise InputError(name, f"{k} must be >= 0, got {v!r}")
    f = Fault(
        kind,
        ints,
        times["at"],
        times.get("repair", math.inf),
        text=text.strip(),
        detect=times.get("detect", 3.0),
        loss=floats.get("loss", 0.0),
    )
    if kind == "flap":
        down, count = times["down"], ints.pop("count", 1)
        every = times.get("every", 2 * down)
        if down <= 0 or count < 1:
            raise InputError(name, f"flap needs down > 0 and count >= 1 (in {text!r})")
        if count > 1 and every <= down:
            raise InputError(name, f"flap every ({every:g}s) must exceed down ({down:g}s)")
        f = Fault(kind, ints, f.at, down, down, count, every, f.text)
    if "port" in ints and ints["port"] > 1:
        raise InputError(name, f"port must be 0 or 1, got {ints['port']}")
    return f


# --- mapping to the fabric -----------------------------------------------------------------


def _one(mask: np.ndarray, what: str) -> int:
    ids = np.flatnonzero(mask)
    if len(ids) != 1:
        raise InputError(
            "--fault",
            f"no {what} in this fabric"
            if not len(ids)
            else f"{what} is ambiguous ({len(ids)} matches)",
        )
    return int(ids[0])


def nic_link(fabric: Fabric, host: int, nic: int, port: int = 0) -> int:
    """The directed link GPU ``nic`` of ``host`` -> its port-``port`` ToR."""
    n, lk = fabric.nodes, fabric.links
    gpu = _one(
        (n.kind == NodeKind.GPU) & (n.host == host) & (n.index == nic), f"host {host} nic {nic}"
    )
    return _one(
        (lk.src == gpu) & (lk.tier == LinkTier.NIC_TOR) & (lk.port == port),
        f"port {port} of host {host} nic {nic}",
    )


def _tor(fabric: Fabric, k: dict[str, int]) -> int:
    if "host" in k:
        return int(fabric.links.dst[nic_link(fabric, k["host"], k["nic"], k.get("port", 0))])
    n = fabric.nodes
    m = (n.kind == NodeKind.TOR) & (n.network == Network.BACKEND)
    m &= (n.pod == k.get("pod", 0)) & (n.segment == k["segment"])
    m &= n.plane == k.get("plane", 0)
    if "rail" in k or (n.rail[m] >= 0).any():
        m &= n.rail == k.get("rail", -1)
    where = ", ".join(f"{x}={k[x]}" for x in ("pod", "segment", "rail", "plane") if x in k)
    return _one(m, f"ToR with {where}")


def _uplink(fabric: Fabric, node: int, tier: LinkTier, u: int, what: str) -> int:
    lk = fabric.links
    ups = np.flatnonzero((lk.src == node) & (lk.tier == tier))
    if not 0 <= u < len(ups):
        raise InputError("--fault", f"{what} has uplinks 0..{len(ups) - 1}, not {u}")
    return int(ups[u])


def _agg(fabric: Fabric, k: dict[str, int], key: str) -> int:
    n = fabric.nodes
    m = (n.kind == NodeKind.AGG) & (n.network == Network.BACKEND) & (n.pod == k.get("pod", 0))
    m &= (n.plane == k.get("plane", 0)) | (n.plane < 0) & (k.get("plane", 0) in (0, -1))
    return _one(
        m & (n.index == k[key]),
        f"Agg pod={k.get('pod', 0)} plane={k.get('plane', 0)} index={k[key]}",
    )


def _core(fabric: Fabric, k: dict[str, int]) -> int:
    n = fabric.nodes
    m = (n.kind == NodeKind.CORE) & (n.network == Network.BACKEND) & (n.index == k["index"])
    if "plane" in k:
        m &= n.plane == k["plane"]
    if not m.any() and not ((n.kind == NodeKind.CORE) & (n.network == Network.BACKEND)).any():
        raise InputError("--fault", "no core in this fabric (a 1-pod fabric has none: --pods 2)")
    where = f"index={k['index']}" + (f" plane={k['plane']}" if "plane" in k else "")
    return _one(m, f"core with {where}")


def _incident(fabric: Fabric, node: int) -> np.ndarray:
    lk = fabric.links
    return np.flatnonzero((lk.src == node) | (lk.dst == node))


def fault_nodes(fabric: Fabric, f: Fault) -> tuple[str, int]:
    """('link', directed link id) or ('node', node id) that the fault hits."""
    k = f.keys
    if f.kind in ("link", "flap", "silent", "gray"):
        return "link", nic_link(fabric, k["host"], k["nic"], k.get("port", 0))
    if f.kind == "tor":
        return "node", _tor(fabric, k)
    if f.kind == "tor-agg":
        return "link", _uplink(fabric, _tor(fabric, k), LinkTier.TOR_AGG, k["uplink"], "the ToR")
    if f.kind == "agg":
        return "node", _agg(fabric, k, "index")
    if f.kind == "core":
        return "node", _core(fabric, k)
    return "link", _uplink(
        fabric, _agg(fabric, k, "agg"), LinkTier.AGG_CORE, k.get("uplink", 0), "the Agg"
    )


def fault_links(fabric: Fabric, f: Fault) -> np.ndarray:
    """Directed link ids (both directions) the fault takes down, sorted."""
    what, x = fault_nodes(fabric, f)
    links = np.array([x]) if what == "link" else _incident(fabric, x)
    return np.unique(np.concatenate([links, links ^ 1]))
