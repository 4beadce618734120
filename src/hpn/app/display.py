"""How a terminal shows a result's values (display only: ``--json`` and stored results keep
full precision)."""

from __future__ import annotations

from typing import Any


def display(v: Any) -> str:
    """A value as a terminal shows it: floats rounded to 4 significant digits (display only;
    ``--json`` and stored results keep full precision), thousands separated, a dict as
    ``key value, ...``, a list comma-separated, None as ``-``."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:,.1f}" if abs(v) >= 1000 else f"{v:.4g}"
    if isinstance(v, dict):
        return ", ".join(f"{k} {display(x)}" for k, x in v.items()) or "-"
    if isinstance(v, list | tuple):
        return ", ".join(display(x) for x in v) or "-"
    return str(v)
