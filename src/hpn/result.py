"""The typed result of a command: a dataclass with its JSON form and its key figures.

A result class derives :class:`Result` and declares its fields in JSON key order. It lives
beside the domain code that computes it (``hpn.pool.result.PoolResult``) or in the command's
app module; the CLI prints its key figures (:meth:`Result.rows`), the store writes its JSON
(:meth:`Result.to_json`). This module imports nothing heavy, so any layer can define one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, TypeVar

R = TypeVar("R", bound="Result")

OMIT = {"omit_if_none": True}
"""Field metadata: leave the key out of the JSON form when the value is None."""

DETAIL = {"detail": True}
"""Field metadata: left out of the JSON form unless asked for (``to_json(detail=True)``)."""


def json_key(key: str, **metadata: Any) -> dict[str, Any]:
    """Field metadata: the field's key in the JSON form is ``key``.

    For a JSON key that would shadow a :class:`Result` method as a field name (``rows``).

    Parameters
    ----------
    key
        The JSON key.
    **metadata
        Further metadata (``omit_if_none=True``).

    Returns
    -------
    dict
        Pass it as ``dataclasses.field(metadata=...)``.
    """
    return {"key": key, **metadata}


class JsonResult(Protocol):
    """What the store needs of a result: its JSON form."""

    def to_json(self, detail: bool = False) -> dict[str, Any]: ...


class RunOutcome(Protocol):
    """What the store records of a finished command (:class:`hpn.app.base.Outcome` is one):
    the typed result, its tables, the resolved config, the wall time.

    A protocol in the base layer, so the store (below the application layer) can unpack an
    outcome in one place (:func:`hpn.store.record.record_outcome`) without importing ``app``.
    """

    @property
    def result(self) -> JsonResult: ...

    @property
    def tables(self) -> dict[str, Any]: ...

    @property
    def config(self) -> dict[str, Any] | None: ...

    @property
    def wall_s(self) -> float | None: ...


class Result:
    """Base of typed results (subclasses are dataclasses, fields in JSON order)."""

    title: ClassVar[str] = ""

    def to_json(self, detail: bool = False) -> dict[str, Any]:
        """The JSON object of the result (``result.json``, ``--json``).

        Parameters
        ----------
        detail
            Include the fields marked :data:`DETAIL`.

        Returns
        -------
        dict
            Keys in field order; nested results as their JSON objects.
        """
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is None and f.metadata.get("omit_if_none"):
                continue
            if f.metadata.get("detail") and not detail:
                continue
            out[f.metadata.get("key", f.name)] = v.to_json() if isinstance(v, Result) else v
        return out

    def rows(self) -> list[tuple[str, Any]]:
        """Key figures for a terminal: ``(label, value)`` rows."""
        return list(self.to_json().items())

    def heading(self) -> str:
        """The heading of the key-figure table (default: :attr:`title`)."""
        return self.title

    def sections(self) -> list[tuple[str, list[tuple[str, Any]]]]:
        """Key-figure tables to print: ``(heading, rows)`` each (default: one)."""
        return [(self.heading(), self.rows())]

    def lines(self) -> list[str] | None:
        """Plain-text lines to print instead of the tables (None: the tables)."""
        return None

    def footer(self) -> str | None:
        """A line printed after the tables."""
        return None

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """Build from a domain function's dict; a key the class does not declare is an error.

        Parameters
        ----------
        data
            JSON keys -> values.

        Returns
        -------
        Result
            An instance of the class.

        Raises
        ------
        TypeError
            On a key that is not a field's JSON key.
        """
        names = {
            f.metadata.get("key", f.name): f.name
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        }
        extra = [k for k in data if k not in names]
        if extra:
            raise TypeError(f"{cls.__qualname__}: undeclared result field(s) {extra}")
        return cls(**{names[k]: v for k, v in data.items()})
