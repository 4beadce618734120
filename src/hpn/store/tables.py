"""Tabular results: Parquet when pyarrow is installed (the ``store`` extra), else JSON columns.

A table is given as a ``pyarrow.Table``, a dict of equal-length columns (numpy arrays or
lists), or a list of row dicts; it is read back as a dict of numpy arrays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hpn.store.atomic import write_text, write_with

# Parquet's writer dictionary-encodes every column and falls back to plain encoding once a
# column chunk's dictionary passes this size. At its default (1 MiB) a column of distinct
# floats (finish times, peak utilizations) is hashed through ~130 k entries before that
# fallback: 0.2-0.3 s of an 8-pod run's 0.3 s of writing. At 64 KiB the fallback comes after
# ~8 k entries, so tables write about 4x faster, columns with few values (tiers, sizes) stay
# dictionary-encoded, files grow (8 pods: links +2 %, flows +26 %), and what is read back is
# the same.
DICTIONARY_PAGE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Labels:
    """A column of a few repeated strings, held as codes into ``names``.

    It is written as the plain string column ``names[codes]`` would be, without building
    that column: for the 8-pod links table (413 k rows) the strings cost 0.1-0.2 s to make
    and convert, the codes a few milliseconds. ``np.asarray`` gives the strings.

    Examples
    --------
    >>> col = Labels(np.array([1, 0, 1]), np.array(["nvlink", "nic_tor"]))
    >>> np.asarray(col).tolist(), len(col)
    (['nic_tor', 'nvlink', 'nic_tor'], 3)
    """

    codes: np.ndarray
    names: np.ndarray

    def __len__(self) -> int:
        return len(self.codes)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(np.asarray(self.names)[self.codes], dtype=dtype)

    def arrow(self) -> Any:
        """The column as a ``pyarrow`` string array, its UTF-8 bytes gathered from the
        names' in numpy (``pyarrow.compute``, which a cast would import, costs more CPU to
        import than a small run's whole table)."""
        import pyarrow as pa

        codes = np.asarray(self.codes, np.int64)
        raw = [str(n).encode() for n in np.asarray(self.names).tolist()]
        size = np.array([len(b) for b in raw], np.int64)
        first = np.zeros(len(raw) + 1, np.int64)
        np.cumsum(size, out=first[1:])
        offsets = np.zeros(len(codes) + 1, np.int64)
        np.cumsum(size[codes], out=offsets[1:])
        n = int(offsets[-1])
        pos = np.arange(n) - np.repeat(offsets[:-1] - first[codes], size[codes])
        data = np.frombuffer(b"".join(raw), np.uint8)[pos] if n else np.zeros(0, np.uint8)
        kind = pa.large_string() if n >= 2**31 else pa.string()
        width = np.int64 if n >= 2**31 else np.int32
        buffers = [None, pa.py_buffer(offsets.astype(width)), pa.py_buffer(data)]
        return pa.Array.from_buffers(kind, len(codes), buffers)


def have_arrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _columns(table: Any) -> dict[str, Any]:
    if isinstance(table, list):
        keys = list(dict.fromkeys(k for row in table for k in row))
        return {k: [row.get(k) for row in table] for k in keys}
    if isinstance(table, dict):
        return {
            str(k): v if isinstance(v, list | Labels) else np.asarray(v) for k, v in table.items()
        }
    raise TypeError(f"a table must be a pyarrow.Table, a dict of columns or rows, not {table!r}")


def write_table(folder: Path, name: str, table: Any) -> Path:
    """Write ``table`` as ``folder/NAME.parquet`` (or ``.json``) atomically."""
    if have_arrow():
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not isinstance(table, pa.Table):
            arrays = _columns(table).items()
            table = pa.table({k: v.arrow() if isinstance(v, Labels) else v for k, v in arrays})
        opts = {"dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES}
        return write_with(folder / f"{name}.parquet", lambda p: pq.write_table(table, p, **opts))
    cols = {k: np.asarray(v).tolist() for k, v in _columns(table).items()}
    return write_text(folder / f"{name}.json", json.dumps(cols))


def table_files(folder: Path) -> dict[str, Path]:
    """Table name -> file, for a run's ``tables/`` folder."""
    if not folder.is_dir():
        return {}
    files = sorted(folder.glob("*.parquet")) + sorted(folder.glob("*.json"))
    return {p.stem: p for p in files if not p.name.startswith(".")}


def read_table(path: Path) -> dict[str, np.ndarray]:
    """A stored table as a dict of numpy arrays."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(path)
        return {c: t.column(c).to_numpy(zero_copy_only=False) for c in t.column_names}
    return {k: np.asarray(v) for k, v in json.loads(path.read_text()).items()}
