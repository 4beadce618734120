"""One registry type for every family of named things (presets, routers, patterns, policies, ...).

Entries are registered by decorator (``@REG.register("name")``), by a call
(``REG.add("name", obj)``) or lazily by import path (``REG.lazy("name", "pkg.mod:attr")``, imported
on first lookup, so listing names stays cheap). An unknown name is one :class:`InputError` worded
the same everywhere::

    unknown policy 'x'; choose from: aegaeon, serverless, muxserve, dedicated

Examples
--------
>>> COLORS: Registry[str] = Registry("color")
>>> COLORS.add("red", "#f00", summary="warm")
'#f00'
>>> COLORS["red"]
'#f00'
>>> COLORS.get("blue")
Traceback (most recent call last):
...
hpn.errors.InputError: color: unknown color 'blue'; choose from: red
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar, overload

from hpn.errors import InputError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one family, each with a one-line summary.

    Parameters
    ----------
    kind
        What an entry is, for messages: ``"policy"``, ``"preset"``.
    field
        The field an unknown name is reported against (default: ``kind``).
    """

    def __init__(self, kind: str, field: str | None = None) -> None:
        self.kind = kind
        self.field = field or kind
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        self._summaries: dict[str, str] = {}

    # -- registration ---------------------------------------------------------------------
    def add(self, name: str, obj: T, summary: str = "") -> T:
        """Register ``obj`` under ``name`` (a later registration replaces an earlier one)."""
        self._lazy.pop(name, None)
        self._items[name] = obj
        self._summaries[name] = summary or _first_line(obj)
        return obj

    def lazy(self, name: str, target: str, summary: str = "") -> None:
        """Register ``"module:attr"``, imported when ``name`` is first looked up."""
        self._items.pop(name, None)
        self._lazy[name] = target
        self._summaries[name] = summary

    @overload
    def register(self, name: str, obj: None = None, summary: str = "") -> Callable[[T], T]: ...
    @overload
    def register(self, name: str, obj: T, summary: str = "") -> T: ...
    def register(self, name: str, obj: T | None = None, summary: str = "") -> Any:
        """``@REG.register("name")`` as a decorator, or ``REG.register("name", obj)``."""
        if obj is not None:
            return self.add(name, obj, summary)

        def deco(o: T) -> T:
            return self.add(name, o, summary)

        return deco

    # -- lookup ----------------------------------------------------------------------------
    def get(self, name: str, field: str | None = None) -> T:
        """The entry ``name``; an unknown name is an InputError listing the known ones."""
        if not isinstance(name, str):
            raise InputError(field or self.field, f"expected a {self.kind} name, got {name!r}")
        if name in self._items:
            return self._items[name]
        if name in self._lazy:
            module, _, attr = self._lazy.pop(name).partition(":")
            obj = getattr(importlib.import_module(module), attr)
            self._items[name] = obj
            if not self._summaries.get(name):
                self._summaries[name] = _first_line(obj)
            return obj
        raise self.unknown(name, field)

    def unknown(self, name: object, field: str | None = None) -> InputError:
        """The error for an unknown ``name`` (for callers that validate before looking up)."""
        return InputError(
            field or self.field, f"unknown {self.kind} {name!r}; choose from: {', '.join(self)}"
        )

    def check(self, name: str, field: str | None = None) -> str:
        """``name`` if registered, else the InputError (without importing lazy entries)."""
        if name not in self:
            raise self.unknown(name, field)
        return name

    def summary(self, name: str) -> str:
        return self._summaries.get(name, "")

    def names(self) -> list[str]:
        return list(self)

    def items(self) -> list[tuple[str, T]]:
        return [(n, self.get(n)) for n in self]

    def values(self) -> list[T]:
        return [self.get(n) for n in self]

    def help(self, sep: str = "; ") -> str:
        """``name (summary); ...`` for CLI help and reference docs."""
        return sep.join(f"{n} ({s})" if (s := self._summaries.get(n)) else n for n in self)

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self._summaries)

    def __len__(self) -> int:
        return len(self._summaries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self)})"


def _first_line(obj: object) -> str:
    """An entry's ``summary`` attribute, else its docstring's first paragraph on one line."""
    s = getattr(obj, "summary", None)
    if isinstance(s, str):
        return s
    if isinstance(obj, (str, tuple, list, dict)):  # data, not a documented object
        return ""
    doc = (getattr(obj, "__doc__", None) or "").strip().split("\n\n")[0]
    return " ".join(doc.split()).rstrip(".")
