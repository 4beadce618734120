"""Traffic matrices shared with packet-level simulators: htsim's connection matrix and CSV.

A matrix is a list of flows between *host indices*: index ``i`` is the ``i``-th endpoint of
the fabric (:func:`hpn.workload.endpoints`: backend GPUs of active hosts, or fat-tree hosts,
in node order), which is how htsim numbers the hosts of its fat tree.

**htsim connection matrix** (``.cm``; as ``ConnectionMatrix::load`` in csg-htsim reads it)::

    Nodes 128
    Connections 2
    0->45 id 1 start 0 size 2000000
    45->7 id 2 start 12.5 size 2000000

Header lines ``Nodes N`` and ``Connections C`` (``Triggers``/``Failures`` counts must be 0
here), ``#`` comments and blank lines; then one line per flow: ``SRC->DST`` followed by
``key value`` tokens: ``start`` (microseconds), ``size`` (bytes), ``id`` (flow id, not 0),
``prio`` (ignored). Triggers and failures are not supported (an InputError says so).

**CSV**: ``src,dst,bytes[,start]`` per line, start in seconds (default 0); an optional first
line of column names.

Reading validates every line; a bad one is an InputError naming the file, the line number and
what is wrong. :func:`matrix_dag` turns a matrix into a FlowDAG on a fabric (flow ``i``'s
routing key is ``i``, as in a pattern's DAG, so a written pattern read back routes and runs
identically); :func:`dag_matrix` turns a pattern's DAG into a matrix.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hpn.engine.dag import FlowDAG
from hpn.errors import InputError
from hpn.topology.fabric import Fabric

FORMATS = ("htsim", "csv")
MAX_FLOWS = 4_000_000
MAX_BYTES = 2**30  # a matrix file's size at most (4 M flows of up to ~250 bytes a line)


@dataclass(frozen=True, eq=False)
class Matrix:
    """Flows between host indices: ``src``, ``dst`` (int64), ``size`` (bytes), ``start`` (s)."""

    nodes: int
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    start: np.ndarray

    def __len__(self) -> int:
        return len(self.src)


def matrix_format(path: str | Path, fmt: str | None = None) -> str:
    """``fmt``, or the format a file name implies: ``.csv`` -> csv, anything else -> htsim."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError("format", f"unknown matrix format {fmt!r}; choose from htsim, csv")
        return fmt
    return "csv" if str(path).lower().endswith(".csv") else "htsim"


def read_matrix(path: str | Path, fmt: str | None = None) -> Matrix:
    """Read a matrix file (format from ``fmt`` or the file name)."""
    from hpn.config import read_input

    p = Path(path)
    text = read_input(p, MAX_BYTES)
    if matrix_format(p, fmt) == "csv":
        return _read_csv(text, str(p))
    return _read_htsim(text, str(p))


class _Bad:
    def __init__(self, name: str):
        self.name = name

    def __call__(self, line: int, msg: str) -> InputError:
        return InputError(f"{self.name}:{line}", msg)


def _int(tok: str, what: str, bad, line: int, lo: int = 0) -> int:
    try:
        v = int(tok)
    except ValueError:
        raise bad(line, f"{what} must be an integer, got {tok!r}") from None
    if v < lo:
        raise bad(line, f"{what} must be >= {lo}, got {v}")
    return v


def _float(tok: str, what: str, bad, line: int) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise bad(line, f"{what} must be a number, got {tok!r}") from None
    if not (v >= 0 and np.isfinite(v)):
        raise bad(line, f"{what} must be a finite number >= 0, got {tok!r}")
    return v


def _read_htsim(text: str, name: str) -> Matrix:
    bad = _Bad(name)
    nodes: int | None = None
    conns: int | None = None
    conns_line = 0
    src: list[int] = []
    dst: list[int] = []
    size: list[int] = []
    start: list[float] = []
    for no, raw in enumerate(text.splitlines(), 1):
        tok = raw.split()
        if not tok or tok[0].startswith("#"):
            continue
        head = tok[0]
        if "->" not in head:
            if head in ("Nodes", "Connections", "Triggers", "Failures"):
                if src:
                    raise bad(no, f"{head} after the first connection")
                if len(tok) != 2:
                    raise bad(no, f"expected '{head} <count>'")
                v = _int(tok[1], head, bad, no)
                if head == "Nodes":
                    nodes = v
                elif head == "Connections":
                    conns, conns_line = v, no
                elif v:
                    raise bad(no, f"{head.lower()} are not supported (count must be 0)")
                continue
            if head in ("trigger", "failure"):
                raise bad(no, f"{head} lines are not supported")
            raise bad(no, f"expected a header or 'SRC->DST ...', got {head!r}")
        if nodes is None:
            raise bad(no, "a connection before the 'Nodes N' header")
        a, _, b = head.partition("->")
        s = _int(a, "source", bad, no)
        d = _int(b, "destination", bad, no)
        for what, v in (("source", s), ("destination", d)):
            if v >= nodes:
                raise bad(no, f"{what} {v} is not a host (Nodes {nodes}: 0..{nodes - 1})")
        if s == d:
            raise bad(no, f"flow from host {s} to itself")
        fields: dict[str, str] = {}
        rest = tok[1:]
        if len(rest) % 2:
            raise bad(no, f"token {rest[-1]!r} has no value")
        for key, val in zip(rest[0::2], rest[1::2], strict=True):
            if key not in ("start", "size", "id", "prio"):
                allowed = "start, size, id, prio"
                raise bad(no, f"unknown token {key!r} (allowed: {allowed}; no triggers)")
            if key in fields:
                raise bad(no, f"{key} given twice")
            fields[key] = val
        if "size" not in fields:
            raise bad(no, "missing 'size BYTES'")
        if "start" not in fields:
            raise bad(no, "missing 'start MICROSECONDS'")
        if "id" in fields:
            _int(fields["id"], "id", bad, no, lo=1)
        if "prio" in fields:
            _int(fields["prio"], "prio", bad, no)
        src.append(s)
        dst.append(d)
        size.append(_int(fields["size"], "size", bad, no))
        start.append(_float(fields["start"], "start", bad, no) / 1e6)
        if len(src) > MAX_FLOWS:
            raise bad(no, f"more than {MAX_FLOWS:,} connections")
    if nodes is None:
        raise bad(1, "missing the 'Nodes N' header")
    if conns is not None and conns != len(src):
        raise bad(conns_line, f"Connections {conns}, but the file has {len(src)}")
    return _matrix(nodes, src, dst, size, start)


