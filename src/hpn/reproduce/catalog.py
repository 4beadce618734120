"""The claims of both papers (``claims.toml`` beside this module): ids, sources, paper values
with their precision, bands, and the measure that computes each from the model."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from hpn.errors import InputError

DATA = Path(__file__).with_name("claims.toml")
PAPERS = ("hpn", "aegaeon")
PRECISIONS = ("exact", "figure", "derived")
BASES = ("emergent", "input")


@dataclass(frozen=True)
class Claim:
    """One quantitative claim: the paper's value and how the model's is computed."""

    id: str
    paper: str
    source: str
    title: str
    value: float
    unit: str
    precision: str
    band: dict[str, float]
    measure: str
    basis: str
    command: str
    cause: str = ""
    quick: bool = False
    demo: bool = False
    figure: dict[str, Any] = field(default_factory=dict)
    points: dict[str, list[list[Any]]] = field(default_factory=dict)


@cache
def load(path: Path = DATA) -> tuple[tuple[Claim, ...], dict[str, dict[str, Any]]]:
    """The claims and the job tables of the data file, checked (ids unique, fields known).

    Parameters
    ----------
    path
        The TOML data file.

    Returns
    -------
    tuple
        ``(claims, jobs)``.
    """
    data = tomllib.loads(path.read_text())
    claims = tuple(Claim(**c) for c in data["claim"])
    seen: set[str] = set()
    for c in claims:
        if c.id in seen:
            raise ValueError(f"{path.name}: claim {c.id} twice")
        seen.add(c.id)
        if c.paper not in PAPERS or c.precision not in PRECISIONS or c.basis not in BASES:
            raise ValueError(f"{path.name}: claim {c.id}: paper, precision or basis unknown")
        if not set(c.band) <= {"rel", "abs", "min", "max"} or not c.band:
            raise ValueError(f"{path.name}: claim {c.id}: band takes rel, abs, min, max")
    return claims, data.get("jobs", {})


def uncovered(path: Path = DATA) -> list[dict[str, str]]:
    """The claims the papers quantify that the model does not compute, each with why.

    Parameters
    ----------
    path
        The TOML data file.

    Returns
    -------
    list of dict
        ``id``, ``source``, ``claim``, ``why``.
    """
    return list(tomllib.loads(path.read_text()).get("uncovered", []))


def select(paper: str = "all", quick: bool = False, only: str | None = None) -> list[Claim]:
    """The claims of ``paper`` (hpn, aegaeon or all), the quick subset, or the ids in ``only``.

    Parameters
    ----------
    paper
        ``hpn``, ``aegaeon`` or ``all``.
    quick
        Only the claims marked quick.
    only
        Comma-separated claim ids, or a prefix ending in ``*`` (``hpn.fig18.*``), each
        once (a repeat is refused, as ``--sizes`` and ``--set`` refuse theirs: a typo for
        another id more likely than a wish to run one twice; a prefix may overlap an id).

    Returns
    -------
    list of Claim
        In the data file's order.
    """
    claims, _ = load()
    if paper not in (*PAPERS, "all"):
        raise InputError("paper", f"choose hpn, aegaeon or all, got {paper!r}")
    chosen = [c for c in claims if paper in ("all", c.paper) and (c.quick or not quick)]
    if only is None:
        return chosen
    wanted = [w.strip() for w in only.split(",")]
    if not any(wanted):
        raise InputError("--only", "give one or more claim ids, e.g. --only hpn.tab2.tier1")
    ids = {c.id for c in claims}
    picked: set[str] = set()
    for k, w in enumerate(wanted):
        if not w:
            raise InputError("--only", f"empty claim id in {only!r}")
        if w in wanted[:k]:
            raise InputError("--only", f"claim {w!r} given twice; name each once")
        match = {i for i in ids if i.startswith(w[:-1])} if w.endswith("*") else {w} & ids
        if not match:
            raise InputError("--only", f"unknown claim {w!r}; `hpn reproduce --list` names them")
        picked |= match
    return [c for c in chosen if c.id in picked]


__all__ = ["Claim", "load", "select", "uncovered"]
