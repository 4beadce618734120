"""Output helpers shared by commands: one JSON object on stdout, rich tables otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]
"""The ``--json`` flag of every command that computes."""


class _Console:
    """A rich ``Console`` made on first use: a ``--json`` run prints nothing through rich, and
    ``rich.console`` with ``rich.table`` is ~40 ms of imports."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    @property
    def real(self) -> Console:
        """The rich console itself (for rich objects that take one)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


# no markup: tables and lines carry user text (paths, SQL results) that may contain "[/x]"
stdout = _Console(markup=False)
stderr = _Console(stderr=True, markup=False)


def emit_json(obj: dict[str, Any]) -> None:
    """Exactly one JSON object on stdout, nothing else."""
    from hpn.store.atomic import json_text

    sys.stdout.write(json_text(obj) + "\n")


def kv_table(title: str, rows: list[tuple[str, Any]]) -> Table:
    from rich.table import Table

    from hpn.app.display import display

    table = Table(title=title, show_header=False, title_justify="left", min_width=len(title) + 2)
    table.add_column("field", style="bold")
    table.add_column("value", justify="right")
    for k, v in rows:
        table.add_row(k, display(v))
    return table


PROGRESS_MIN = 20_000
"""Smallest total (events, flows, trials) worth a progress bar."""


@contextmanager
def progress_bar(what: str = "simulating") -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(done, total)`` callback drawing a bar on stderr; None off a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    bar = Progress(console=stderr.real, transient=True)
    task: list[Any] = []

    def update(done: int, total: int) -> None:
        if not task:
            if total < PROGRESS_MIN:
                return
            task.append(bar.add_task(what, total=total))
            bar.start()
        bar.update(task[0], completed=done)

    try:
        yield update
    finally:
        if task:
            bar.stop()
