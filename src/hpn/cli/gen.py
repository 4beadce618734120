"""CLI commands generated from application-layer commands (as vidur builds its CLI from configs).

For a :class:`hpn.app.Command`, :func:`typer_command` makes one typer command whose options are
the fields of the config tables it names in ``flags`` (``--pattern`` for ``traffic.pattern``;
a field's ``json_schema_extra={"flag": "--hash"}`` renames it, ``{"flag": None}`` hides it),
the shared fabric options when ``"fabric"`` is among them, ``--config FILE`` (a TOML document of
the whole config), ``--json`` and, for stored commands, ``--out`` and ``--plot``.

Precedence: model defaults < ``--config`` file < the positional FILE (train, fail) < flags.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic.fields import FieldInfo

from hpn.app import limits
from hpn.app.base import Command
from hpn.app.common import FabricFlags
from hpn.cli.output import JsonOpt, emit_json, kv_table, progress_bar, stdout
from hpn.cli.store_opts import OutOpt, PlotOpt, check_out, save
from hpn.config import load_toml
from hpn.errors import InputError

_SEP = "__"
_KW = inspect.Parameter.KEYWORD_ONLY
_POS = inspect.Parameter.POSITIONAL_OR_KEYWORD

LargeOpt = Annotated[
    bool,
    typer.Option("--allow-large", help="Raise the size limits to their large bounds (see Limits)."),
]
ConfigFileOpt = Annotated[
    Path | None,
    typer.Option("--config", help="TOML file with the command's tables (\\[fabric], ...)."),
]
FabricConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="TOML file: the command's tables (\\[fabric], ...) or fabric fields only.",
        rich_help_panel="Fabric",
    ),
]
_FABRIC = f"fabric{_SEP}"


def _scalar(ann: Any) -> tuple[Any, bool]:
    """The CLI type of a field annotation and whether it repeats (a list)."""
    origin = typing.get_origin(ann)
    if origin is Annotated:  # a unit-typed field: the CLI passes the text through
        return str, False
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        return _scalar(args[0]) if len(args) == 1 else (str, False)
    if origin is list:
        return _scalar(typing.get_args(ann)[0])[0], True
    if origin is typing.Literal:
        return str, False
    if ann in (int, float, str, bool, Path):
        return ann, False
    return str, False


def _help(field: FieldInfo) -> str:
    text = (field.description or "").strip()
    return (text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")) if text else ""


def field_options(table: str, model: type[Any]) -> list[tuple[str, inspect.Parameter, str]]:
    """``(python name, parameter, flag)`` for each field of a config table."""
    out = []
    panel = table.replace("_", " ").capitalize()
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        flag = extra.get("flag", "--" + name.replace("_", "-"))
        if flag is None:
            continue
        typ, many = _scalar(field.annotation)
        if field.metadata and not many:
            typ = str if any(hasattr(m, "func") for m in field.metadata) else typ
        default = None if field.is_required() else field.get_default(call_default_factory=True)
        show = None if default in (None, [], False) else str(default)
        key = f"{table}{_SEP}{name}"
        if typ is bool:
            flags = f"--no-{flag[2:]}" if default is True else flag
            opt = typer.Option(flags, help=_help(field), rich_help_panel=panel)
            param = inspect.Parameter(key, _KW, default=False, annotation=Annotated[bool, opt])
        else:
            ann = list[typ] | None if many else typ | None  # type: ignore[valid-type]
            opt = typer.Option(flag, help=_help(field), show_default=show or False)
            opt.rich_help_panel = panel
            param = inspect.Parameter(key, _KW, default=None, annotation=Annotated[ann, opt])
        out.append((key, param, flag))
    return out


def typer_command(cmd: Command[Any], summary: str) -> Callable[..., None]:
    """A function typer turns into the CLI command of ``cmd``."""
    params: list[inspect.Parameter] = []
    for f in cmd.files:
        if f.argument:
            ann: Any = Annotated[Path, typer.Argument(help=f.help, metavar=f.name.upper())]
            params.append(inspect.Parameter(f"file{_SEP}{f.name}", _POS, annotation=ann))
        else:
            ann = Annotated[Path | None, typer.Option(f"--{f.name}", help=f.help)]
            params.append(
                inspect.Parameter(f"file{_SEP}{f.name}", _KW, default=None, annotation=ann)
            )
    seen = {"--config", "--json"}
    if "fabric" in cmd.flags:  # the shared fabric flags, --config second among them
        fab = field_options("fabric", FabricFlags)
        config = inspect.Parameter("config", _KW, default=None, annotation=FabricConfigOpt)
        params += [fab[0][1], config, *(p for _, p, _ in fab[1:])]
        seen |= {flag for _, _, flag in fab}
    elif cmd.config.model_fields:
        params.append(inspect.Parameter("config", _KW, default=None, annotation=ConfigFileOpt))
    seen |= {"--out", "--plot"} if cmd.stored else set()
    seen |= {f"--{f.name}" for f in cmd.files if not f.argument}
    for table in cmd.flags:
        if table == "fabric":
            continue
        model = cmd.config.model_fields[table].annotation
        for _, param, flag in field_options(table, model):
            if flag in seen:
                raise ValueError(f"{cmd.name}: flag {flag} defined twice")
            seen.add(flag)
            params.append(param)
    params.append(inspect.Parameter("json_out", _KW, default=False, annotation=JsonOpt))
    if limits.overridable(cmd.name):
        params.append(inspect.Parameter("allow_large", _KW, default=False, annotation=LargeOpt))
    if cmd.stored:
        params.append(inspect.Parameter("out", _KW, default=None, annotation=OutOpt))
        params.append(inspect.Parameter("plot", _KW, default=False, annotation=PlotOpt))

    def callback(**kw: Any) -> None:
        invoke(cmd, kw)

    callback.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    callback.__annotations__ = {p.name: p.annotation for p in params}
    callback.__doc__ = summary
    callback.__name__ = cmd.name.replace(" ", "_")
    return callback


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def config_data(cmd: Command[Any], kw: dict[str, Any]) -> dict[str, Any]:
    """The config document the CLI arguments describe (before validation)."""
    data: dict[str, Any] = {}
    fabric = "fabric" in cmd.flags
    file = kw.pop("config", None)
    if file is not None:
        data = load_toml(file)
        tables = any(isinstance(v, dict) for v in data.values())  # [fabirc] is no fabric field
        if fabric and not tables and not set(data) & set(cmd.config.model_fields):
            data = {"fabric": data}  # a file of fabric fields only
    for f in cmd.files:
        path = kw.pop(f"file{_SEP}{f.name}")
        if path is not None:
            data = _merge(data, f.load(path))
    if fabric:
        flags = {k[len(_FABRIC) :]: kw.pop(k) for k in list(kw) if k.startswith(_FABRIC)}
        given = FabricFlags(**{k: v for k, v in flags.items() if v is not None})
        data["fabric"] = given.table(data.get("fabric"))
    for key, value in kw.items():
        if value is None or value is False or value == []:
            continue
        table, _, name = key.partition(_SEP)
        field = cmd.config.model_fields[table].annotation.model_fields[name]
        if value is True and field.get_default() is True:
            value = False  # --no-x
        data.setdefault(table, {})[name] = list(value) if isinstance(value, tuple) else value
    return data


def _given_flags(cmd: Command[Any], kw: dict[str, Any]) -> dict[str, str]:
    """``{"traffic.size": "--size"}`` for the flags given on this command line."""
    out = {}
    for key, value in kw.items():
        if value is None or value is False or value == []:
            continue
        if _SEP in key and not key.startswith(("file", _FABRIC)):  # fabric: named by field
            table, _, name = key.partition(_SEP)
            model = cmd.config.model_fields[table].annotation
            extra = model.model_fields[name].json_schema_extra
            flag = extra.get("flag") if isinstance(extra, dict) else None
            out[f"{table}.{name}"] = flag or "--" + name.replace("_", "-")
    return out


def _required_flag(cmd: Command[Any], field: str) -> str | None:
    """The flag of a missing required config field (``export`` or ``select.dst``), if any."""
    table, _, name = field.partition(".")
    if table not in cmd.flags or table == "fabric":
        return None
    model = cmd.config.model_fields[table].annotation
    names = [name] if name else [n for n, f in model.model_fields.items() if f.is_required()]
    for key, _, flag in field_options(table, model):
        if key.partition(_SEP)[2] in names[:1]:
            return flag
    return None


def invoke(cmd: Command[Any], kw: dict[str, Any]) -> None:
    """Parse, run, record and print one command."""
    json_out = kw.pop("json_out", False)
    out: Path | None = kw.pop("out", None)
    plot = kw.pop("plot", False)
    allow_large = kw.pop("allow_large", False)
    check_out(out)
    given = _given_flags(cmd, kw)
    try:
        cfg = cmd.parse(config_data(cmd, kw), allow_large)
        if cmd.progress:
            with progress_bar() as bar:
                outcome = cmd.run(cfg, progress=bar)
        else:
            outcome = cmd.run(cfg)
    except InputError as e:  # name the flag the user typed, not the config field
        if e.field in given:
            raise InputError(given[e.field], e.message) from None
        missing = _required_flag(cmd, e.field) if e.message == "Field required" else None
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


def add(app: typer.Typer, cmd: Command[Any], summary: str, name: str | None = None) -> None:
    """Register ``cmd`` on a typer app under its last word (or ``name``)."""
    stated = limits.describe(cmd.name)
    text = f"{summary}\n\n{stated}" if stated else summary
    app.command(name or cmd.name.split()[-1], help=text)(typer_command(cmd, summary))


__all__ = ["add", "config_data", "invoke", "show", "typer_command"]
