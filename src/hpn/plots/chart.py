"""``Chart``: a plot described as plain data, drawn by either backend (PNG or HTML)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np


@dataclass
class Line:
    name: str
    x: np.ndarray
    y: np.ndarray
    step: bool = False  # a step function (CDFs)


@dataclass
class Bar:
    """A Gantt bar: ``row`` (y category), [start, end) on x, coloured by ``group``."""

    row: str
    start: float
    end: float
    group: str


@dataclass
class Chart:
    kind: Literal["line", "heatmap", "gantt", "bar"]
    title: str
    xlabel: str = ""
    ylabel: str = ""
    lines: list[Line] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    # heatmap: z[row, col] over x (columns) and rows (labels); bar: x categories, one Line each
    z: np.ndarray | None = None
    x: np.ndarray | None = None
    rows: list[str] = field(default_factory=list)
    zlabel: str = ""
    categories: list[str] = field(default_factory=list)
    markers: list[tuple[float, str]] = field(default_factory=list)  # vertical lines (faults)
    log_x: bool = False
    log_y: bool = False
    xticks: list[tuple[float, str]] = field(default_factory=list)  # (value, text); [] = auto
    y_from_zero: bool = False  # the y axis starts at 0 (so a small dip looks small)
    meta: dict[str, Any] = field(default_factory=dict)

    def marker_levels(self, near: float = 0.04) -> list[tuple[float, str, int]]:
        """Markers with labels at one time merged, and a label level (0, 1, 2, 3) so labels
        of markers closer than ``near`` of the x range do not overlap."""
        merged: dict[float, list[str]] = {}
        for x, label in sorted(self.markers):
            labels = merged.setdefault(float(x), [])
            if label not in labels:
                labels.append(label)
        xs = sorted(merged)
        xr = [v for ln in self.lines for v in np.asarray(ln.x, float)] + xs
        span = (max(xr) - min(xr)) if xr else 1.0
        out: list[tuple[float, str, int]] = []
        level, prev = 0, None
        for x in xs:
            level = (level + 1) % 4 if prev is not None and x - prev < near * span else 0
            out.append((x, ", ".join(merged[x]), level))
            prev = x
        return out
