"""Lazy imports, so that importing a package (and ``hpn --help``) stays cheap.

:func:`lazy_getattr`: a package names where each public name lives, and the module is imported
on first use. :func:`lazy_function`: a function whose module is imported on its first call.
"""

from __future__ import annotations

import importlib
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


def lazy_function(module: str, name: str) -> Callable[..., Any]:
    """A function that imports ``module`` on its first call and calls its ``name``.

    A registry entry can then name a function without importing it: only the variant a run
    uses pays for its module (a fat-tree run does not import the HPN and DCN+ builders).

    Examples
    --------
    >>> sqrt = lazy_function("math", "sqrt")
    >>> sqrt(9.0), sqrt.__qualname__
    (3.0, 'math.sqrt')
    """
    target: list[Callable[..., Any]] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not target:
            target.append(getattr(importlib.import_module(module), name))
        return target[0](*args, **kwargs)

    call.__name__, call.__qualname__, call.__module__ = name, f"{module}.{name}", module
    return call
