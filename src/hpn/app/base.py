"""The shape of every command: a config model in, a typed result out.

A command is a :class:`Command`: its pydantic ``config`` model (the whole TOML a run is
described by: ``[fabric]``, ``[traffic]``, ...) and its ``service`` (``config -> Outcome``);
its one-line summary is registered with it in :data:`hpn.app.COMMANDS`. The CLI generates
its flags from the config's fields (the CLI generator); sweeps, the dashboard and the demo
call :func:`hpn.app.run` (:meth:`Command.run_config`) with a plain dict. Results are
dataclasses deriving :class:`hpn.result.Result` (re-exported here): typed fields, their JSON
form and the key figures a terminal shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from hpn.config import Model, one_line, user_input
from hpn.errors import InputError
from hpn.result import DETAIL, OMIT, Result, json_key

__all__ = ["DETAIL", "OMIT", "Command", "FileInput", "Outcome", "Result", "json_key"]

C = TypeVar("C", bound=Model)
R = TypeVar("R", bound=Result)


@dataclass
class Outcome(Generic[R]):
    """What a service computed: the typed result, its tables, the resolved config."""

    result: R
    tables: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] | None = None  # resolved config, JSON form
    wall_s: float | None = None  # None: measured by Command.run
    warnings: list[str] = field(default_factory=list)  # one line each, on stderr


@dataclass(frozen=True)
class FileInput:
    """A file the CLI reads into config tables: a positional argument or a ``--name`` option.

    ``load(path)`` returns the tables (``{"job": [...]}``), merged over ``--config``.
    """

    name: str
    help: str
    load: Callable[[Any], dict[str, Any]]
    argument: bool = True


@dataclass(frozen=True)
class Command(Generic[C]):
    """One command: name, config model, service, and how the CLI presents it.

    Parameters
    ----------
    name
        ``"traffic"``, ``"pool simulate"``: the CLI path and the runnable name.
    config
        Pydantic model of the whole config (one field per TOML table).
    service
        ``service(config) -> Outcome``; raises :class:`~hpn.errors.InputError` on bad input.
    flags
        Config tables whose fields become CLI flags (``("traffic",)``); ``"fabric"`` gets the
        shared fabric flags.
    stored
        Whether a run is recorded (``--out``, ``--plot``).
    files
        Files the CLI reads into config tables (:class:`FileInput`): ``hpn train JOB.toml``.
    progress
        Whether the service takes ``progress=`` (a bar on a terminal).
    summary
        One line for help (a plug-in's; built-in commands give theirs in :mod:`hpn.app`).
    example
        A config to start from (a plug-in's; the dashboard offers commands that have one).
    """

    name: str
    config: type[C]
    service: Callable[..., Outcome[Any]]
    flags: tuple[str, ...] = ()
    stored: bool = True
    files: tuple[FileInput, ...] = ()
    progress: bool = False
    summary: str = ""
    example: dict[str, Any] | None = None

    def parse(self, data: dict[str, Any] | None, allow_large: bool = False) -> C:
        """Validate a config dict (a TOML document) into the config model, then check the
        command's size limits (:mod:`hpn.app.limits`; ``allow_large``: the raised bounds)."""
        from hpn.app import limits

        try:
            with user_input():  # a bare number in a size or bandwidth field: refused
                cfg = self.config.model_validate(data or {})
        except ValidationError as e:
            raise one_line(e) from None
        limits.check(self.name, cfg, allow_large)
        return cfg

    def run(self, config: C, **kw: Any) -> Outcome[Any]:
        """Call the service, timing it unless it timed itself."""
        t0 = time.perf_counter()
        out = self.service(config, **kw)
        if out.config is None:
            out.config = config.model_dump(mode="json")
        if out.wall_s is None:
            out.wall_s = time.perf_counter() - t0
        return out

    def run_config(self, data: dict[str, Any]) -> Outcome[Any]:
        """A run from a plain dict (runnables: sweeps, dashboard, demo)."""
        if not isinstance(data, dict):
            raise InputError("config", f"expected a table, got {type(data).__name__}")
        return self.run(self.parse(data))
