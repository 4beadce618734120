"""Dotted paths into nested config dicts: ``fabric.segments``, ``pool.policy``."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any


def get_path(d: dict[str, Any], path: str, default: Any = None) -> Any:
    cur: Any = d
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return cur


def set_path(d: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``d`` with ``path`` set to ``value`` (tables created as needed)."""
    out = copy.deepcopy(d)
    cur = out
    parts = path.split(".")
    for part in parts[:-1]:
        nxt = cur.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise TypeError(f"{part!r} in {path!r} is not a table")
        cur = nxt
    cur[parts[-1]] = value
    return out


def flatten(d: dict[str, Any], prefix: str = "", depth: int = 3) -> dict[str, Any]:
    """Scalars (numbers, strings, booleans) of a nested dict under dotted keys."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and depth > 1:
            out.update(flatten(v, key + ".", depth - 1))
        elif isinstance(v, bool | int | float | str) or v is None:
            out[key] = v
    return out


def find_key(d: Any, key: str) -> Any:
    """The first scalar stored under ``key`` anywhere in a nested dict (depth first)."""
    if isinstance(d, dict):
        v = d.get(key)
        if v is not None and not isinstance(v, dict):
            return v
        for v in d.values():
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def config_hash(config: dict[str, Any]) -> str:
    """A stable 16-hex digest of a config (key order does not matter)."""
    text = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
