"""Command groups that list their commands without building them (``hpn --help`` stays fast).

A :class:`LazyGroup` holds, besides ordinary click commands, *entries*: a name, a one-line
summary and a function that builds the command. ``hpn --help`` shows the summaries; only the
command a user invokes (or asks ``--help`` of) is built, so only its modules are imported.
``group.commands`` reads like click's dict: reading a value builds it.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from typer.core import TyperCommand, TyperGroup

from hpn import startup


def help_renderer() -> None:
    """Import typer's help renderer (``typer.rich_utils``) on the way to drawing help, set to
    draw help text as written (:func:`_literal`).

    A command that runs draws no help and never imports the renderer (with rich's console and
    tables, 40-60 ms), so this is called only on the way to drawing help: by
    :class:`LazyGroup` and :class:`HelpCommand`.
    """
    import typer.rich_utils as rich_utils

    rich_utils._make_rich_text = _literal  # type: ignore[assignment]


def _literal(*, text: str, style: str = "", markup_mode: Any = None) -> Any:
    """Help text as written in typer's styles: typer reads it as console markup (``[fabric]``
    dropped as a tag, ``BEGIN:END:FACTOR`` drawn ``BEGIN🔚FACTOR``) in the one function this
    replaces (``typer.rich_utils._make_rich_text``, 0.29; ``tests/cli/test_help.py``)."""
    from rich.text import Text
    from typer.rich_utils import highlighter

    return highlighter(Text(inspect.cleandoc(text), style=style))


class HelpCommand(TyperCommand):
    """A typer command that draws its help with :func:`help_renderer`'s renderer and ends the
    start-up (:func:`hpn.startup.over`) when it runs, unless it ends it itself (``own_start``)."""

    own_start = False

    def invoke(self, ctx: Any) -> Any:
        if not self.own_start:
            startup.over()
        return super().invoke(ctx)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for param in self.get_params(ctx):  # typer (0.29) builds an adapter even to keep a None
            if getattr(param, "_runtime_param", False) is None:
                param._runtime_param = _Unbuilt()  # type: ignore[attr-defined]
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        help_renderer()
        super().format_help(ctx, formatter)


class _Unbuilt:
    """An option's coercion, built only when needed: a value not given stays None (``()`` if
    repeatable) and one text is itself for a ``str`` option or its parser's value, as typer keeps
    them; any other value builds typer's own coercion (a pydantic adapter) and goes through it."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        desc = param.type_descriptor
        if type(value) is str and not param.multiple and param.nargs == 1:
            parser = desc.parameter_info.parser
            if parser is None and desc.annotation is str:
                return value
            if parser is not None:
                with contextlib.suppress(ValueError):  # (typer words the parser's ValueError)
                    return parser(value)
        param._runtime_param = None
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


@dataclass(frozen=True)
class Entry:
    """A command not built yet: its summary and how to build it."""

    summary: str
    build: Callable[[], Any]


class Commands(dict[str, Any]):
    """``name -> command``; an :class:`Entry` is replaced by its command when first read."""

    def __getitem__(self, name: str) -> Any:
        value = super().__getitem__(name)
        if isinstance(value, Entry):
            value = value.build()
            value.name = name
            super().__setitem__(name, value)
        return value

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        if name not in self:
            return default
        return self[name]

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        return ((name, self[name]) for name in list(self))

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return (self[name] for name in list(self))

    def peek(self, name: str) -> Any:
        """The command, or its :class:`Entry` if it isn't built yet."""
        return super().get(name)


class LazyGroup(TyperGroup):
    """A typer group whose :data:`entries` are built on first use; see the module docstring."""

    entries: ClassVar[dict[str, Entry]] = {}
    _listing = False

    def __init__(self, *args: Any, commands: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = Commands({**self.entries, **(commands or {})})
        self.commands = self.lazy

    def get_help_option(self, ctx: Any) -> Any:
        """The ``--help`` flag, defaulting to False rather than None.

        typer coerces an option's value through a pydantic adapter unless it is a bool flag
        holding a bool; a group's ``--help`` that isn't given holds None, so without this every
        ``hpn CMD --help`` imported pydantic's adapters (typer 0.29) just to keep that None.
        """
        opt = super().get_help_option(ctx)
        if opt is not None and opt.default is None:
            opt.default = False
        return opt

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self._listing:  # the help lists a summary: don't build the command for it
            value = self.lazy.peek(cmd_name)
            if isinstance(value, Entry):
                return TyperCommand(cmd_name, help=value.summary, short_help=value.summary)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        help_renderer()
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def click() -> Any:
    """The click typer runs on (typer may vendor its own copy)."""
    try:
        import typer._click as vendored  # type: ignore[import-not-found]
    except ImportError:
        import click as vendored  # type: ignore[no-redef]
    return vendored


def group(entries: dict[str, Entry]) -> type[LazyGroup]:
    """A :class:`LazyGroup` class holding ``entries`` (typer builds groups from a class)."""
    return type("LazyGroup", (LazyGroup,), {"entries": entries})
