"""The bounds on what a client may send the dashboard: body size, nesting, numbers."""

from __future__ import annotations

import math
from typing import Any

from hpn.errors import InputError

MAX_BODY = 64 * 1024
MAX_DEPTH = 32  # nesting of a request's JSON (or TOML) config


def nesting(body: bytes) -> int:
    """How deep ``[``/``{`` nest in a JSON text (outside strings), without parsing it."""
    depth = deepest = 0
    in_str = esc = False
    for ch in body.decode("utf-8", "replace"):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def depth_of(x: Any) -> int:
    """Nesting depth of parsed JSON/TOML (a scalar is 0), bounded by ``MAX_DEPTH`` + 1."""
    stack, deepest = [(x, 0)], 0
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d + 1)
            if deepest > MAX_DEPTH:
                return deepest
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


def finite(text: str) -> float:
    """A JSON number, refused when not finite (``1e999``)."""
    x = float(text)
    if not math.isfinite(x):
        raise InputError("body", f"number {text} is out of range (finite numbers only)")
    return x


def no_constant(text: str) -> Any:
    """``NaN``, ``Infinity``: refused (JSON has no such numbers)."""
    raise InputError("body", f"{text} is not a number JSON allows")
