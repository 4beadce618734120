"""Reader for the Azure LLM inference trace 2023 (formats.md §4).

Header ``TIMESTAMP,ContextTokens,GeneratedTokens``; timestamps ``YYYY-MM-DD HH:MM:SS.fffffff``
(7 fractional digits, parsed by hand). The trace has no model column, so requests are
assigned to `models` models by a seeded draw: uniform, or Zipf(`zipf`) popularity
(model 0 the most popular). Model kinds follow the artifact's 60/20/20 mapping.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import numpy as np

from hpn.errors import InputError
from hpn.pool.models import artifact_model
from hpn.pool.traces.base import Trace, csv_rows, parse_int, require_rows
from hpn.pool.traces.synthetic import zipf_shares

HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_TS = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?$")


def parse_timestamp(text: str, where: str) -> float:
    """Seconds since the epoch of a ``YYYY-MM-DD HH:MM:SS.fffffff`` timestamp (local time).

    Parameters
    ----------
    text
        The cell.
    where
        ``file:line``, named in errors.

    Returns
    -------
    float
        Seconds.
    """
    m = _TS.match(text.strip())
    if not m:
        raise InputError(
            where, f"column 'TIMESTAMP': expected YYYY-MM-DD HH:MM:SS.fffffff, got {text!r}"
        )
    try:
        base = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp()
    except ValueError:
        raise InputError(where, f"column 'TIMESTAMP': not a valid date/time: {text!r}") from None
    frac = m.group(2) or "0"
    return base + int(frac) / 10 ** len(frac)


def read_azure(
    path: str | Path,
    models: int = 1,
    zipf: float | None = None,
    seed: int = 0,
    max_len: int = 4096,
) -> Trace:
    """Read an Azure 2023 trace and assign each request to one of `models` models.

    Parameters
    ----------
    path
        The CSV.
    models
        Models to spread the requests over.
    zipf
        Zipf exponent of model popularity; None: uniform.
    seed
        Seed of the assignment.
    max_len
        Most prompt + output tokens (output at most half).

    Returns
    -------
    Trace
        The requests, arrivals from 0.
    """
    if models < 1:
        raise InputError("models", f"must be >= 1, got {models}")
    arr, inp, out = [], [], []
    for where, cols in csv_rows(path, HEADER):
        arr.append(parse_timestamp(cols[0], where))
        i = parse_int(cols[1], where, "ContextTokens", 0)
        o = parse_int(cols[2], where, "GeneratedTokens", 0)
        o = min(max(o, 1), max_len // 2)
        inp.append(min(max(i, 1), max_len - o))
        out.append(o)
    require_rows(path, len(arr))
    t = np.asarray(arr)
    if len(t):
        t = t - t.min()
    rng = np.random.default_rng(seed)
    p = zipf_shares(models, zipf) if zipf is not None else None
    mod = rng.choice(models, size=len(t), p=p)
    names = [f"azure_model_{k:02d}" for k in range(models)]
    kinds = [artifact_model(k) for k in range(models)]
    return Trace.build(t, mod, inp, out, names, kinds)
