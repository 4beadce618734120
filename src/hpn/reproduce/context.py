"""What a measure runs commands through: each run recorded in the store once per config.

The commands are run by the caller's ``runner`` (the application layer's
:func:`hpn.app.run`, passed in by :mod:`hpn.app.reproduce` and the demo), so this package
sits below the application layer and imports none of it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class SubRun:
    """One command a claim ran: what, with which config, and where the run is stored."""

    command: str
    label: str
    config: dict[str, Any]
    folder: str
    wall_s: float


def _no_runner(command: str, config: dict[str, Any]) -> Any:
    raise RuntimeError(f"no command runner given for {command!r}")


@dataclass
class Context:
    """Runs commands in-process through ``runner`` (``runner(name, config) -> Outcome``, the
    application layer's :func:`hpn.app.run`), records each as a run (``root``: the store),
    and reuses a result when a config repeats across claims."""

    runner: Callable[[str, dict[str, Any]], Any] = _no_runner
    root: Path | None = None
    record: bool = True
    runs: list[SubRun] = field(default_factory=list)
    _seen: dict[str, tuple[dict[str, Any], dict[str, Any], SubRun]] = field(default_factory=dict)
    say: Callable[[str], None] = lambda _msg: None

    def run(self, command: str, config: dict[str, Any], label: str) -> dict[str, Any]:
        """The JSON result of ``command`` on ``config`` (recorded as a run labelled ``label``).

        Parameters
        ----------
        command
            A command name (``"topo summary"``).
        config
            Its config tables.
        label
            The run's label in the store.

        Returns
        -------
        dict
            The result's JSON form.
        """
        return self.run_full(command, config, label)[0]

    def run_full(
        self, command: str, config: dict[str, Any], label: str
    ) -> tuple[dict[str, Any], dict[str, Any], SubRun]:
        """Like :meth:`run`, also the run's tables and its :class:`SubRun`."""
        key = f"{command}\n{json.dumps(config, sort_keys=True)}"
        if key in self._seen:
            return self._seen[key]
        self.say(f"{command}: {label}")
        out = self.runner(command, config)
        result = out.result.to_json() if hasattr(out.result, "to_json") else out.result
        wall = float(out.wall_s or 0.0)
        folder = ""
        if self.record:
            from hpn.store.record import record_outcome

            folder = str(
                record_outcome(command, out, config, root=self.root, label=f"reproduce: {label}")
            )
        sub = SubRun(command, label, config, folder, round(wall, 3))
        self.runs.append(sub)
        self._seen[key] = (result, out.tables, sub)
        return self._seen[key]


__all__ = ["Context", "SubRun"]
