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
    meta: dict[str, Any] = field(default_factory=dict)
