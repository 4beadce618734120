"""Atomic file writes: write a temporary file in the same folder, fsync, then rename.

A reader (or a run killed half-way) sees either the old file or the new one, never a part.
Files get the mode a plain ``open()`` would give them (``0o666`` less the umask).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def file_mode() -> int:
    return 0o666 & ~umask()


def write_with(path: str | Path, writer: Callable[[Path], object]) -> Path:
    """Call ``writer(tmp)`` on a temporary path next to ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        os.chmod(tmp_path, file_mode())  # mkstemp makes 0600; respect the umask instead
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


def json_default(x: Any) -> Any:
    """JSON for numpy scalars and arrays (``json.dumps(default=json_default)``)."""
    import numpy as np

    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serializable: {type(x).__name__}")


def finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float replaced by None: JSON has neither (Python's
    ``Infinity`` is not JSON), so no output carries one."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if type(obj).__module__ == "numpy":
        try:
            return finite(json_default(obj))
        except TypeError:
            return obj
    return obj


def json_text(obj: Any, indent: int | None = 2) -> str:
    """Strict JSON text of ``obj`` (numpy values converted, NaN and infinities as null)."""
    return json.dumps(finite(obj), default=json_default, indent=indent, allow_nan=False)


def write_json(path: str | Path, obj: Any) -> Path:
    return write_text(path, json_text(obj) + "\n")


def is_temp(name: str) -> bool:
    """A name :func:`write_with`, a run's staging folder or its lock uses while writing."""
    return name.startswith(".") and (
        name.endswith(".tmp") or ".part-" in name or name.endswith(".lock")
    )
