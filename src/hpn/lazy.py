"""Lazy imports, so that importing a package (and ``hpn --help``) stays cheap.

:func:`lazy_getattr`: a package names where each public name lives, and the module is imported
on first use. :func:`import_deferring`: import a (third-party) module whose top-level imports
include classes it rarely uses, those imports deferred until a class is used.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, home: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for ``package`` that imports ``home[name]`` on first use.

    Parameters
    ----------
    package
        The package's ``__name__`` (for the error message).
    home
        Public name -> the module that defines it.

    Returns
    -------
    callable
        Assign it to the package's ``__getattr__``.

    Examples
    --------
    >>> getattr_ = lazy_getattr("pkg", {"sqrt": "math"})
    >>> getattr_("sqrt")(4.0)
    2.0
    """

    def __getattr__(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home[name]), name)

    return __getattr__


def _deferred(module: str, name: str) -> type:
    """A stand-in for the class ``module.name`` that imports the real one when first used."""

    def real() -> Any:
        return getattr(importlib.import_module(module), name)

    class Meta(type):
        def __getattr__(cls, attr: str) -> Any:  # Traceback.from_exception(...)
            return getattr(real(), attr)

        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real())

    class Deferred(metaclass=Meta):
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return real()(*args, **kwargs)

    Deferred.__name__ = Deferred.__qualname__ = name
    return Deferred


def import_deferring(target: str, classes: Mapping[str, str]) -> None:
    """Import module ``target`` with the modules in ``classes`` standing in for themselves.

    Parameters
    ----------
    target
        The module to import (nothing happens if it is imported already).
    classes
        Module -> the one class ``target`` imports from it. While ``target`` is imported,
        each such module not imported yet is a stand-in whose class builds (and whose
        attributes and ``isinstance`` read) the real class, importing its module then.

    Notes
    -----
    The stand-ins are in :data:`sys.modules` only during that import, so a later ``import``
    of those modules gets the real ones. Should ``target`` need more of them (another
    version), it is imported again plainly.

    Examples
    --------
    >>> import_deferring("fractions", {"decimal": "Decimal"})
    >>> import decimal, fractions
    >>> fractions.Fraction(fractions.Decimal("0.5"))  # a real Decimal, whichever was imported
    Fraction(1, 2)
    >>> sys.modules["decimal"] is decimal
    True
    """
    if target in sys.modules:
        return
    standins = [m for m in classes if m not in sys.modules]
    for module in standins:
        stub = type(sys)(module)
        setattr(stub, classes[module], _deferred(module, classes[module]))
        sys.modules[module] = stub
    try:
        importlib.import_module(target)
    except ImportError:
        sys.modules.pop(target, None)
    finally:
        for module in standins:
            sys.modules.pop(module, None)
    importlib.import_module(target)
