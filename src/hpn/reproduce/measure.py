"""The registry of measures: name -> function(context, jobs) -> :class:`Measured`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hpn.registry import Registry
from hpn.reproduce.context import Context


@dataclass
class Measured:
    """What a measure computed: the model's value of the claim and the model's series for the
    figure (``{name: [[x, y], ...]}``, the paper's series names where they pair up)."""

    value: float | None
    series: dict[str, list[list[Any]]] = field(default_factory=dict)
    detail: str = ""  # one line: the numbers the value comes from


Measure = Callable[[Context, dict[str, dict[str, Any]]], Measured]
MEASURES: Registry[Measure] = Registry("measure")


def measure(name: str) -> Callable[[Measure], Measure]:
    """Register a measure under ``name`` (the ``measure`` field of a claim)."""

    def deco(fn: Measure) -> Measure:
        MEASURES.add(name, fn, (fn.__doc__ or "").strip().split("\n")[0])
        return fn

    return deco


def gain(new: float, old: float) -> float:
    """Percent gain of ``new`` over ``old``.

    Examples
    --------
    >>> gain(27.2, 25.6)
    6.25
    """
    return round((new / old - 1) * 100, 4)


__all__ = ["MEASURES", "Measured", "gain", "measure"]