def _read_csv(text: str, name: str) -> Matrix:
    bad = _Bad(name)
    src, dst, size, start = [], [], [], []
    for no, row in enumerate(csv.reader(io.StringIO(text)), 1):
        row = [c.strip() for c in row]
        if not row or not any(row) or row[0].startswith("#"):
            continue
        if no == 1 and row[0].lower() == "src":
            continue
        if len(row) not in (3, 4):
            raise bad(no, f"expected src,dst,bytes[,start], got {len(row)} fields")
        s = _int(row[0], "src", bad, no)
        d = _int(row[1], "dst", bad, no)
        if s == d:
            raise bad(no, f"flow from host {s} to itself")
        b = _float(row[2], "bytes", bad, no)
        if b != int(b):
            raise bad(no, f"bytes must be whole, got {row[2]!r}")
        src.append(s)
        dst.append(d)
        size.append(int(b))
        start.append(_float(row[3], "start", bad, no) if len(row) == 4 and row[3] else 0.0)
        if len(src) > MAX_FLOWS:
            raise bad(no, f"more than {MAX_FLOWS:,} flows")
    nodes = max(max(src, default=-1), max(dst, default=-1)) + 1
    return _matrix(nodes, src, dst, size, start)


def _matrix(nodes, src, dst, size, start) -> Matrix:
    return Matrix(
        int(nodes),
        np.asarray(src, np.int64),
        np.asarray(dst, np.int64),
        np.asarray(size, np.float64),
        np.asarray(start, np.float64),
    )


def write_matrix(m: Matrix, path: str | Path, fmt: str | None = None, note: str = "") -> str:
    """Write ``m`` (format from ``fmt`` or the file name), atomically; returns the format.
    ``note``: a comment line (htsim only; CSV has no comments)."""
    fmt = matrix_format(path, fmt)
    frac = np.flatnonzero(m.size != np.round(m.size))
    if len(frac):
        i = int(frac[0])
        raise InputError("size", f"flow {i} has {m.size[i]} bytes; matrix sizes are whole bytes")
    buf = io.StringIO()
    if fmt == "csv":
        buf.write("src,dst,bytes,start\n")
        for s, d, b, t in zip(m.src, m.dst, m.size, m.start, strict=True):
            buf.write(f"{int(s)},{int(d)},{int(b)},{float(t)!r}\n")
    else:
        if note:
            buf.write(f"# {note}\n")
        buf.write(f"Nodes {m.nodes}\nConnections {len(m)}\n")
        for i, (s, d, b, t) in enumerate(zip(m.src, m.dst, m.size, m.start, strict=True)):
            buf.write(f"{int(s)}->{int(d)} id {i + 1} start {float(t) * 1e6!r} size {int(b)}\n")
    p = Path(path)
    tmp = None
    try:
        if p.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.")
        with os.fdopen(fd, "w") as f:
            f.write(buf.getvalue())
        os.replace(tmp, p)
    except OSError as e:
        if tmp is not None:  # nothing half-written left beside it
            Path(tmp).unlink(missing_ok=True)
        raise InputError("--write-matrix", f"cannot write {p}: {e.strerror}") from None
    return fmt


def matrix_dag(m: Matrix, fabric: Fabric) -> FlowDAG:
    """The matrix's flows on ``fabric``: host ``i`` is its ``i``-th endpoint; a flow starts
    ``start`` seconds after t = 0; flow ``i`` has routing key ``i``."""
    from hpn.workload.patterns import endpoints

    ep = endpoints(fabric)
    if m.nodes > len(ep):
        raise InputError(
            "--matrix", f"the matrix has {m.nodes} hosts, the fabric {len(ep)} endpoints"
        )
    dag = FlowDAG()
    if len(m):
        dag.add_flows(ep[m.src], ep[m.dst], m.size, delay=m.start, keys=np.arange(len(m)))
    return dag


def dag_matrix(dag: FlowDAG, fabric: Fabric) -> Matrix:
    """A flows-only DAG as a matrix over the fabric's endpoints. Dependencies and compute
    tasks cannot be written; coupled groups are written as independent flows."""
    from hpn.workload.patterns import endpoints

    t = dag.tasks
    if dag.num_compute or len(t.dep_before):
        raise InputError("--write-matrix", "only independent flows can be written as a matrix")
    ep = endpoints(fabric)
    index = np.full(fabric.num_nodes, -1, np.int64)
    index[ep] = np.arange(len(ep))
    src, dst = index[t.src], index[t.dst]
    if (src < 0).any() or (dst < 0).any():
        raise InputError("--write-matrix", "a flow's end is not an endpoint of the fabric")
    return Matrix(len(ep), src, dst, t.size.copy(), t.delay[t.flow_task].copy())
