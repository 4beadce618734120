"""The flags of a command, derived from its config model (as vidur derives its CLI from configs).

:func:`command_flags` describes a :class:`~hpn.app.base.Command`'s command line as plain data
(:class:`CommandFlags`): one :class:`Flag` per field of each config table the command names in
``flags`` (``--pattern`` for ``traffic.pattern``; a field's ``json_schema_extra={"flag":
"--hash"}`` renames it, ``{"flag": None}`` hides it), the shared fabric flags
(:class:`~hpn.app.common.FabricFlags`) when ``"fabric"`` is among them, and its files. The CLI
turns that into typer options; :func:`config_data` turns the values given back into the config
document. Being plain data, a description can be kept in :mod:`hpn.app.flagcache` so that
``hpn CMD --help`` needs neither the command's module nor pydantic.

Precedence: model defaults < ``--config`` file < the positional FILE (train, fail) < flags.
"""

from __future__ import annotations

import types
import typing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:
    from hpn.app.base import Command

SEP = "__"
"""Between table and field in a flag's key: ``traffic__size``."""
FABRIC = "fabric"
TYPES = {"str": str, "int": int, "float": float, "bool": bool, "path": Path}
"""A flag's value type by name (names keep a description JSON-able)."""


def whole_number(text: str) -> int:
    """An int flag's text: digits only (``8.0``, ``1e3`` and ``true`` are refused)."""
    if not text.strip().lstrip("+-").isdigit():
        import typer

        raise typer.BadParameter(f"{text!r} is not a valid integer")
    return int(text)


PARSERS = {"int": whole_number}
"""Parsers of flag types stricter than typer's own (which reads ``8.0`` as 8)."""


@dataclass(frozen=True)
class Flag:
    """One option of a command, from one field of a config table.

    Parameters
    ----------
    key
        ``table__field`` (``traffic__size``): the option's parameter name.
    flag
        ``--size``: the flag's name (as errors name it); a bool field defaulting to True is
        typed as ``--no-`` + that name.
    type
        ``"str"``, ``"int"``, ``"float"``, ``"bool"`` or ``"path"`` (see :data:`TYPES`).
    many
        Whether it repeats (a list field).
    help
        Help text, from the field's description.
    show
        The default as help shows it (None: not shown).
    panel
        The help panel (the table's name: ``Traffic``).
    invert
        A bool field defaulting to True: giving the flag sets it to False.
    """

    key: str
    flag: str
    type: str
    many: bool
    help: str
    show: str | None
    panel: str
    invert: bool = False

    @property
    def parser(self) -> Any:
        """A parser stricter than typer's for this flag's type (:data:`PARSERS`), or None."""
        return PARSERS.get(self.type)

    @property
    def decl(self) -> str:
        """The flag as declared on the command line (``--no-rail`` for an inverted one)."""
        return f"--no-{self.flag[2:]}" if self.invert else self.flag


@dataclass(frozen=True)
class FileFlag:
    """A file the command reads: a positional argument (``JOB``) or an option (``--matrix``)."""

    name: str
    help: str
    argument: bool = True

    @property
    def key(self) -> str:
        return f"file{SEP}{self.name}"


@dataclass(frozen=True)
class CommandFlags:
    """A command's whole command line as data (see the module docstring).

    Parameters
    ----------
    name
        The command (``"pool simulate"``).
    help
        Its help: the summary, then its limits.
    files
        Its files, in order.
    fabric
        The shared fabric flags (empty: not a fabric command).
    fields
        The flags of its other tables, in order.
    config
        Whether it takes ``--config FILE``.
    stored
        Whether it records a run (``--out``, ``--plot``).
    large
        Whether ``--allow-large`` raises one of its limits.
    """

    name: str
    help: str
    files: tuple[FileFlag, ...]
    fabric: tuple[Flag, ...]
    fields: tuple[Flag, ...]
    config: bool
    stored: bool
    large: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CommandFlags:
        return cls(
            **{
                **data,
                "files": tuple(FileFlag(**f) for f in data["files"]),
                "fabric": tuple(Flag(**f) for f in data["fabric"]),
                "fields": tuple(Flag(**f) for f in data["fields"]),
            }
        )


def _scalar(ann: Any) -> tuple[type, bool]:
    """The CLI type of a field annotation and whether it repeats (a list)."""
    origin = typing.get_origin(ann)
    if origin is Annotated:  # a unit-typed field: the CLI passes the text through
        if any(hasattr(m, "func") for m in ann.__metadata__):
            return str, False
        return _scalar(typing.get_args(ann)[0])
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


def _help(description: str | None) -> str:
    """A field's description as its flag's help: as written, ending in a period (its first word
    may be a value or a policy, ``nccl (NCCL's tuner ...)``, ``serverless-artifact: ...``, which
    a capital would misspell)."""
    text = (description or "").strip()
    return (text + ("" if text.endswith(".") else ".")) if text else ""


def _extra(field: Any) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def flag_name(name: str, model: type[Any]) -> str | None:
    """The flag of field ``name`` of a table model (``--size``; None: hidden). A field's
    ``json_schema_extra`` may rename it (``{"flag": "--hash"}``), hide it (``{"flag": None}``)
    or make an optional bool a ``--no-`` flag (``{"invert": True}``: unset, or False)."""
    extra = _extra(model.model_fields[name])
    flag = extra.get("flag", "--" + name.replace("_", "-"))
    return flag if flag is None else str(flag)


