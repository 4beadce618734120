"""A command's start-up and shutdown without the cyclic collector's passes over what it imports.

Start-up imports modules and builds classes and config models: some 10^5 objects that live
until the process ends and hold no garbage worth collecting, yet the collector looks at each of
them again in every pass over the generation it sits in (30 ms of CPU before the 1,024-host
fat-tree permutation's first result, issue 26). :func:`held` turns the collector off for the
start-up; :func:`over`, called where the command's own work begins, moves every object alive
by then into the permanent generation (:func:`gc.freeze`, as forking servers keep it off their
start-up objects) and turns the collector back on, so the work is collected as before and the
start-up objects are never scanned.

Python's shutdown runs the collector over all objects still alive, several times: after an
8-pod run (numba, pydantic and the results: ~140 k objects) that was 0.3-0.4 s of CPU spent
before the memory is handed back to the system anyway. :func:`gc.freeze`, run by `atexit`
(after the handlers registered later, before modules are torn down), puts them out of its
reach. They are still freed by reference counting, and atexit handlers and `weakref.finalize`
callbacks still run; only garbage in reference cycles at exit is not finalized, which Python
does not promise either. :func:`held` registers it, once per process.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Once on, the collector looks at the young generation every YOUNG_OBJECTS new container objects
# (Python's default: 700) and at everything after enough of those passes. A computing command
# creates some 10^5 long-lived objects while it imports (numba, scipy, pydantic): at 700 an
# 8-pod run made ~300 young passes and 2 full ones, 0.19 s of CPU; at 50,000 it makes ~45 and no
# full one, 0.09 s, with at most some MB of cyclic garbage waiting.
YOUNG_OBJECTS = 50_000
_held = False
_exit_freeze = False


@contextmanager
def held(young: int = YOUNG_OBJECTS) -> Iterator[None]:
    """The collector off until :func:`over`, then on, looking at the young generation every
    ``young`` new objects; on leaving, thresholds and state as they were, frozen objects thawed
    (the CLI also runs in-process, in tests)."""
    global _held, _exit_freeze
    if not _exit_freeze:
        _exit_freeze = True
        atexit.register(gc.freeze)
    enabled, thresholds, frozen = gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()
    gc.set_threshold(young, *thresholds[1:])
    if enabled:
        gc.disable()
        _held = True
    try:
        yield
    finally:
        _held = False
        gc.set_threshold(*thresholds)
        if not frozen:
            gc.unfreeze()
        if enabled:
            gc.enable()


def over() -> None:
    """The start-up is over: what is alive now lives on (frozen), the collector is back on."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()


__all__ = ["YOUNG_OBJECTS", "held", "over"]
