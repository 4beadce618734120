"""Atomic file writes: write a temporary file in the same folder, fsync, then rename.

A reader (or a run killed half-way) sees either the old file or the new one, never a part.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_with(path: str | Path, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp)`` on a temporary path next to ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        writer(tmp_path)
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return path


def write_bytes(path: str | Path, data: bytes) -> Path:
    return write_with(path, lambda p: p.write_bytes(data))


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode())


def write_json(path: str | Path, obj: Any) -> Path:
    from hpn.cli.output import _default

    return write_text(path, json.dumps(obj, default=_default, indent=2) + "\n")
