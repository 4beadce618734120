"""CLI commands generated from application-layer commands (as vidur builds its CLI from configs).

:func:`typer_command` turns a command's :class:`~hpn.app.flags.CommandFlags` (its flags, derived
from its config model by :mod:`hpn.app.flags`) into one typer command, adding ``--config FILE``
(a TOML document of the whole config), ``--json`` and, for stored commands, ``--out`` and
``--plot``. The command itself (:class:`hpn.app.Command`) is loaded only when it runs.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from hpn import startup
from hpn.app.flags import TYPES, CommandFlags, Flag, config_data, given_flags, required_flag
from hpn.cli.lazy import HelpCommand
from hpn.cli.output import JsonOpt, emit_json, kv_table, progress_bar, stdout
from hpn.cli.store_opts import OutOpt, PlotOpt, save
from hpn.errors import InputError

_KW = inspect.Parameter.KEYWORD_ONLY
_POS = inspect.Parameter.POSITIONAL_OR_KEYWORD

LargeOpt = Annotated[
    bool,
    typer.Option("--allow-large", help="Raise the size limits to their large bounds (see Limits)."),
]
ConfigFileOpt = Annotated[
    Path | None,
    typer.Option("--config", help="TOML file with the command's tables ([fabric], ...)."),
]
FabricConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="TOML file: the command's tables ([fabric], ...) or fabric fields only.",
        rich_help_panel="Fabric",
    ),
]


def _option(f: Flag) -> inspect.Parameter:
    """The typer parameter of one flag."""
    if f.type == "bool":
        opt = typer.Option(f.decl, help=f.help, rich_help_panel=f.panel)
        return inspect.Parameter(f.key, _KW, default=False, annotation=Annotated[bool, opt])
    typ = TYPES[f.type]
    ann = list[typ] | None if f.many else typ | None  # type: ignore[valid-type]
    shown = f"{f.help} [default: {f.show}]" if f.show else f.help  # typer: "(text)" for text
    opt = typer.Option(f.decl, help=shown, show_default=False, parser=f.parser)
    opt.rich_help_panel = f.panel
    return inspect.Parameter(f.key, _KW, default=None, annotation=Annotated[ann, opt])


def _param(name: str, annotation: Any, default: Any = None) -> inspect.Parameter:
    return inspect.Parameter(name, _KW, default=default, annotation=annotation)


def typer_command(flags: CommandFlags) -> Callable[..., None]:
    """A function typer turns into the CLI command ``flags`` describes."""
    params: list[inspect.Parameter] = []
    for f in flags.files:
        if f.argument:
            ann: Any = Annotated[Path, typer.Argument(help=f.help, metavar=f.name.upper())]
            params.append(inspect.Parameter(f.key, _POS, annotation=ann))
        else:
            ann = Annotated[Path | None, typer.Option(f"--{f.name}", help=f.help)]
            params.append(_param(f.key, ann))
    fabric = [_option(f) for f in flags.fabric]
    if fabric:  # the shared fabric flags, --config second among them
        params += [fabric[0], _param("config", FabricConfigOpt), *fabric[1:]]
    elif flags.config:
        params.append(_param("config", ConfigFileOpt))
    params += [_option(f) for f in flags.fields]
    params.append(_param("json_out", JsonOpt, False))
    if flags.large:
        params.append(_param("allow_large", LargeOpt, False))
    if flags.stored:
        params += [_param("out", OutOpt), _param("plot", PlotOpt, False)]

    def callback(**kw: Any) -> None:
        invoke(flags, kw)

    callback.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    callback.__annotations__ = {p.name: p.annotation for p in params}
    callback.__doc__ = flags.help.split("\n\n")[0]
    callback.__name__ = flags.name.replace(" ", "_")
    return callback


def invoke(flags: CommandFlags, kw: dict[str, Any]) -> None:
    """Parse, run, record and print one command."""
    from hpn.app import COMMANDS
    from hpn.store.record import reserve_out

    cmd = COMMANDS.get(flags.name)
    json_out = kw.pop("json_out", False)
    out: Path | None = kw.pop("out", None)
    plot = kw.pop("plot", False)
    allow_large = kw.pop("allow_large", False)
    with reserve_out(out if cmd.stored else None):  # held until saved: one writer per --out
        given = given_flags(flags, kw)
        try:
            cfg = cmd.parse(config_data(cmd, flags, kw), allow_large)
            startup.over()
            if cmd.progress:
                with progress_bar() as bar:
                    outcome = cmd.run(cfg, progress=bar)
            else:
                outcome = cmd.run(cfg)
        except InputError as e:  # name the flag the user typed, not the config field
            if e.field in given:
                raise InputError(given[e.field], e.message) from None
            missing = required_flag(flags, cmd, e.field) if e.message == "Field required" else None
            if missing:
                raise InputError(missing, "required option, not given") from None
            raise
        for warning in outcome.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if cmd.stored:
            save(cmd.name, outcome, out, plot, json_out)
    show(outcome.result, json_out)


def show(result: Any, json_out: bool) -> None:
    """One JSON object, the result's own lines, or its key-figure table."""
    if json_out:
        emit_json(result.to_json())
        return
    lines = result.lines()
    if lines is None:
        for heading, rows in result.sections():
            stdout.print(kv_table(heading, rows))
    else:
        for line in lines:
            stdout.print(line, highlight=False, soft_wrap=True)
    footer = result.footer()
    if footer:
        stdout.print(footer, highlight=False, soft_wrap=True)


def add(app: typer.Typer, flags: CommandFlags, name: str | None = None) -> None:
    """Register the command ``flags`` describes on a typer app under its last word (or ``name``)."""
    word = name or flags.name.split()[-1]
    own = type("AppCommand", (HelpCommand,), {"own_start": True})  # ends it once parsed
    app.command(word, help=flags.help, cls=own)(typer_command(flags))


__all__ = ["add", "invoke", "show", "typer_command"]
