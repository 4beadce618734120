"""Per-fabric memo for derived routing tables (address plans, port ranks).

A fabric is immutable, so what a policy derives from it once holds for every later
``route`` call; entries go away with the fabric (weak keys, no id reuse).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def per_fabric(fn: Callable[..., T]) -> Callable[..., T]:
    """Memoize ``fn(fabric)`` for as long as ``fabric`` lives.

    Parameters
    ----------
    fn
        A function of a fabric alone.

    Returns
    -------
    Callable
        The memoized function.
    """
    memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @functools.wraps(fn)
    def wrapper(fabric) -> T:
        try:
            return memo[fabric]
        except KeyError:
            memo[fabric] = value = fn(fabric)
            return value

    return wrapper
