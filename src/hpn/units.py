"""Human units at the edges, SI numbers inside.

One parser per quantity, all returning floats in SI base units:

- bandwidth -> bit/s: ``400G``, ``200Gbps``, ``51.2T``, ``1.6Tbps``, ``100M``; bytes per second
  with ``B/s`` (``400GB/s`` = 3.2e12 bit/s).
- size -> bytes: ``4GB`` (SI, 4e9), ``4GiB`` (binary), ``2MB``; a bare prefix (``1M``, ``4G``)
  follows nccl-tests and means binary (``1M`` = 1,048,576).
- duration -> seconds: ``10us``, ``2ms``, ``1.5s``, ``5min``, ``2h``, ``3d``, ``500ns``.

Plain numbers (int, float or a numeric string) are taken as already SI.
"""

from __future__ import annotations

import re

from hpn.errors import InputError

_NUMBER = r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_PATTERN = re.compile(rf"^\s*{_NUMBER}\s*([A-Za-z/µ]*)\s*$")

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_BARE_BIN = {"K": 2**10, "k": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
# a number, or 1 / a number (divided, so that 25ns is exactly 25e-9)
_TIME: dict[str, float | tuple[float]] = {
    "ns": (1e9,),
    "us": (1e6,),
    "µs": (1e6,),
    "ms": (1e3,),
    "s": 1.0,
    "sec": 1.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}

EXAMPLES = {
    "bandwidth": "400G, 200Gbps, 51.2T, 400GB/s",
    "size": "2MB, 4GB, 4GiB, 1M",
    "duration": "10us, 2ms, 1.5s, 5min, 2h",
}


def _split(value: object, kind: str, field: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise InputError(field, f"expected a {kind} ({EXAMPLES[kind]}), got {value!r}")
    if isinstance(value, int | float):
        return float(value), ""
    if not isinstance(value, str):
        raise InputError(field, f"expected a {kind} ({EXAMPLES[kind]}), got {value!r}")
    m = _PATTERN.match(value)
    if not m:
        raise InputError(field, f"cannot read {value!r} as a {kind} (examples: {EXAMPLES[kind]})")
    return float(m.group(1)), m.group(2)


def _fail(value: object, kind: str, field: str) -> InputError:
    return InputError(field, f"unknown unit in {value!r} for a {kind} (examples: {EXAMPLES[kind]})")


def _nonneg(x: float, value: object, kind: str, field: str) -> float:
    if x < 0 or x != x or x == float("inf"):
        raise InputError(field, f"a {kind} must be a finite number >= 0, got {value!r}")
    return x


def unit_kind(text: str) -> str | None:
    """The quantity the unit of ``text`` names: ``"duration"`` (``2h``), ``"size"`` (``4GB``,
    ``4GiB``) or ``"bandwidth"`` (``100Gbps``, ``400GB/s``); None for a bare number, a bare
    prefix (``4G``: a size or a bandwidth) or no quantity."""
    m = _PATTERN.match(text)
    unit = m.group(2) if m else ""
    if unit.endswith(("bps", "b/s", "B/s")):
        return "bandwidth"
    if unit in _TIME:
        return "duration"
    if unit.endswith("B"):
        return "size"
    return None


def parse_bandwidth(value: object, field: str = "bandwidth") -> float:
    """Bandwidth in bit/s."""
    number, unit = _split(value, "bandwidth", field)
    per_byte = 1.0
    if unit.endswith("B/s"):
        per_byte, unit = 8.0, unit[:-3]
    elif unit.endswith("bps") or unit.endswith("b/s"):
        unit = unit[:-3]
    if unit not in _SI:
        raise _fail(value, "bandwidth", field)
    return _nonneg(number * _SI[unit] * per_byte, value, "bandwidth", field)


def parse_size(value: object, field: str = "size") -> float:
    """Size in bytes."""
    number, unit = _split(value, "size", field)
    if unit in ("", "B"):
        scale = 1.0
    elif unit.endswith("iB") and unit[:-1] in _BIN:
        scale = _BIN[unit[:-1]]
    elif unit.endswith("B") and unit[:-1] in _SI:
        scale = _SI[unit[:-1]]
    elif unit in _BARE_BIN:
        scale = _BARE_BIN[unit]
    else:
        raise _fail(value, "size", field)
    return _nonneg(number * scale, value, "size", field)


def parse_duration(value: object, field: str = "duration") -> float:
    """Duration in seconds."""
    number, unit = _split(value, "duration", field)
    if unit == "":
        seconds = number
    elif unit in _TIME:
        scale = _TIME[unit]
        seconds = number / scale[0] if isinstance(scale, tuple) else number * scale
    else:
        raise _fail(value, "duration", field)
    return _nonneg(seconds, value, "duration", field)


def parse_size_list(value: str, field: str = "sizes") -> list[float]:
    """A comma-separated list of sizes: ``1M,4M,16M``."""
    parts = [p for p in value.split(",") if p.strip()]
    if not parts:
        raise InputError(field, "expected a comma-separated list of sizes, e.g. 1M,4M,16M")
    return [parse_size(p, field) for p in parts]


def parse_sizes(value: str, field: str = "sizes") -> list[float]:
    """A size list (``1M,4M``) or nccl-tests' ``-b 1M -e 4G -f 2`` as ``1M:4G:2``."""
    if ":" not in value:
        return parse_size_list(value, field)
    parts = value.split(":")
    if len(parts) != 3:
        raise InputError(field, "a range is BEGIN:END:FACTOR, e.g. 1M:4G:2")
    lo, hi = (parse_size(x, field) for x in parts[:2])
    try:
        f = float(parts[2])
    except ValueError:
        raise InputError(field, f"FACTOR must be a number > 1, got {parts[2]!r}") from None
    if not (f > 1 and 0 < lo <= hi):
        raise InputError(field, "a range needs 0 < BEGIN <= END and FACTOR > 1")
    out = [lo]
    while out[-1] * f <= hi * (1 + 1e-12) and len(out) <= 1024:
        out.append(out[-1] * f)
    return out


def format_bandwidth(bps: float) -> str:
    """400e9 -> '400G'."""
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(bps) >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps:g}"


def format_size(nbytes: float) -> str:
    """Binary units, as nccl-tests prints them: 1048576 -> '1MiB'."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:g}{unit}"
    return f"{nbytes:g}B"


def format_duration(seconds: float) -> str:
    for unit, scale in (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g}{unit}"
    return f"{seconds * 1e9:.4g}ns"


FORMATS = {"duration": format_duration, "size": format_size, "bandwidth": format_bandwidth}
"""How each kind of :func:`unit_kind` is written back."""
