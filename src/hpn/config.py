"""Config plumbing shared by every layer: unit-typed pydantic fields, TOML in and out,
and one-line messages for validation errors."""

from __future__ import annotations

import math
import os
import types
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    PlainSerializer,
    ValidationError,
    WrapValidator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from hpn.errors import InputError
from hpn.units import (
    FORMATS,
    format_bandwidth,
    format_duration,
    format_size,
    parse_bandwidth,
    parse_duration,
    parse_size,
    unit_kind,
)

_USER: ContextVar[bool] = ContextVar("hpn_user_input", default=False)


@contextmanager
def user_input() -> Iterator[None]:
    """While active, size and bandwidth fields need a unit (a config a user wrote); Python
    callers outside it pass SI numbers (``build("fat-tree", speed=100e9)``)."""
    token = _USER.set(True)
    try:
        yield
    finally:
        _USER.reset(token)


def _with_unit(parse: Any, kind: str, example: str) -> Any:
    """``parse`` for config text: in :func:`user_input`, a bare number other than 0 is refused
    (``speed = 100``: 100 what?); the unit makes the value unambiguous."""

    def check(value: object) -> float:
        x = parse(value)
        if not _USER.get():
            return x
        bare = isinstance(value, int | float) and not isinstance(value, bool)
        if isinstance(value, str):
            bare = value.strip().lstrip("+-").replace(".", "", 1).replace("e", "", 1).isdigit()
        if bare and x != 0:
            raise InputError("", f"give a unit: a {kind} such as {example}, got {value!r}")
        return x

    check.__name__ = parse.__name__  # the reference names the unit by it
    return check


def _bounds(handler: Any, x: float, kind: str) -> float:
    """The field's bounds (``Field(le=3600)``, applied to the float schema ``handler``
    wraps) checked on ``x``; an error is of the value as given (``'1e9h'``), not of its SI
    number, and names its ``kind`` (``duration``: :func:`one_line` states the bound so)."""
    try:
        return float(handler(x))
    except ValidationError as e:
        first = e.errors()[0]
        ctx = {**(first.get("ctx") or {}), "kind": kind}
        raise PydanticCustomError(first["type"], first["msg"], ctx) from None


def _reads(parse: Any, kind: str) -> WrapValidator:
    """A unit field's validator: ``parse`` the text, then the field's bounds (:func:`_bounds`).
    A wrap, not a plain validator: pydantic applies a field's constraints to the type's float
    schema first, which a plain validator would replace (and the bounds be dropped)."""

    def read(value: object, handler: Any) -> float:
        return _bounds(handler, parse(value), kind)

    read.__name__ = parse.__name__  # the reference names the unit by it
    return WrapValidator(read)


if TYPE_CHECKING:  # a unit field takes text ("400G"); float at run time
    Bandwidth = Any
    Size = Any
    Duration = Any
else:
    Bandwidth = Annotated[
        float,
        _reads(_with_unit(parse_bandwidth, "bandwidth", "100G or 400Gbps"), "bandwidth"),
        PlainSerializer(format_bandwidth, return_type=str, when_used="json"),
    ]
    """bit/s; accepts ``400G``, ``200Gbps``, ``51.2T``."""

    Size = Annotated[
        float,
        _reads(_with_unit(parse_size, "size", "2MB or 1GiB"), "size"),
        PlainSerializer(format_size, return_type=str, when_used="json"),
    ]
    """bytes; accepts ``4GB``, ``4GiB``, ``2MB``."""

    Duration = Annotated[
        float,
        _reads(parse_duration, "duration"),
        PlainSerializer(format_duration, return_type=str, when_used="json"),
    ]
    """seconds; accepts ``10us``, ``2ms``, ``5min``."""


class Quantity(float):
    """A unit field's value that keeps its text: the number in SI units (seconds, bytes,
    bit/s), and the text it was given as, which is its JSON form (a stored config reads as
    written: ``duration = "300s"``, not ``"5min"``)."""

    text: str

    def __new__(cls, value: float, text: str) -> Quantity:
        q = super().__new__(cls, value)
        q.text = text
        return q

    def __reduce__(self) -> tuple[Any, ...]:  # to worker processes as it is
        return (Quantity, (float(self), self.text))

    def __repr__(self) -> str:  # as written, as a config shows it
        return repr(self.text)


def _keeps_text(parse: Any, fmt: Any, kind: str) -> tuple[Any, Any]:
    """Validator (a wrap, as :func:`_reads`: the field's bounds apply) and JSON serializer
    of a :class:`Quantity` field read by ``parse``."""

    def read(value: object, handler: Any) -> Quantity:
        q = value if isinstance(value, Quantity) else None
        if q is None:
            x = parse(value)
            q = Quantity(x, value if isinstance(value, str) else fmt(x))
        _bounds(handler, float(q), kind)
        return q

    def text(value: float) -> str:
        return value.text if isinstance(value, Quantity) else fmt(value)

    read.__name__ = parse.__name__  # the reference names the unit by it
    return WrapValidator(read), PlainSerializer(text, return_type=str, when_used="json")


if TYPE_CHECKING:
    Seconds = Any
    Bytes = Any
    Rate = Any
else:
    Seconds = Annotated[float, *_keeps_text(parse_duration, format_duration, "duration")]
    """seconds, kept as written (``300s``, ``100ms``, ``30min``; a bare number is seconds)."""

    Bytes = Annotated[float, *_keeps_text(parse_size, format_size, "size")]
    """bytes, kept as written (``2MB``, ``256kB``, ``1GiB``)."""

    Rate = Annotated[float, *_keeps_text(parse_bandwidth, format_bandwidth, "bandwidth")]
    """bit/s, kept as written (``2Mbps``, ``100G``)."""


