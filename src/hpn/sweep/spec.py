"""A sweep file: a command, a base config, a grid (every combination) and zipped lists.

```toml
name = "segments"              # optional; default: the file name
command = "topo summary"
plot = false                   # draw each point's plots
[base.fabric]
preset = "hpn"
[grid]                         # the cartesian product of these
"fabric.segments" = [1, 2, 4, 8]
"fabric.dual_plane" = [true, false]
[zip]                          # varied together (equal lengths), times the grid
"fabric.chip" = ["51.2T", "102.4T"]
"fabric.uplink_speed" = ["400G", "800G"]
```
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError, field_validator

from hpn.config import Model, load_toml, one_line
from hpn.errors import InputError
from hpn.store.dotted import config_hash, set_path
from hpn.store.paths import slug

MAX_POINTS = 100_000


class SweepSpec(Model):
    name: str | None = None
    command: str
    plot: bool = False
    base: dict[str, Any] = {}
    grid: dict[str, list[Any]] = {}
    zip: dict[str, list[Any]] = {}

    @field_validator("grid", "zip")
    @classmethod
    def _lists(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for path, values in v.items():
            if not re.fullmatch(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*", path):
                raise ValueError(f"{path!r} is not a dotted config path like fabric.segments")
            if not values:
                raise ValueError(f"{path!r} has no values")
        return v


@dataclass(frozen=True)
class Point:
    key: str  # stable: a digest of the command and the point's config
    config: dict[str, Any]
    label: str  # the varied fields, e.g. "segments=4 dual_plane=True"


def load_sweep(path: str | Path) -> SweepSpec:
    data = load_toml(path)
    data.setdefault("name", Path(path).stem)
    try:
        spec = SweepSpec(**data)
    except ValidationError as e:
        raise one_line(e, "sweep") from None
    lengths = {len(v) for v in spec.zip.values()}
    if len(lengths) > 1:
        raise InputError("sweep.zip", f"lists must have equal lengths, got {sorted(lengths)}")
    return spec


def sweep_id(spec: SweepSpec) -> str:
    return slug(spec.name or "sweep")


def points(spec: SweepSpec) -> list[Point]:
    """Every point of the sweep, in file order (grid last-varies-fastest)."""
    grid_keys = list(spec.grid)
    zip_keys = list(spec.zip)
    zip_rows = list(zip(*spec.zip.values(), strict=True)) if zip_keys else [()]
    combos = list(itertools.product(zip_rows, itertools.product(*spec.grid.values())))
    if len(combos) > MAX_POINTS:
        raise InputError("sweep", f"{len(combos):,} points; at most {MAX_POINTS:,}")
    out: list[Point] = []
    seen: set[str] = set()
    for zrow, grow in combos:
        cfg, parts = spec.base, []
        for path, value in [*zip(zip_keys, zrow, strict=True), *zip(grid_keys, grow, strict=True)]:
            try:
                cfg = set_path(cfg, path, value)
            except TypeError as e:
                raise InputError(f"sweep: {path}", str(e)) from None
            parts.append(f"{path.rsplit('.', 1)[-1]}={value}")
        key = config_hash({"command": spec.command, "config": cfg})[:12]
        if key not in seen:
            seen.add(key)
            out.append(Point(key, cfg, " ".join(parts) or "base"))
    return out
