"""One sweep point, run in a worker: compute through the registry, record atomically."""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path
from typing import Any


def run_point(
    command: str,
    config: dict[str, Any],
    folder: str,
    sweep: str,
    key: str,
    label: str,
    root: str,
    plot: bool = False,
    parent_pid: int | None = None,
) -> dict[str, Any]:
    """``{"key", "ok", "wall_s"[, "error"]}``; never raises (a bad point fails alone)."""
    from hpn.app import run
    from hpn.errors import InputError
    from hpn.plots import render_run
    from hpn.store.record import record_outcome

    t0 = time.perf_counter()
    try:
        outcome = run(command, config)
        if parent_pid is not None and os.getppid() != parent_pid:
            return {"key": key, "ok": False, "error": "sweep driver gone; result dropped"}
        record_outcome(
            command,
            outcome,
            config,
            plots=render_run if plot else None,
            out=Path(folder),
            root=Path(root),
            sweep=sweep,
            point=key,
            label=label,
        )
    except InputError as e:
        return {"key": key, "ok": False, "error": str(e)}
    except Exception as e:  # noqa: BLE001 - a failing point is reported, the sweep goes on
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        return {"key": key, "ok": False, "error": last}
    return {"key": key, "ok": True, "wall_s": time.perf_counter() - t0}
