"""Compiled kernels (numba, the ``fast`` extra) shared by routing and the engine.

Kernels are compiled on first use and cached on disk beside their source, so a process pays
compilation once per checkout. numba registers a freshly compiled overload *before* it
writes it to the disk cache; when that write fails with ``RuntimeError: no compiled object
yet`` (seen once when two test processes compiled the same kernels at the same moment), the
kernel is nevertheless compiled and usable in this process. `Kernel` calls it again instead
of failing the run; any other error is raised as it is.

Compiling takes about a minute of CPU (routing's kernels most of it), paid by the first run
after a checkout or an upgrade; on a terminal, `Kernel` says so on stderr, once per process.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

CACHE_RACE = "no compiled object yet"
RETRIES = 8  # a kernel's callees may each hit it once while the kernel compiles
NOTICE = "compiling hpn's numba kernels (once after a checkout or upgrade; about a minute)"
_listening = False


def _announce_compiles() -> None:
    """Print `NOTICE` once on a terminal's stderr when numba compiles (a disk-cache miss)."""
    global _listening
    if _listening:
        return
    _listening = True
    from numba.core import event

    class _Notice(event.Listener):
        said = False

        def on_start(self, ev: Any) -> None:
            if not self.said and sys.stderr.isatty():
                self.said = True
                print(NOTICE, file=sys.stderr, flush=True)

        def on_end(self, ev: Any) -> None:
            pass

    event.register("numba:compile", _Notice())


class Kernel:
    """A compiled function that survives numba's failed cache writes on its first calls.

    Parameters
    ----------
    fn
        The numba dispatcher (or any callable).

    Examples
    --------
    >>> calls = []
    >>> def flaky(x):
    ...     calls.append(x)
    ...     if len(calls) == 1:
    ...         raise RuntimeError("no compiled object yet for <Library 'k'>")
    ...     return 2 * x
    >>> Kernel(flaky)(21), len(calls)
    (42, 2)
    """

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        if hasattr(fn, "py_func"):  # a numba dispatcher
            _announce_compiles()

    def __call__(self, *args: Any) -> Any:
        for _ in range(RETRIES):
            try:
                return self.fn(*args)
            except RuntimeError as e:
                if CACHE_RACE not in str(e):
                    raise
        return self.fn(*args)


def compile_in(
    namespace: dict[str, Any],
    helpers: tuple[str, ...] = (),
    kernels: dict[str, str] | None = None,
    **options: Any,
) -> dict[str, Kernel]:
    """Compile a module's numba functions on first use (``cache=True, nogil=True``).

    Parameters
    ----------
    namespace
        The module's globals: each of ``helpers`` is replaced there by its compiled
        version, in order (a kernel's callees first, so the kernel calls compiled code).
    helpers
        Names of the functions the kernels call.
    kernels
        ``{kernel name: function name}`` of the entry points.
    **options
        More numba options (``_nrt=False``: no reference counting, for helpers that
        allocate nothing).

    Returns
    -------
    dict
        The kernels by name, each wrapped in `Kernel`.
    """
    import numba

    njit: Any = numba.njit  # (``_nrt`` is not in numba's type stubs)
    jit = njit(cache=True, nogil=True, **options)
    for name in helpers:
        namespace[name] = jit(namespace[name])
    return {name: Kernel(jit(namespace[fn])) for name, fn in (kernels or {}).items()}