# --- fields that name a file: the CLI takes any path, the dashboard only those inside --data
_FILES: ContextVar[tuple[bool, Path | None]] = ContextVar("hpn_files", default=(False, None))


@contextmanager
def files_within(root: str | Path | None) -> Iterator[None]:
    """While active, a :data:`FilePath` field must resolve (symlinks resolved) inside ``root``;
    with ``root`` None, no config may name a file at all (the dashboard without ``--data``)."""
    token = _FILES.set((True, Path(root).resolve() if root is not None else None))
    try:
        yield
    finally:
        _FILES.reset(token)


def allowed_path(value: str) -> str:
    """``value`` as given (the CLI), or inside :func:`files_within`'s root: its resolved path
    (relative to the root); a ValueError, which never says whether the file exists, if not."""
    guarded, root = _FILES.get()
    if not guarded:
        return value
    if root is None:
        raise ValueError(
            "names a file on the server, which this dashboard does not read "
            "(start it with hpn dash --data DIR to allow files inside DIR)"
        )
    try:
        target = (root / value).resolve()
    except (OSError, RuntimeError, ValueError):
        raise ValueError("not a usable path inside the --data folder") from None
    if not target.is_relative_to(root):
        raise ValueError("must name a file inside the dashboard's --data folder")
    return str(target)


FilePath = Annotated[str, AfterValidator(allowed_path)]
"""A path to a file or folder the command reads or writes (see :func:`files_within`)."""


class _FieldError(InputError):
    """An error of one field of the model that raised it (:func:`one_line` prefixes its
    location)."""


def _strict(annotation: Any, value: Any) -> str | None:
    """Why ``value`` is not a strict value of an ``int`` or ``bool`` field (None: it is): a
    bool is no integer (``segments = true``), a float no integer (``gpus = 8.0``), and only
    ``true``/``false`` are bools."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            return None
        annotation = args[0]
    if annotation is int and isinstance(value, bool | float):
        return f"must be a whole number, got {value!r}"
    if annotation is int and isinstance(value, int) and not -(2**63) <= value < 2**63:
        return "must be a whole number of at most 19 digits"
    if annotation is bool and value is not None and not isinstance(value, bool):
        return f"must be true or false, got {value!r}"
    if annotation is float and isinstance(value, bool):
        return f"must be a number, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    return None


def positive(value: float | None) -> float | None:
    """A shared field validator: the value must be > 0 (``field_validator(...)(positive)``);
    None (an optional field left unset) passes."""
    if value is not None and value <= 0:
        raise ValueError("must be > 0")
    return value


class Model(BaseModel):
    """Base for config models: unknown fields are errors; defaults and assignments validated;
    ints and bools strict (:func:`_strict`); inf and nan refused in every float field."""

    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        validate_default=True,
        defer_build=True,
        allow_inf_nan=False,
    )

    @model_validator(mode="before")
    @classmethod
    def _strict_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, info in cls.model_fields.items():
                key = info.alias or name
                if key in data:
                    why = _strict(info.annotation, data[key])
                    if why is not None:
                        raise _FieldError(key, why)
        return data


BOUND_OPS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
"""A field bound's keyword and how a message or help states it."""


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
        if isinstance(inner, _FieldError):
            field = ".".join(p for p in (prefix, loc, inner.field) if p)
        elif inner.field and (not loc or inner.field.split(".")[0] == head):
            field = ".".join(p for p in (prefix, inner.field) if p)  # it names the field already
    msg = msg.removeprefix("Value error, ")
    value = first.get("input")
    bound = next((b for b in BOUND_OPS if b in ctx), None)
    if bound and isinstance(value, str):  # a unit field's text: the bound in its unit
        kind, limit = ctx.get("kind") or unit_kind(value), ctx[bound]  # "<= 1h", not "3600"
        if kind or not limit:
            shown = FORMATS[kind](limit) if kind and limit else f"{limit:g}"
            msg = f"must be {BOUND_OPS[bound]} {shown}"
    if isinstance(value, str | int | float | bool) and repr(value) not in msg:
        msg = f"{msg} (got {value!r})"
    return InputError(field or "config", msg)


MAX_CONFIG_BYTES = 16 * 2**20


def read_input(path: str | Path, max_bytes: int = MAX_CONFIG_BYTES) -> str:
    """The text of an input file: a regular file, a pipe (``--config <(...)``) or a device,
    at most ``max_bytes``; a UTF-8 byte-order mark dropped. InputError naming the file when
    it is missing, a folder, too large, not UTF-8 or unreadable (the OS's reason)."""
    import stat

    from hpn.errors import os_error

    name = str(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(name, "no such file") from None
    except OSError as e:
        raise os_error(e, path) from None
    if stat.S_ISDIR(mode):
        raise InputError(name, "is a folder, not a file")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise os_error(e, path) from None
    if len(data) > max_bytes:
        raise InputError(name, f"is larger than {max_bytes:,} bytes, the limit for this input")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(name, "not a UTF-8 text file") from None


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file (:func:`read_input`); a malformed file is an InputError naming the
    line; CRLF line ends and a byte-order mark are fine."""
    import tomllib  # (its patterns compile at import: only a run that reads a file pays)

    text = read_input(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(str(path), f"malformed TOML: {e}") from None
    except RecursionError:
        raise InputError(str(path), "nested too deeply") from None


def dump_toml(data: dict[str, Any]) -> str:
    """TOML text of a plain dict (None values dropped, as TOML has no null)."""
    import tomli_w

    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if v is not None}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        return x

    return tomli_w.dumps(clean(data))
