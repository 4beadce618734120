"""A plug-in package as a user would write one: a pool policy with one knob, a fabric preset
and a command, registered through entry points (``tests/test_plugins.py`` installs them)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import Field

from hpn.app.base import Command, Outcome, Result
from hpn.config import Model
from hpn.pool.policies.base import PolicyContext
from hpn.pool.policies.dedicated import Dedicated
from hpn.topology.fat_tree import build_fat_tree
from hpn.topology.presets import Preset
from hpn.topology.spec import FatTreeSpec


class FewKnobs(Model):
    """`few`: serve only the most popular models."""

    served: int = Field(1, ge=1, description="models given an instance")


class Few(Dedicated):
    """Dedicated instances for the `served` most popular models only."""

    name = "few"
    summary = "dedicated instances for the most popular models only"
    Knobs = FewKnobs

    def __init__(self, ctx: PolicyContext, served: int = 1, **kw: Any) -> None:
        rates = ctx.rates
        top = sorted(rates, key=lambda m: (-rates[m], m))[:served]
        super().__init__(replace(ctx, rates={m: rates[m] for m in top}), **kw)
        self.rates = rates
        self.unserved = [m for m in rates if m not in self.home]


class MiniSpec(FatTreeSpec):
    """A 4-ary fat tree."""

    preset: Literal["mini-tree"] = "mini-tree"  # type: ignore[assignment]
    k: int = Field(4, ge=2, le=8, description="switch radix (even, at most 8)")


MINI = Preset("mini-tree", MiniSpec, build_fat_tree, "a small fat tree (a plug-in)")


class EchoConfig(Model):
    echo: dict[str, str] = Field(default_factory=dict)


@dataclass
class Echo(Result):
    words: int


def echo(cfg: EchoConfig) -> Outcome[Echo]:
    return Outcome(Echo(len(cfg.echo)))


ECHO = Command("echo", EchoConfig, echo, summary="count the words given", example={"echo": {}})
