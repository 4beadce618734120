"""Synthetic model market: M models, long-tail popularity, Poisson or Gamma arrivals,
ShareGPT-like lengths.

Model i draws from its own random stream ``default_rng([seed, i])``, so the trace with M+1
models contains the trace with M (nested traces make goodput searches monotone in noise).
Lengths are drawn from quantile tables fitted on the Aegaeon artifact's ShareGPT-sampled
traces (`calibration.length_quantiles`); prompt + output is clipped to `max_len`, outputs are
floored at 16 tokens as in the artifact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hpn.errors import InputError
from hpn.pool.calibration import length_quantiles
from hpn.pool.models import artifact_model, get_model
from hpn.pool.traces.base import Trace

MIN_OUTPUT = 16


def sample_lengths(
    rng: np.random.Generator,
    n: int,
    in_scale: float = 1.0,
    out_scale: float = 1.0,
    max_len: int = 4096,
) -> tuple[np.ndarray, np.ndarray]:
    """`n` (input, output) length pairs, ShareGPT-like.

    Parameters
    ----------
    rng
        Random generator.
    n
        Pairs.
    in_scale, out_scale
        Multipliers of prompt and output lengths.
    max_len
        Most prompt + output tokens.

    Returns
    -------
    tuple of numpy.ndarray
        ``(input_len, output_len)``.
    """
    q = length_quantiles()
    u = rng.random((2, n))
    inp = np.interp(u[0], q["quantiles"], q["input"]) * in_scale
    out = np.interp(u[1], q["quantiles"], q["output"]) * out_scale
    out = np.clip(np.rint(out), MIN_OUTPUT, max_len // 2).astype(np.int64)
    inp = np.clip(np.rint(inp), 1, max_len - out).astype(np.int64)
    return inp, out


def arrivals(rng: np.random.Generator, rate: float, duration: float, cv: float = 1.0) -> np.ndarray:
    """Arrival times in [0, duration): Poisson (cv=1) or Gamma renewal with that CV.

    Parameters
    ----------
    rng
        Random generator.
    rate
        Req/s.
    duration
        Seconds.
    cv
        Coefficient of variation of the gaps.

    Returns
    -------
    numpy.ndarray
        Times, ascending.
    """
    if rate <= 0 or duration <= 0:
        return np.empty(0)
    n = int(rate * duration * 1.5 + 10 * np.sqrt(rate * duration) + 10)
    times = np.empty(0)
    start = 0.0
    while True:
        if cv == 1.0:
            gaps = rng.exponential(1.0 / rate, n)
        else:
            k = 1.0 / (cv * cv)
            gaps = rng.gamma(k, 1.0 / (rate * k), n)
        chunk = start + np.cumsum(gaps)
        times = np.concatenate([times, chunk[chunk < duration]])
        if chunk[-1] >= duration:
            return times
        start = float(chunk[-1])


def zipf_shares(models: int, s: float) -> np.ndarray:
    """Request shares of `models` models under Zipf(`s`), most popular first.

    Parameters
    ----------
    models
        Number of models.
    s
        Exponent.

    Returns
    -------
    numpy.ndarray
        Shares summing to 1.

    Examples
    --------
    >>> zipf_shares(3, 1.0).round(4).tolist()
    [0.5455, 0.2727, 0.1818]
    """
    w = np.arange(1, models + 1, dtype=float) ** -s
    return w / w.sum()


def calibrate_zipf(models: int, tail_models: float = 0.941, tail_requests: float = 0.0135) -> float:
    """Zipf exponent s such that the least popular `tail_models` share of models receive
    `tail_requests` of the requests (Aegaeon §1: 94.1 % of models get 1.35 %).

    Parameters
    ----------
    models
        Number of models.
    tail_models
        Share of models in the tail.
    tail_requests
        Share of requests they receive.

    Returns
    -------
    float
        The exponent (bisection).

    Raises
    ------
    InputError
        When there are too few models for such a tail.
    """
    n_tail = int(round(tail_models * models))
    if not 0 < n_tail < models:
        raise InputError("models", "too few models to calibrate a long tail")

    def tail(s: float) -> float:
        return float(zipf_shares(models, s)[models - n_tail :].sum())

    lo, hi = 0.0, 20.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) > tail_requests else (lo, mid)
    return (lo + hi) / 2


def from_rates(
    rates: Sequence[float] | np.ndarray,
    kinds: Sequence[str],
    duration: float,
    seed: int = 0,
    names: Sequence[str] | None = None,
    cv: float = 1.0,
    in_scale: float = 1.0,
    out_scale: float = 1.0,
    max_len: int = 4096,
) -> Trace:
    """A trace with one arrival process per model at the given rates (req/s); prompt +
    output is clipped to `max_len` (and to each model's context window).

    Parameters
    ----------
    rates
        Rate of each model, req/s.
    kinds
        Catalog kind of each model.
    duration
        Seconds.
    seed
        Seed.
    names
        Model names; None: ``model_00``, ...
    cv
        Coefficient of variation of the gaps.
    in_scale, out_scale
        Multipliers of prompt and output lengths.
    max_len
        Most prompt + output tokens.

    Returns
    -------
    Trace
        The requests; the rates are declared.
    """
    if duration <= 0:
        raise InputError("duration", "must be > 0")
    if cv <= 0:
        raise InputError("cv", "must be > 0")
    kinds = [get_model(k).name for k in kinds]
    names = list(names) if names is not None else [f"model_{i:02d}" for i in range(len(kinds))]
    cols: list[list[np.ndarray]] = [[], [], [], []]
    for i, rate in enumerate(rates):
        if rate < 0:
            raise InputError("rate", f"must be >= 0, got {rate}")
        rng = np.random.default_rng([seed, i])
        t = arrivals(rng, float(rate), duration, cv)
        limit = min(max_len, get_model(kinds[i]).max_len)
        inp, out = sample_lengths(rng, len(t), in_scale, out_scale, limit)
        for col, x in zip(cols, (t, np.full(len(t), i), inp, out), strict=True):
            col.append(x)
    arr, mod, inp, out = (np.concatenate(c) if c else np.empty(0) for c in cols)
    return Trace.build(arr, mod, inp, out, names, kinds, [float(r) for r in rates])


def market(
    models: int,
    rate: float,
    duration: float,
    seed: int = 0,
    zipf: float | None = None,
    kinds: Sequence[str] | None = None,
    cv: float = 1.0,
    in_scale: float = 1.0,
    out_scale: float = 1.0,
) -> Trace:
    """M models at `rate` req/s each (uniform) or M*rate in total split by Zipf(`zipf`).

    Model kinds default to the artifact's 60/20/20 7B/9B/13B mapping (index mod 10).

    Parameters
    ----------
    models
        M.
    rate
        Req/s per model (the mean, with Zipf).
    duration
        Seconds.
    seed
        Seed.
    zipf
        Zipf exponent; None: every model at `rate`.
    kinds
        Catalog kind of each model; None: the artifact's mapping.
    cv
        Coefficient of variation of the gaps.
    in_scale, out_scale
        Multipliers of prompt and output lengths.

    Returns
    -------
    Trace
        The requests.
    """
    if models < 1:
        raise InputError("models", f"must be >= 1, got {models}")
    if rate <= 0:
        raise InputError("rate", f"must be > 0, got {rate}")
    if zipf is None:
        rates = np.full(models, float(rate))
    else:
        rates = zipf_shares(models, zipf) * rate * models
    if kinds is None:
        kinds = [artifact_model(i) for i in range(models)]
    elif len(kinds) != models:
        kinds = [kinds[i % len(kinds)] for i in range(models)]
    names = [f"synth_model_{i:02d}" for i in range(models)]
    return from_rates(rates, kinds, duration, seed, names, cv, in_scale, out_scale)
