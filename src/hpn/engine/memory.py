"""Giving freed memory back to the operating system between the engine's phases.

Building a DAG, routing it and setting up the simulator free hundreds of MB of temporaries,
many of them below glibc's mmap threshold (which grows up to 32 MiB as large blocks are
freed), so they live in the heap, and a freed block in the middle of the heap stays in the
process's resident set until ``malloc_trim`` returns its pages. On the 8-pod training example
that was ~250-390 MiB after each phase. Elsewhere (no glibc) :func:`trim` does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache

LARGE = 1 << 20  # runs of fewer flows or tasks free too little to be worth a trim


@cache
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None


def trim(size: int = LARGE) -> bool:
    """Return the heap's free pages to the OS (glibc's ``malloc_trim(0)``) when ``size``
    (the flows or tasks of the phase that just freed its temporaries) is at least
    :data:`LARGE`; whether pages were returned.

    Parameters
    ----------
    size
        Flows or tasks of the phase.

    Returns
    -------
    bool
        Whether ``malloc_trim`` ran and returned memory.

    Examples
    --------
    >>> trim(0)
    False
    """
    fn = _malloc_trim() if size >= LARGE else None
    return bool(fn(0)) if fn is not None else False