def table_flags(table: str, model: type[Any]) -> list[Flag]:
    """The flags of a config table's fields, in field order.

    Parameters
    ----------
    table
        The table's name (``traffic``): the keys' prefix and the help panel.
    model
        The table's pydantic model.

    Returns
    -------
    list of Flag
    """
    out = []
    panel = table.replace("_", " ").capitalize()
    for name, field in model.model_fields.items():
        flag = flag_name(name, model)
        if flag is None:
            continue
        typ, many = _scalar(field.annotation)
        if field.metadata and not many:
            typ = str if any(hasattr(m, "func") for m in field.metadata) else typ
        default = None if field.is_required() else field.get_default(call_default_factory=True)
        show = None if default in (None, [], False) or typ is bool else str(default)
        kind = next(k for k, v in TYPES.items() if v is typ)
        out.append(
            Flag(
                f"{table}{SEP}{name}",
                flag,
                kind,
                many,
                _help(field.description),
                show,
                panel,
                invert=typ is bool and (default is True or _extra(field).get("invert") is True),
            )
        )
    return out


def command_flags(cmd: Command[Any], summary: str) -> CommandFlags:
    """The command line of ``cmd`` (its help begins with ``summary``).

    Parameters
    ----------
    cmd
        The command.
    summary
        Its one-line summary (:data:`hpn.app.COMMANDS`).

    Returns
    -------
    CommandFlags

    Raises
    ------
    ValueError
        Two fields would have the same flag.
    """
    from hpn.app import limits
    from hpn.app.common import FabricFlags

    stated = limits.describe(cmd.name)
    files = tuple(FileFlag(f.name, f.help, f.argument) for f in cmd.files)
    fabric = tuple(table_flags(FABRIC, FabricFlags)) if FABRIC in cmd.flags else ()
    seen = {"--config", "--json", *(f.flag for f in fabric)}
    seen |= {"--out", "--plot"} if cmd.stored else set()
    seen |= {f"--{f.name}" for f in files if not f.argument}
    fields = []
    for table in cmd.flags:
        if table == FABRIC:
            continue
        for flag in table_flags(table, cmd.config.model_fields[table].annotation):
            if flag.flag in seen:
                raise ValueError(f"{cmd.name}: flag {flag.flag} defined twice")
            seen.add(flag.flag)
            fields.append(flag)
    return CommandFlags(
        name=cmd.name,
        help=f"{summary}\n\n{stated}" if stated else summary,
        files=files,
        fabric=fabric,
        fields=tuple(fields),
        config=bool(fabric) or bool(cmd.config.model_fields),
        stored=cmd.stored,
        large=limits.overridable(cmd.name),
    )


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _given(value: Any) -> bool:
    return not (value is None or value is False or value == [])


def config_data(cmd: Command[Any], flags: CommandFlags, values: dict[str, Any]) -> dict[str, Any]:
    """The config document the command line describes (before validation).

    Parameters
    ----------
    cmd
        The command.
    flags
        Its command line.
    values
        ``key -> value`` of every flag and file (None, False or empty: not given), and
        ``config``: the ``--config`` file (None: none).

    Returns
    -------
    dict
        The config tables: the ``--config`` file, then the files, then the flags.
    """
    from hpn.app.common import FabricFlags
    from hpn.config import load_toml, user_input

    data: dict[str, Any] = {}
    file = values.get("config")
    if file is not None:
        data = load_toml(file)
        tables = any(isinstance(v, dict) for v in data.values())  # [fabirc] is no fabric field
        if flags.fabric and not tables and not set(data) & set(cmd.config.model_fields):
            data = {FABRIC: data}  # a file of fabric fields only
    for f in cmd.files:
        path = values.get(f"file{SEP}{f.name}")
        if path is not None:
            with user_input():  # a file's sizes and bandwidths need units too
                data = _merge(data, f.load(path))
    if flags.fabric:
        given = {f.key[len(FABRIC + SEP) :]: values.get(f.key) for f in flags.fabric}
        spec = FabricFlags(**{k: v for k, v in given.items() if v is not None})
        data[FABRIC] = spec.table(data.get(FABRIC))
    for flag in flags.fields:
        value = values.get(flag.key)
        if not _given(value):
            continue
        table, _, name = flag.key.partition(SEP)
        if flag.invert:
            value = False  # --no-x
        data.setdefault(table, {})[name] = list(value) if isinstance(value, tuple) else value
    return data


def given_flags(flags: CommandFlags, values: dict[str, Any]) -> dict[str, str]:
    """``{"traffic.size": "--size"}`` for the table flags given (fabric ones name a field)."""
    return {f.key.replace(SEP, ".", 1): f.flag for f in flags.fields if _given(values.get(f.key))}


def required_flag(flags: CommandFlags, cmd: Command[Any], field: str) -> str | None:
    """The flag of a missing required config field (``export`` or ``select.dst``), if any."""
    table, _, name = field.partition(".")
    if table not in cmd.flags or table == FABRIC:
        return None
    model = cmd.config.model_fields[table].annotation
    names = [name] if name else [n for n, f in model.model_fields.items() if f.is_required()]
    for f in flags.fields:
        if f.key.partition(SEP)[0] == table and f.key.partition(SEP)[2] in names[:1]:
            return f.flag
    return None
