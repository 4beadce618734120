"""``--out`` and ``--plot`` for computing commands, and :func:`save` to record their run.

Generated commands (:mod:`hpn.cli.gen`) get both and call ``save(name, outcome, out, plot,
json_out)`` with the application layer's outcome. The run folder is named on
stderr (with ``--json`` only on a terminal), so stdout keeps to one JSON object.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from collections.abc import Callable

    from hpn.app.base import Outcome
    from hpn.store.run import Run

__all__ = ["OutOpt", "PlotOpt", "check_out", "folder_name", "save"]

_PANEL = "Results"


def folder_name(text: str | Path) -> Path:
    """``--out`` as typed (or a default path): an empty name is refused, not the cwd."""
    if isinstance(text, str) and not text.strip():
        raise typer.BadParameter("give a folder name, not an empty string")
    return Path(text)


OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Run folder to write (default: a new folder under $HPN_RUNS_DIR or ./runs).",
        rich_help_panel=_PANEL,
        parser=folder_name,
    ),
]
PlotOpt = Annotated[
    bool,
    typer.Option(
        "--plot", help="Also draw the run's plots (PNG and HTML).", rich_help_panel=_PANEL
    ),
]


def check_out(out: Path | None) -> None:
    """Refuse an unusable ``--out`` before computing (see :func:`hpn.store.record.check_out`)."""
    from hpn.store.record import check_out as check

    check(out)


def save(
    command: str,
    outcome: Outcome[Any],
    out: Path | None = None,
    plot: bool = False,
    json: bool | None = None,
) -> Path:
    """Record ``outcome`` as a run of ``command`` and name its folder on stderr.

    With ``--json`` the folder is named only when stderr is a terminal, so callers that mix
    stderr into stdout (test runners, ``2>&1``) still read one JSON object.
    """
    import sys

    from hpn.cli.output import stderr
    from hpn.store.record import record_outcome

    render: Callable[[Run], object] | None = None
    if plot:  # (hpn.plots' modules are imported only then)
        from hpn.plots import render_run as render
    folder = record_outcome(command, outcome, plots=render, out=out)
    if not json or sys.stderr.isatty():
        stderr.print(f"run saved to {folder}", highlight=False, markup=False, soft_wrap=True)
    return folder
