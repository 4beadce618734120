"""Model mixes for capacity planning: the built-in `production` mix and TOML mix files.

`production` follows Aegaeon's deployment (A §7.5): 47 models on H20, 28 of 1.8-7B at TP=1
and 19 of 32-72B at TP=4, per-model rates from 0.01 to 1.13 req/s with mean 0.037. The paper
gives only those statistics, so the rates are a long tail we construct to match them
(r_k = 0.01 + 1.12 k^-s for popularity rank k, s solved for the mean) and the ranks are dealt
to models by a fixed shuffle; sizes cycle through the catalog models in each range.

A mix file (TOML)::

    gpu = "h20"            # optional
    [[model]]
    name = "chat-a"        # optional, default model_NN
    model = "qwen2.5-7b"   # catalog name or alias
    rate = 0.05            # req/s
    count = 1              # optional: that many models with these settings
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field, ValidationError

from hpn.config import Model, load_toml, one_line
from hpn.errors import InputError
from hpn.pool.models import get_model

SMALL = ("qwen1.5-1.8b", "qwen2.5-3b", "yi-1.5-6b", "qwen2.5-7b")
LARGE = ("qwen2.5-32b", "qwen2.5-72b")


@dataclass(frozen=True)
class Mix:
    """Models of a capacity-planning mix: names, catalog kinds, req/s each, GPU type."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    rates: tuple[float, ...]
    gpu: str = "h20"

    def groups(self) -> dict[int, list[int]]:
        """Model indices by TP degree (one deployment per TP setting)."""
        out: dict[int, list[int]] = {}
        for i, k in enumerate(self.kinds):
            out.setdefault(get_model(k).tp, []).append(i)
        return dict(sorted(out.items()))


def tail_rates(n: int, low: float, high: float, mean: float) -> np.ndarray:
    """n rates, largest `high`, approaching `low`, averaging `mean` (power-law tail).

    Parameters
    ----------
    n
        Number of models.
    low, high
        Rate of the least and the most popular model, req/s.
    mean
        Mean rate, req/s (the exponent is fitted to it).

    Returns
    -------
    numpy.ndarray
        Rates, descending.
    """
    k = np.arange(1, n + 1, dtype=float)
    target = mean * n - low * n

    def total(s: float) -> float:
        return float(((high - low) * k**-s).sum())

    lo, hi = 0.0, 50.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) > target else (lo, mid)
    return low + (high - low) * k ** -((lo + hi) / 2)


def production() -> Mix:
    """The built-in production mix (A §7.5): 47 models on H20."""
    kinds = [SMALL[i % len(SMALL)] for i in range(28)] + [LARGE[i % len(LARGE)] for i in range(19)]
    rates = tail_rates(47, 0.01, 1.13, 0.037)
    ranks = np.random.default_rng(47).permutation(47)
    names = [f"prod_{i:02d}_{k}" for i, k in enumerate(kinds)]
    return Mix(tuple(names), tuple(kinds), tuple(float(rates[r]) for r in ranks), "h20")


MAX_ENTRY_COUNT = 100_000  # models one mix file may list or count (the largest models bound)


class _Entry(Model):
    name: str | None = None
    model: str
    rate: float = Field(gt=0)
    count: int = Field(default=1, ge=1, le=MAX_ENTRY_COUNT)


class _MixFile(Model):
    gpu: str = "h20"
    model: list[_Entry] = Field(min_length=1, max_length=MAX_ENTRY_COUNT)


def load_mix(spec: str | Path) -> Mix:
    """`production` or a TOML mix file.

    Parameters
    ----------
    spec
        ``production`` or the path of a TOML file of ``[[model]]`` tables.

    Returns
    -------
    Mix
        Model names, catalog kinds and rates.

    Raises
    ------
    InputError
        For a bad file, an unknown model or duplicate names.
    """
    if str(spec) == "production":
        return production()
    data = load_toml(spec)
    if not data.get("model"):
        raise InputError(str(spec), "has no model: a mix lists [[model]] tables (model, rate)")
    try:
        doc = _MixFile.model_validate(data)
    except ValidationError as e:
        raise one_line(e, prefix=str(spec)) from None
    names: list[str] = []
    kinds: list[str] = []
    rates: list[float] = []
    for entry in doc.model:
        kind = get_model(entry.model, field=f"{spec}: model").name
        base = entry.name or f"model_{len(names):02d}"
        for j in range(entry.count):
            names.append(base if entry.count == 1 else f"{base}_{j}")
            kinds.append(kind)
            rates.append(entry.rate)
    if len(set(names)) != len(names):
        raise InputError(f"{spec}: model.name", "model names must be unique")
    return Mix(tuple(names), tuple(kinds), tuple(rates), doc.gpu)
