"""One registry type for every family of named things (presets, routers, patterns, policies, ...).

Entries are registered by decorator (``@REG.register("name")``), by a call
(``REG.add("name", obj)``) or lazily by import path (``REG.lazy("name", "pkg.mod:attr")``, imported
on first lookup, so listing names stays cheap). A registry made with ``group=`` also takes
plug-ins: every installed distribution's entry point of that group (``[project.entry-points.
"hpn.commands"]`` in its ``pyproject.toml``: ``"my cmd" = "pkg.mod:COMMAND"``) is a lazy entry,
found through :mod:`importlib.metadata` the first time the names are listed or a name is missing
(as networkx finds its backends). An unknown name is one :class:`InputError` worded the same
everywhere::

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
    group
        The entry-point group plug-ins register in (``"hpn.commands"``; None: none).
    """

    def __init__(self, kind: str, field: str | None = None, group: str | None = None) -> None:
        self.kind = kind
        self.field = field or kind
        self.group = group
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        self._summaries: dict[str, str] = {}
        self._found: set[str] = set()  # entry points seen (a later scan adds only new ones)
        self._scanned = group is None

    # -- plug-ins ---------------------------------------------------------------------------
    def discover(self) -> list[str]:
        """Register the entry points of ``group`` not seen yet (lazily); returns their names.

        A name already registered (a built-in) is not replaced by a plug-in.
        """
        self._scanned = True
        if self.group is None or not declared(self.group):
            return []
        from importlib.metadata import entry_points

        new = []
        for ep in entry_points(group=self.group):
            if ep.name in self._found or ep.name in self._summaries:
                continue
            self._found.add(ep.name)
            self._lazy[ep.name] = ep.value
            self._summaries[ep.name] = ""
            new.append(ep.name)
        return new

    def _all(self) -> None:
        if not self._scanned:
            self.discover()

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
        if name not in self._lazy and self.group is not None:
            self.discover()  # a plug-in installed since the last scan
        if name in self._lazy:
            target = self._lazy[name]
            module, _, attr = target.partition(":")
            try:
                obj = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as e:
                raise InputError(
                    field or self.field, f"{self.kind} {name!r}: cannot load {target}: {e}"
                ) from None
            del self._lazy[name]
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
        if name not in self and not (self.group and name in self.discover()):
            raise self.unknown(name, field)
        return name

    def summary(self, name: str) -> str:
        """The entry's one-line summary (a plug-in's once it has been loaded)."""
        return self._summaries.get(name, "")

    def names(self) -> list[str]:
        return list(self)

    def items(self) -> list[tuple[str, T]]:
        return [(n, self.get(n)) for n in self]

    def values(self) -> list[T]:
        return [self.get(n) for n in self]

    def help(self, sep: str = "; ") -> str:
        """``name (summary); ...`` for CLI help and reference docs."""
        self._all()
        return sep.join(f"{n} ({s})" if (s := self._summaries.get(n)) else n for n in self)

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        self._all()
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        self._all()
        return iter(list(self._summaries))

    def __len__(self) -> int:
        self._all()
        return len(self._summaries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self)})"


def declared(*groups: str) -> bool:
    """Whether any distribution on ``sys.path`` declares entry points of one of ``groups``: a
    look at the ``entry_points.txt`` files alone (each read once), so that a start-up with no
    plug-in installed does not import :mod:`importlib.metadata` (some 30 ms); when one does,
    that module finds them."""
    import os
    import sys

    needles = [f"[{group}]".encode() for group in groups]
    for folder in sys.path:
        try:
            names = [
                n for n in os.listdir(folder or ".") if n.endswith((".dist-info", ".egg-info"))
            ]
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(folder or ".", name, "entry_points.txt"), "rb") as fh:
                    text = fh.read()
            except OSError:
                continue
            if any(needle in text for needle in needles):
                return True
    return False


def _first_line(obj: object) -> str:
    """An entry's ``summary`` attribute, else its docstring's first paragraph on one line."""
    s = getattr(obj, "summary", None)
    if isinstance(s, str):
        return s
    if isinstance(obj, (str, tuple, list, dict)):  # data, not a documented object
        return ""
    doc = (getattr(obj, "__doc__", None) or "").strip().split("\n\n")[0]
    return " ".join(doc.split()).rstrip(".")
