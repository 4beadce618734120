"""Config plumbing shared by every layer: unit-typed pydantic fields, TOML in and out,
and one-line messages for validation errors."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import tomli_w
from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer, ValidationError

from hpn.errors import InputError
from hpn.units import (
    format_bandwidth,
    format_duration,
    format_size,
    parse_bandwidth,
    parse_duration,
    parse_size,
)

if TYPE_CHECKING:  # a unit field takes text ("400G") as well as a number; float at run time
    Bandwidth = Any
    Size = Any
    Duration = Any
else:
    Bandwidth = Annotated[
        float,
        BeforeValidator(parse_bandwidth),
        PlainSerializer(format_bandwidth, return_type=str, when_used="json"),
    ]
    """bit/s; accepts ``400G``, ``200Gbps``, ``51.2T``."""

    Size = Annotated[
        float,
        BeforeValidator(parse_size),
        PlainSerializer(format_size, return_type=str, when_used="json"),
    ]
    """bytes; accepts ``4GB``, ``4GiB``, ``2MB``."""

    Duration = Annotated[
        float,
        BeforeValidator(parse_duration),
        PlainSerializer(format_duration, return_type=str, when_used="json"),
    ]
    """seconds; accepts ``10us``, ``2ms``, ``5min``."""


class Model(BaseModel):
    """Base for config models: unknown fields are errors; defaults and assignments validated."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, validate_default=True, defer_build=True
    )


def one_line(err: ValidationError, prefix: str = "") -> InputError:
    """The first validation error as an InputError naming the field and what is allowed."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__")
    field = ".".join(p for p in (prefix, loc) if p)
    msg = first.get("msg", "invalid value")
    ctx = first.get("ctx") or {}
    if "error" in ctx and isinstance(ctx["error"], InputError):
        inner = ctx["error"]
        msg = inner.message
        head = loc.split(".")[0] if loc else ""
        if inner.field and (not loc or inner.field.split(".")[0] == head):
            field = ".".join(p for p in (prefix, inner.field) if p)  # it names the field already
    msg = msg.removeprefix("Value error, ")
    value = first.get("input")
    if isinstance(value, str | int | float | bool) and repr(value) not in msg:
        msg = f"{msg} (got {value!r})"
    return InputError(field or "config", msg)


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file; a missing or malformed file is an InputError naming the line."""
    p = Path(path)
    if p.is_dir():
        raise InputError(str(path), "is a folder, not a file")
    if not p.is_file():
        raise InputError(str(path), "no such file")
    try:
        return tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise InputError(str(path), f"malformed TOML: {e}") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "not a UTF-8 text file") from None


def dump_toml(data: dict[str, Any]) -> str:
    """TOML text of a plain dict (None values dropped, as TOML has no null)."""

    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if v is not None}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        return x

    return tomli_w.dumps(clean(data))
