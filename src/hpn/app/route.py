"""``hpn route ...``: equal-cost paths, HPN source-port selection, hash polarization."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, TypedDict

from pydantic import Field

from hpn.app.base import Command, Outcome, Result
from hpn.app.common import FabricSpec, fabric_field
from hpn.config import Model
from hpn.errors import InputError
from hpn.routing.result import PathsResult, PolarizationResult

_HASH = "switch hash: crc32, crc32c, crc16, crc16-arc, xor16, mix64"


class HashOptions(Model):
    """Switch and host hashing (``--hash``, ``--seeds``, ``--bond``)."""

    tor_hash: str = Field(
        "crc32",
        description=_HASH + " (every tier unless set per tier)",
        json_schema_extra={"flag": "--hash"},
    )
    agg_hash: str | None = Field(None, description="Agg hash (default: tor_hash)")
    core_hash: str | None = Field(None, description="core hash (default: tor_hash)")
    seeds: str = Field("same", description="hash seeds: same, tier or switch")
    bond_hash: str = Field(
        "l34",
        description="host port choice: l34 (Linux bonding layer3+4), rr (RoCE LAG round "
        "robin) or a hash",
        json_schema_extra={"flag": "--bond"},
    )

    def hashing(self) -> dict[str, str]:
        """The router's ``hashing`` table, every tier resolved."""
        return {
            "tor_hash": self.tor_hash,
            "agg_hash": self.agg_hash or self.tor_hash,
            "core_hash": self.core_hash or self.tor_hash,
            "seeds": self.seeds,
            "bond_hash": self.bond_hash,
        }


class PolarizationOptions(HashOptions):
    """The ``[polarization]`` table."""

    routing: str = Field("ecmp", description="routing policy")
    seed: int = Field(1, ge=0, le=2**63 - 1, description="hash seed")
    hosts: int = Field(16, ge=1, description="hosts of the job in each of 2 segments")
    senders: int = Field(2, ge=1, description="peers each GPU sends to (at most hosts)")
    connections: int = Field(4, ge=1, description="connections per peer")


class PolarizationConfig(Model):
    """``hpn route polarization``: ``[fabric]`` and ``[polarization]``."""

    fabric: FabricSpec = fabric_field()
    polarization: PolarizationOptions = Field(default_factory=PolarizationOptions)


def polarization(cfg: PolarizationConfig) -> Outcome[PolarizationResult]:
    """The Fig 13 scenario: cross-segment DP traffic on one rail; ToR-port and Agg balance."""
    from hpn import jit
    from hpn.routing.polarization import polarization as run
    from hpn.topology import build

    o, spec = cfg.polarization, cfg.fabric
    hashing = o.hashing()
    f = build(spec)
    from hpn.routing.kernel_walk import _route_kernel

    with jit.kernels_for(f.num_links, (_route_kernel,)):  # small: the numpy walk
        out = run(f, o.routing, o.seed, o.hosts, o.senders, o.connections, hashing=hashing)
    return Outcome(replace(out, hashing=hashing))  # the hash settings as given


# --- paths ---------------------------------------------------------------------------------


class PathsConfig(Model):
    """``hpn route paths``: ``[fabric]``."""

    fabric: FabricSpec = fabric_field()


def paths(cfg: PathsConfig) -> Outcome[PathsResult]:
    """Equal-cost path counts between NIC pairs, and the path-search space (P Table 1)."""
    from hpn.routing.paths import path_report
    from hpn.topology import build

    return Outcome(path_report(build(cfg.fabric)))


# --- select --------------------------------------------------------------------------------


class SelectOptions(HashOptions):
    """The ``[select]`` table."""

    src: str = Field(description="sending NIC as HOST:NIC")
    dst: str = Field(description="receiving NIC as HOST:NIC")
    connections: int = Field(8, ge=1, le=4096, description="connections (queue pairs) to open")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="hash seed")


class SelectConfig(Model):
    """``hpn route select``: ``[fabric]`` and ``[select]``."""

    fabric: FabricSpec = fabric_field()
    select: SelectOptions


class Connection(TypedDict):
    """One connection's path: its UDP source port, plane, Agg switch, link ids and hops."""

    sport: int
    plane: int
    agg: str | None
    links: list[int]
    hops: list[str]


@dataclass
class SelectResult(Result):
    src: str
    dst: str
    connections: list[Connection]
    distinct_paths: int
    paths_available: int
    planes: list[int]

    def heading(self) -> str:
        return f"path selection {self.src} -> {self.dst}"

    def rows(self) -> list[tuple[str, Any]]:
        rows: list[tuple[str, Any]] = [
            (f"sport {c['sport']}", f"plane {c['plane']}  {' > '.join(c['hops'])}")
            for c in self.connections
        ]
        n = len(self.connections)
        return [*rows, ("distinct paths", f"{self.distinct_paths} of {n} connections")]


def parse_nic(text: str, field: str) -> tuple[int, int]:
    host, sep, nic = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(host), int(nic)
    except ValueError:
        raise InputError(field, f"expected HOST:NIC such as 12:3, got {text!r}") from None


def _gpu(f: Any, host: int, nic: int, field: str) -> int:
    import numpy as np

    nd = f.nodes
    hit = np.flatnonzero((nd.host == host) & (nd.index == nic) & np.isin(nd.kind, (0, 3)))
    if not len(hit):
        hosts = int(nd.host.max()) + 1
        raise InputError(field, f"no NIC {host}:{nic}; hosts are 0..{hosts - 1}")
    return int(hit[0])


def select(cfg: SelectConfig) -> Outcome[SelectResult]:
    """HPN precise path selection: a UDP source port per connection, on distinct paths."""
    import numpy as np

    from hpn import jit
    from hpn.routing.hpn_select import HpnRouter
    from hpn.topology import build

    o = cfg.select
    f = build(cfg.fabric)
    s = _gpu(f, *parse_nic(o.src, "--src"), "--src")
    d = _gpu(f, *parse_nic(o.dst, "--dst"), "--dst")
    if s == d:
        raise InputError("--dst", "must differ from --src")
    n = o.connections
    router = HpnRouter(seed=o.seed, hashing=o.hashing())
    from hpn.routing.kernel_search import _search_pass

    with jit.kernels_for(f.num_links + n, (_search_pass,)):  # small: the numpy search
        sel = router.select(f, np.full(n, s), np.full(n, d))
    nd, lk = f.nodes, f.links
    conns: list[Connection] = []
    for i in range(n):
        p = sel.paths[i]
        aggs = [int(x) for x in lk.dst[p] if nd.kind[x] == 5]
        conns.append(
            Connection(
                sport=int(sel.sport[i]),
                plane=int(sel.plane[i]),
                agg=f.node_name(aggs[0]) if aggs else None,
                links=[int(x) for x in p],
                hops=[f.node_name(int(x)) for x in lk.dst[p]],
            )
        )
    result = SelectResult(
        src=o.src,
        dst=o.dst,
        connections=conns,
        distinct_paths=len({tuple(c["links"]) for c in conns}),
        paths_available=int(sel.distinct_paths_found[0]),
        planes=np.bincount(sel.plane, minlength=2).tolist(),
    )
    return Outcome(result)


POLARIZATION = Command(
    "route polarization", PolarizationConfig, polarization, flags=("fabric", "polarization")
)
PATHS = Command("route paths", PathsConfig, paths, flags=("fabric",), stored=False)
SELECT = Command("route select", SelectConfig, select, flags=("fabric", "select"), stored=False)
