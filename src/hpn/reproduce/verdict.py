"""Verdicts, computed from a claim's band: pass, explained (outside, cause documented), fail."""

from __future__ import annotations

import math

VERDICTS = ("pass", "fail", "explained")


def band_range(value: float, band: dict[str, float]) -> tuple[float, float]:
    """The closed interval a band allows around the paper's ``value``.

    Parameters
    ----------
    value
        The paper's value.
    band
        ``{"rel": r}``, ``{"abs": a}`` or ``{"min": lo, "max": hi}`` (either bound optional).

    Returns
    -------
    tuple of float
        ``(low, high)``; an open side is infinite.

    Examples
    --------
    >>> band_range(70, {"rel": 0.1})
    (63.0, 77.0)
    >>> band_range(9, {"min": 9})
    (9, inf)
    """
    if "rel" in band:
        r = band["rel"]
        a, b = round(value * (1 - r), 9), round(value * (1 + r), 9)
        return (min(a, b), max(a, b))  # a negative value (a loss) keeps low <= high
    if "abs" in band:
        return (value - band["abs"], value + band["abs"])
    return (band.get("min", -math.inf), band.get("max", math.inf))


def band_text(value: float, band: dict[str, float]) -> str:
    """The band as people write it: ``±10 %``, ``±2``, ``1-2``, ``>= 9``.

    Examples
    --------
    >>> band_text(70, {"rel": 0.1}), band_text(9, {"min": 9}), band_text(1, {"min": 1, "max": 2})
    ('±10 %', '>= 9', '1 - 2')
    """
    if "rel" in band:
        return "exact" if band["rel"] == 0 else f"±{band['rel'] * 100:g} %"
    if "abs" in band:
        return f"±{band['abs']:g}"
    lo, hi = band.get("min"), band.get("max")
    if lo is not None and hi is not None:
        return f"{lo:g} - {hi:g}"
    return f">= {lo:g}" if lo is not None else f"<= {hi:g}"


def verdict(paper: float, model: float | None, band: dict[str, float], cause: str) -> str:
    """``pass`` if ``model`` lies in the band, else ``explained`` when a cause is documented,
    else ``fail`` (also when the model gave no value).

    Examples
    --------
    >>> verdict(70, 66, {"rel": 0.1}, ""), verdict(70, 59, {"rel": 0.1}, "known")
    ('pass', 'explained')
    >>> verdict(70, 59, {"rel": 0.1}, ""), verdict(70, None, {"rel": 0.1}, "known")
    ('fail', 'fail')
    """
    if model is None or not math.isfinite(model):
        return "fail"
    lo, hi = band_range(paper, band)
    if lo - 1e-9 <= model <= hi + 1e-9:
        return "pass"
    return "explained" if cause.strip() else "fail"


__all__ = ["VERDICTS", "band_range", "band_text", "verdict"]
