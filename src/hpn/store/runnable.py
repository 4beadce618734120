"""The registry of runnable commands: name -> ``function(config dict) -> Outcome``.

Sweeps and the dashboard run commands in-process through it (never through a shell). Targets
are ``"module:attr"`` strings, imported only when run, so listing them is cheap; a target is an
application-layer command (:class:`hpn.app.Command`, called with ``run_config``) or a plain
function. The application layer (``hpn.app``) registers its commands here when imported; modules
named in ``$HPN_PLUGINS`` (comma-separated) are imported too and may call :func:`register`.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hpn.errors import InputError
from hpn.registry import Registry

_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

APP = "hpn.app"
"""The module that registers the built-in commands (imported by :func:`load_plugins`)."""


@dataclass
class Outcome:
    """What a command computed, in stored form: its JSON result, tables, resolved config."""

    result: dict[str, Any]
    tables: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] | None = None  # resolved (defaults filled); None: as given
    wall_s: float = 0.0


@dataclass(frozen=True)
class Runnable:
    name: str
    target: str
    summary: str = ""
    example: dict[str, Any] = field(default_factory=dict)  # a config to start from
    limits: tuple[str, ...] = ()  # its stated size limits, as text (checked by validate)

    def target_object(self) -> Any:
        """What the target names: an application-layer command or a function."""
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def load(self) -> Callable[[dict[str, Any]], Any]:
        obj = self.target_object()
        return getattr(obj, "run_config", obj)

    def validate(self, config: dict[str, Any]) -> None:
        """Parse ``config`` with the command's config model, if it has one, which also checks
        the command's size limits (InputError if bad or too large)."""
        parse = getattr(self.target_object(), "parse", None)
        if parse is not None:
            parse(config)

    def __call__(self, config: dict[str, Any]) -> Outcome:
        t0 = time.perf_counter()
        out = self.load()(config)
        if isinstance(out, tuple):
            out = Outcome(*out)
        if not isinstance(out, Outcome):  # an application-layer outcome: typed result
            out = Outcome(out.result.to_json(), out.tables, out.config, out.wall_s or 0.0)
        if out.config is None:
            out.config = config
        out.wall_s = time.perf_counter() - t0
        return out


RUNNABLES: Registry[Runnable] = Registry("command")
_plugins_loaded: str | None = None  # the $HPN_PLUGINS value last loaded


def register(name: str, target: str, summary: str = "", **kw: Any) -> None:
    RUNNABLES.add(name, Runnable(name, target, summary, **kw), summary)


def load_plugins() -> None:
    """Import the built-in commands and the modules ``$HPN_PLUGINS`` names (again when it
    changed); a name that is no module name, or cannot be imported, is one line."""
    global _plugins_loaded
    wanted = os.environ.get("HPN_PLUGINS", "")
    if _plugins_loaded == wanted:
        return
    importlib.import_module(APP)
    for mod in filter(None, (m.strip() for m in wanted.split(","))):
        if not _MODULE.match(mod):
            raise InputError("$HPN_PLUGINS", f"{mod!r} is not a module name (a.b.c)")
        try:
            importlib.import_module(mod)
        except ImportError as e:
            raise InputError("$HPN_PLUGINS", f"cannot import {mod!r} ({e})") from None
    _plugins_loaded = wanted


def get(name: str) -> Runnable:
    load_plugins()
    return RUNNABLES.get(name)


def names() -> list[str]:
    load_plugins()
    return list(RUNNABLES)
