"""Where runs live: ``$HPN_RUNS_DIR``, else ``./runs``; one folder per run."""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

ENV = "HPN_RUNS_DIR"
INDEX = "index.sqlite"
CONFIG = "config.toml"
RESULT = "result.json"
META = "run.json"
TABLES = "tables"
PLOTS = "plots"


def read_meta(folder: Path) -> dict[str, Any] | None:
    """A run folder's ``run.json``, or None when it has none (or an unreadable one)."""
    try:
        return json.loads((folder / META).read_text())
    except (OSError, ValueError):
        return None


def runs_root() -> Path:
    """The store root (created on demand)."""
    return Path(os.environ.get(ENV) or "runs").absolute()


def root_field() -> str:
    """How error messages name the store root: ``$HPN_RUNS_DIR`` when set."""
    return f"${ENV}" if os.environ.get(ENV) else "runs folder"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "run"


def new_run_dir(command: str, root: Path | None = None) -> Path:
    """A fresh, unique folder name under the root: ``20250101-120000-topo-summary-1a2b3c``."""
    root = root or runs_root()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return root / f"{stamp}-{slug(command)}-{secrets.token_hex(3)}"
