"""Reader for ServeGen per-client traces (formats.md §5): one client = one served model.

``chunk-{id}-trace.csv`` (no header; window start, rate, cv, pattern, shape, scale per 600 s
window) becomes arrivals as ServeGen's generator makes them: ceil(rate*W) inter-arrival gaps
drawn from the window's Gamma/Weibull fit, rescaled to sum to W, kept inside the window.
Lengths come from ``chunk-{id}-dataset.json`` (PMFs per 6 h window, Python dict literals
inside JSON strings) when it exists, else from the ShareGPT-like tables.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from hpn.errors import InputError
from hpn.pool.models import artifact_model
from hpn.pool.traces.base import Trace, parse_float, read_text, split_csv
from hpn.pool.traces.synthetic import sample_lengths

Pmf = tuple[np.ndarray, np.ndarray]
"""A length distribution: (values, probabilities)."""

WINDOW = 600.0
COLUMNS = ("window start", "rate", "cv", "pattern", "shape", "scale")


def read_windows(path: str | Path) -> list[tuple[float, float, str, float, float]]:
    """(start, rate, pattern, shape, scale) of every active window.

    Parameters
    ----------
    path
        A ServeGen ``chunk-*-trace.csv``.

    Returns
    -------
    list of tuple
        One per window with a rate > 0.
    """
    out = []
    for no, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        cols = split_csv(line)
        where = f"{path}:{no}"
        if len(cols) != 6:
            raise InputError(where, f"expected 6 columns ({', '.join(COLUMNS)}), got {len(cols)}")
        start = parse_float(cols[0], where, "window start")
        rate = parse_float(cols[1], where, "rate")
        parse_float(cols[2], where, "cv")
        pattern = cols[3].strip()
        if pattern not in ("", "Gamma", "Weibull"):
            raise InputError(
                where, f"column 'pattern': expected Gamma, Weibull or empty, got {pattern!r}"
            )
        shape = parse_float(cols[4], where, "shape")
        scale = parse_float(cols[5], where, "scale")
        if rate > 0:
            out.append((start, rate, pattern, shape, scale))
    return out


def _pmf(text: object, where: str) -> Pmf | None:
    if not isinstance(text, str):
        raise InputError(where, "expected a string holding a dict literal")
    try:
        d = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise InputError(where, f"not a dict literal: {text[:40]!r}") from None
    if not isinstance(d, dict):
        raise InputError(where, "expected a dict literal {value: probability, ...}")
    if not d:
        return None
    vals = np.array([float(k) for k in d], dtype=float)
    p = np.array([float(v) for v in d.values()], dtype=float)
    if (p < 0).any() or p.sum() <= 0:
        raise InputError(where, "probabilities must be >= 0 and sum to > 0")
    return vals, p / p.sum()


def read_dataset(path: str | Path) -> list[tuple[float, Pmf, Pmf]]:
    """Sorted (window start, input PMF, output PMF) of windows that have data.

    Parameters
    ----------
    path
        A ServeGen dataset JSON keyed by window start.

    Returns
    -------
    list of tuple
        One per window with both length distributions.
    """
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}:{e.colno}", f"malformed JSON: {e.msg}") from None
    if not isinstance(doc, dict):
        raise InputError(str(path), "expected a JSON object keyed by window start")
    out = []
    for key, fields in doc.items():
        where = f"{path}: window {key!r}"
        try:
            start = float(key)
        except ValueError:
            raise InputError(where, "window key must be a number of seconds") from None
        if not isinstance(fields, dict):
            raise InputError(where, "expected an object of fields")
        pin, pout = (
            _pmf(fields.get(f, "{}"), f"{where} field {f!r}")
            for f in ("input_tokens", "output_tokens")
        )
        if pin is not None and pout is not None:
            out.append((start, pin, pout))
    return sorted(out, key=lambda x: x[0])


def client_arrivals(
    windows: Iterable[tuple[float, float, str, float, float]],
    t0: float,
    t1: float,
    rng: np.random.Generator,
    scale: float = 1.0,
) -> np.ndarray:
    """One client's arrival times in ``[t0, t1)`` from its windows' inter-arrival laws.

    Each window gets ``ceil(rate * scale * WINDOW)`` gaps (Gamma, Weibull or exponential)
    stretched to fill it.

    Parameters
    ----------
    windows
        Rows of :func:`read_windows`.
    t0, t1
        Time span, s.
    rng
        Random generator.
    scale
        Rate multiplier.

    Returns
    -------
    numpy.ndarray
        Arrival times, s.
    """
    times = []
    for start, rate, pattern, shape, sc in windows:
        if start + WINDOW <= t0 or start >= t1:
            continue
        n = math.ceil(rate * scale * WINDOW)
        if pattern == "Gamma" and shape > 0 and sc > 0:
            gaps = rng.gamma(shape, sc, n)
        elif pattern == "Weibull" and shape > 0 and sc > 0:
            gaps = sc * rng.weibull(shape, n)
        else:
            gaps = rng.exponential(1.0, n)
        total = gaps.sum()
        if total <= 0:
            continue
        t = start + np.cumsum(gaps) * (WINDOW / total)
        times.append(t[(t < start + WINDOW) & (t >= t0) & (t < t1)])
    return np.concatenate(times) if times else np.empty(0)


def read_servegen(
    paths: str | Path | Iterable[str | Path],
    start: float = 0.0,
    duration: float = 3600.0,
    seed: int = 0,
    rate_scale: float = 1.0,
    max_len: int = 4096,
) -> Trace:
    """Arrivals of each client trace in [start, start+duration), shifted to start at 0.

    Parameters
    ----------
    paths
        Trace CSV files or folders holding ``chunk-*-trace.csv``.
    start, duration
        The span read, s.
    seed
        Seed of arrivals and lengths.
    rate_scale
        Rate multiplier.
    max_len
        Most prompt + output tokens.

    Returns
    -------
    Trace
        One model per client trace.
    """
    files: list[Path] = []
    for p in [paths] if isinstance(paths, str | Path) else paths:
        p = Path(p)
        files += sorted(p.rglob("chunk-*-trace.csv")) if p.is_dir() else [p]
    if not files:
        raise InputError("trace", "no ServeGen chunk-*-trace.csv files found")
    cols: list[list[np.ndarray]] = [[], [], [], []]
    names = []
    for i, f in enumerate(files):
        rng = np.random.default_rng([seed, i])
        t = np.sort(client_arrivals(read_windows(f), start, start + duration, rng, rate_scale))
        inp, out = sample_lengths(rng, len(t), max_len=max_len)
        ds = f.with_name(f.name.replace("-trace.csv", "-dataset.json"))
        if ds.is_file() and len(t):
            wins = read_dataset(ds)
            if wins:
                starts = np.array([w[0] for w in wins])
                idx = np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(wins) - 1)
                for k in np.unique(idx):
                    sel = idx == k
                    (iv, ip), (ov, op) = wins[k][1], wins[k][2]
                    o = np.clip(rng.choice(ov, sel.sum(), p=op), 1, max_len // 2)
                    inp[sel] = np.clip(rng.choice(iv, sel.sum(), p=ip), 1, max_len - o)
                    out[sel] = o
        for col, x in zip(cols, (t - start, np.full(len(t), i), inp, out), strict=True):
            col.append(x)
        names.append(f"{f.parent.name}/{f.name.removesuffix('-trace.csv')}")
    arr, mod, inp, out = (np.concatenate(c) for c in cols)
    kinds = [artifact_model(i) for i in range(len(files))]
    return Trace.build(arr, mod, inp, out, names, kinds)
