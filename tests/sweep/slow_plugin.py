"""A plug-in command for sweep and job tests (an ``hpn.commands`` entry point, installed by the
``plugin`` fixture of ``tests/conftest.py``): sleeps, then squares x."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from hpn.app.base import Command, Outcome, Result
from hpn.config import Model


class P(Model):
    x: float = 0.0
    sleep: float = 0.0
    alloc_gb: float = 0.0  # grab memory (for the dashboard's memory cap)
    fail: bool = False


class SquareConfig(Model):
    p: P = Field(default_factory=P)


@dataclass
class Square(Result):
    x: Any
    y: Any


def square(cfg: SquareConfig) -> Outcome[Square]:
    p = cfg.p
    time.sleep(p.sleep)
    if p.alloc_gb:
        import numpy as np

        np.ones(int(p.alloc_gb * 2**30 / 8)).sum()
    if p.fail:
        raise ValueError("asked to fail")
    x = int(p.x) if float(p.x).is_integer() else p.x
    return Outcome(Square(x, x * x), {"t": {"i": list(range(3))}})


SQUARE = Command(
    "test square",
    SquareConfig,
    square,
    summary="x -> x^2, slowly",
    example={"p": {"x": 3}},
)
