"""The request trace every reader produces: columns as numpy arrays, sorted by arrival."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from hpn.errors import InputError

_T = TypeVar("_T")

MAX_TRACE_BYTES = 8 * 2**30  # a trace file's size at most (100 M requests, the large bound)


@dataclass(frozen=True)
class Trace:
    """Requests of a multi-model pool.

    `model[i]` indexes `names` (the trace's model names) and `kinds` (catalog model keys
    that set each name's size, latency and memory).
    """

    arrival: np.ndarray  # float64 seconds from trace start, sorted
    model: np.ndarray  # int32 index into names
    input_len: np.ndarray  # int64 tokens
    output_len: np.ndarray  # int64 tokens (>= 1)
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    rates: tuple[float, ...] | None = None  # declared req/s per model (a forecast), if known

    def __post_init__(self) -> None:
        n = len(self.arrival)
        if not (len(self.model) == len(self.input_len) == len(self.output_len) == n):
            raise ValueError("trace columns differ in length")
        if len(self.names) != len(self.kinds):
            raise ValueError("names and kinds differ in length")
        if self.rates is not None and len(self.rates) != len(self.names):
            raise ValueError("names and rates differ in length")

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def duration(self) -> float:
        """Time of the last arrival, s (0 for no request)."""
        return float(self.arrival[-1]) if len(self) else 0.0

    @staticmethod
    def build(
        arrival: npt.ArrayLike,
        model: npt.ArrayLike,
        input_len: npt.ArrayLike,
        output_len: npt.ArrayLike,
        names: Iterable[str],
        kinds: Iterable[str],
        rates: Iterable[float] | None = None,
    ) -> Trace:
        """Sort by arrival (stable) and normalize dtypes."""
        arrival = np.asarray(arrival, dtype=np.float64)
        order = np.argsort(arrival, kind="stable")
        return Trace(
            arrival[order],
            np.asarray(model, dtype=np.int32)[order],
            np.asarray(input_len, dtype=np.int64)[order],
            np.asarray(output_len, dtype=np.int64)[order],
            tuple(names),
            tuple(kinds),
            None if rates is None else tuple(float(r) for r in rates),
        )

    def select(self, mask: np.ndarray) -> Trace:
        """The requests where `mask` holds (models and rates kept).

        Parameters
        ----------
        mask
            Boolean per request.

        Returns
        -------
        Trace
            The selection.
        """
        return Trace(
            self.arrival[mask],
            self.model[mask],
            self.input_len[mask],
            self.output_len[mask],
            self.names,
            self.kinds,
            self.rates,
        )


def read_text(path: str | Path) -> str:
    """A trace file's text.

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    str
        Its text.

    Raises
    ------
    InputError
        When the file is missing or not UTF-8.
    """
    from hpn.config import read_input

    return read_input(path, MAX_TRACE_BYTES)


def split_csv(line: str) -> list[str]:
    """One CSV line's fields; quoted fields (``"a,b"``) as CSV reads them.

    Parameters
    ----------
    line
        The line, without its line end.

    Returns
    -------
    list of str
        The fields.
    """
    if '"' not in line:
        return line.split(",")
    import csv

    return next(csv.reader([line]), [])


def csv_rows(path: str | Path, header: tuple[str, ...]) -> Iterator[tuple[str, list[str]]]:
    """The rows of a CSV trace whose first line is `header`: each non-blank line's
    ``file:line`` (for errors) and fields, as many as the header's.

    Parameters
    ----------
    path
        The file.
    header
        Its column names, in order.

    Yields
    ------
    tuple of str and list of str
        ``(where, fields)``.

    Raises
    ------
    InputError
        Another header, or a row of another number of fields (naming its line).
    """
    lines = read_text(path).splitlines()
    if not lines or tuple(c.strip() for c in split_csv(lines[0])) != header:
        raise InputError(f"{path}:1", f"expected header {','.join(header)}")
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cols = split_csv(line)
        where = f"{path}:{no}"
        if len(cols) != len(header):
            raise InputError(where, f"expected {len(header)} columns, got {len(cols)}")
        yield where, cols


MAX_TOKENS = 2**20  # tokens in one request's prompt or output: past any model's context


def _cell(text: str, where: str, column: str, read: Callable[[str], _T], what: str) -> _T:
    """``read(text)`` (``int``, ``float``) of a cell; an InputError naming the file, line
    and column, and what was expected (``what``: ``"an integer"``), if it cannot."""
    try:
        return read(text.strip())
    except ValueError:
        raise InputError(where, f"column {column!r}: expected {what}, got {text!r}") from None


def parse_int(
    text: str, where: str, column: str, minimum: int = 0, maximum: int = MAX_TOKENS
) -> int:
    """An integer cell in ``[minimum, maximum]``.

    Parameters
    ----------
    text
        The cell.
    where
        ``file:line``, named in errors.
    column
        Column name, in errors.
    minimum, maximum
        Bounds.

    Returns
    -------
    int
        The value.
    """
    v = _cell(text, where, column, int, "an integer")
    if not minimum <= v <= maximum:
        raise InputError(where, f"column {column!r}: must be in {minimum}..{maximum:,}, got {v:,}")
    return v


def require_rows(path: str | Path, n: int) -> None:
    """Refuse a trace file with a header and no request.

    Parameters
    ----------
    path
        The file.
    n
        Requests read.
    """
    if n == 0:
        raise InputError(str(path), "no requests (the file has only its header)")


def parse_float(text: str, where: str, column: str, minimum: float = 0.0) -> float:
    """A finite number cell, at least `minimum`.

    Parameters
    ----------
    text
        The cell.
    where
        ``file:line``, named in errors.
    column
        Column name, in errors.
    minimum
        Lower bound.

    Returns
    -------
    float
        The value.
    """
    v = _cell(text, where, column, float, "a number")
    if not (v >= minimum) or v == float("inf"):
        raise InputError(where, f"column {column!r}: must be a finite number >= {minimum}")
    return v
