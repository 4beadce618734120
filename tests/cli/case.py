"""A bad-input case of the corpus (:mod:`tests.cli.corpus`) and the table helper."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    command: str
    args: tuple[str, ...]
    fragments: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    setup: str | None = None
    known: str | None = None  # a known gap: why it fails today, and whose code it is in

    @property
    def id(self) -> str:
        return " ".join(self.args).replace("{R}/examples/", "")


def cases(command: str, rows: list[tuple]) -> list[Case]:
    """Rows ``(args, fragments[, extra])``: ``args`` after the command, as one string (split
    on spaces) or a tuple; ``extra``: ``{"env": {...}, "setup": "name"}``."""
    out = []
    for row in rows:
        args, frags, extra = (*row, {})[:3]
        argv = tuple(args.split()) if isinstance(args, str) else tuple(args)
        if isinstance(frags, str):
            frags = (frags,)
        out.append(Case(command, tuple(command.split()) + argv, tuple(frags), **extra))
    return out


__all__ = ["Case", "cases"]
