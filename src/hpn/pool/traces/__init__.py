"""Request traces: readers registered by name, plus the synthetic market generator."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpn.errors import InputError
from hpn.pool.traces.aegaeon import read_aegaeon
from hpn.pool.traces.azure import read_azure
from hpn.pool.traces.base import Trace
from hpn.pool.traces.servegen import read_servegen
from hpn.pool.traces.synthetic import calibrate_zipf, from_rates, market
from hpn.registry import Registry

READERS: Registry[Callable[..., Trace]] = Registry("trace format", field="format")
READERS.add("aegaeon", read_aegaeon)
READERS.add("azure", read_azure)
READERS.add("servegen", read_servegen)


def detect_format(path: str | Path) -> str:
    """The trace format of a file or folder, from its name or header line.

    Parameters
    ----------
    path
        The file (or a ServeGen folder).

    Returns
    -------
    str
        ``aegaeon``, ``azure`` or ``servegen``.

    Raises
    ------
    InputError
        When the file is missing or its header is none of these.
    """
    p = Path(path)
    if p.is_dir() or p.name.endswith("-trace.csv"):
        return "servegen"
    if not p.is_file():
        raise InputError(str(path), "no such file")
    with open(p, encoding="utf-8", errors="replace") as f:
        head = f.readline().strip().lstrip("\ufeff").lstrip('"')
    if head.startswith("Request Time"):
        return "aegaeon"
    if head.startswith("TIMESTAMP"):
        return "azure"
    raise InputError(
        f"{path}:1", "unknown trace format (expected an Aegaeon, Azure or ServeGen header)"
    )


def load_trace(path: str | Path, fmt: str | None = None, **options: Any) -> Trace:
    """Read a trace file; `fmt` is one of READERS or detected from the file.

    Parameters
    ----------
    path
        The file.
    fmt
        Format; None: :func:`detect_format`.
    **options
        Options of the format's reader.

    Returns
    -------
    Trace
        The requests.
    """
    fmt = fmt or detect_format(path)
    return READERS.get(fmt)(path, **options)


def load_for(path: str | Path, *, models: int, seed: int, duration: float) -> Trace:
    """Read a trace as ``pool simulate`` does; the last one read is kept (keyed by path,
    size, mtime and options), so the limit check and the run read it once.

    Parameters
    ----------
    path
        The trace file (or ServeGen folder).
    models
        Azure traces: the models its requests are spread over.
    seed
        Azure and ServeGen: the seed of the spreading and the arrivals.
    duration
        ServeGen: seconds of arrivals drawn from its rates.

    Returns
    -------
    Trace
        The requests.
    """
    import os

    fmt = detect_format(path)
    per_format: dict[str, dict[str, Any]] = {
        "azure": {"models": models, "seed": seed},
        "servegen": {"duration": duration, "seed": seed},
    }
    opts = per_format.get(fmt, {})
    st = os.stat(path)
    key = (str(path), fmt, tuple(sorted(opts.items())), st.st_size, st.st_mtime_ns)
    if _LAST.get("key") != key:
        _LAST.clear()
        _LAST.update(key=key, trace=load_trace(path, fmt, **opts))
    return _LAST["trace"]


_LAST: dict[str, Any] = {}

__all__ = [
    "READERS",
    "load_for",
    "Trace",
    "calibrate_zipf",
    "detect_format",
    "from_rates",
    "load_trace",
    "market",
]
