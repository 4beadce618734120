"""What ``hpn route polarization`` and ``hpn route paths`` measured (numpy-free, so the
commands can name their results without importing the routers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from hpn.result import Result


@dataclass
class PolarizationResult(Result):
    routing: str
    hashing: dict[str, Any] | str | None
    flows: int
    receiving_nics: int
    tor_port_load_ratio: float | None  # None: a port idle
    tor_port_max_share: float
    tor_port_mean_share: float
    idle_port_nics: int
    agg_downlink_max_over_mean: float | None  # None: no load on the Agg downlinks
    agg_downlinks_used: int
    agg_downlinks: int
    preset: str | None
    dual_plane: bool
    seed: int

    title = "hash polarization (P Fig 13)"

    def rows(self) -> list[tuple[str, Any]]:
        h = self.hashing if isinstance(self.hashing, dict) else {}
        ratio = self.tor_port_load_ratio
        planes = "dual-plane" if self.dual_plane else "single-plane"
        return [
            ("fabric", f"{self.preset} ({planes})"),
            (
                "routing",
                f"{self.routing}, hash {h.get('tor_hash')}, seeds {h.get('seeds')}, "
                f"bond {h.get('bond_hash')}",
            ),
            ("flows", self.flows),
            ("ToR port load ratio (worst NIC)", "inf (a port idle)" if ratio is None else ratio),
            (
                "largest port share (worst / mean NIC)",
                f"{self.tor_port_max_share:.0%} / {self.tor_port_mean_share:.0%}",
            ),
            ("Agg downlink max / mean", self.agg_downlink_max_over_mean),
            ("Agg downlinks used", f"{self.agg_downlinks_used} of {self.agg_downlinks}"),
        ]


class PairPaths(TypedDict):
    """Equal-cost paths between one NIC pair ."""

    paths: int
    per_plane: list[int]  # plane 0, plane 1


@dataclass
class PathsResult(Result):
    pairs: dict[str, PairPaths]  # same_segment_same_rail, ..., cross_pod (where there is one)
    search_space: int
    search_space_both_planes: int
    preset: str | None
    paper_table1: dict[str, str]  # design: search space

    def heading(self) -> str:
        return f"{self.preset}: equal-cost paths between NICs"

    def rows(self) -> list[tuple[str, Any]]:
        rows: list[tuple[str, Any]] = [
            (f"{name} (per plane)", f"{v['paths']:,} ({', '.join(map(str, v['per_plane']))})")
            for name, v in self.pairs.items()
        ]
        return rows + [
            ("search space in a pod, per plane", f"{self.search_space:,}"),
            ("paper Table 1: HPN pod", "O(60); 3-tier designs O(2048)-O(4096)"),
        ]
