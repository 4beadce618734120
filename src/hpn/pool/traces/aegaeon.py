"""Reader for the Aegaeon / ServerlessLLM request CSV (formats.md §3).

Header ``Request Time,Model Name,Input Length,Output Length``; time ``HH:MM:SS.mmm``.
Model names are mapped to catalog models: a catalog name or alias maps to itself;
``synth_model_NN`` maps by NN mod 10 as the artifact does (60/20/20 7B/9B/13B); any other
name maps by its order of first appearance with the same mod-10 rule.
"""

from __future__ import annotations

import re
from pathlib import Path

from hpn.errors import InputError
from hpn.pool.models import ALIASES, MODELS, artifact_model
from hpn.pool.traces.base import Trace, csv_rows, parse_int, require_rows

HEADER = ("Request Time", "Model Name", "Input Length", "Output Length")
_TIME = re.compile(r"^(\d{2,}):([0-5]\d):([0-5]\d)\.(\d{3})$")
_SYNTH = re.compile(r"^synth_model_(\d+)$")
_FILE = re.compile(r"^synth-(\d+)-(\d+(?:\.\d+)?)-")  # synth-{M}-{rate}-{ix}-{ox}.csv


def declared_rate(path: str | Path) -> float | None:
    """The per-model rate an artifact workload file declares in its name, else None.

    Parameters
    ----------
    path
        The workload file.

    Returns
    -------
    float or None
        Req/s.
    """
    m = _FILE.match(Path(path).name)
    return float(m.group(2)) if m else None


def parse_time(text: str, where: str) -> float:
    """Seconds of a ``HH:MM:SS.mmm`` request time.

    Parameters
    ----------
    text
        The cell.
    where
        ``file:line``, named in errors.

    Returns
    -------
    float
        Seconds since midnight.

    Examples
    --------
    >>> parse_time("01:00:02.500", "t.csv:2")
    3602.5
    """
    m = _TIME.match(text.strip())
    if not m:
        raise InputError(where, f"column 'Request Time': expected HH:MM:SS.mmm, got {text!r}")
    h, mi, s, ms = (int(g) for g in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000.0


def kind_of(name: str, order: int) -> str:
    """Catalog kind of a trace's model: its name or alias, else the artifact's mapping.

    Parameters
    ----------
    name
        Model name in the trace (``model_07`` maps by its number).
    order
        Order of first appearance, for names without a number.

    Returns
    -------
    str
        Catalog model name.
    """
    key = name.lower()
    if key in MODELS:
        return key
    if key in ALIASES:
        return ALIASES[key]
    m = _SYNTH.match(name)
    return artifact_model(int(m.group(1)) if m else order)


def read_aegaeon(path: str | Path, max_len: int | None = None) -> Trace:
    """Read an Aegaeon trace; `max_len` clips prompt + output to a context window.

    Parameters
    ----------
    path
        The CSV.
    max_len
        Most prompt + output tokens; None: no clipping.

    Returns
    -------
    Trace
        The requests, by arrival.
    """
    names: dict[str, int] = {}
    arr, mod, inp, out = [], [], [], []
    for where, cols in csv_rows(path, HEADER):
        t = parse_time(cols[0], where)
        name = cols[1].strip()
        if not name:
            raise InputError(where, "column 'Model Name': empty")
        i = parse_int(cols[2], where, "Input Length", 1)
        o = parse_int(cols[3], where, "Output Length", 1)
        if max_len is not None and i + o > max_len:
            i = max(1, min(i, max_len - o))
            o = min(o, max_len - i)
        mod.append(names.setdefault(name, len(names)))
        arr.append(t)
        inp.append(i)
        out.append(o)
    require_rows(path, len(arr))
    kinds = [kind_of(n, k) for n, k in names.items()]
    rate = declared_rate(path)
    rates = None if rate is None else [rate] * len(names)
    return Trace.build(arr, mod, inp, out, list(names), kinds, rates)
