"""The first-run notice of :mod:`hpn.jit`: numba's compile events as one stderr line per
kernel package, on a terminal only, ``compiling kernels once (PACKAGE), about N s``, N from the
last time that package compiled here (``timings.json`` in the kernel cache), else
:data:`EXPECTED_S`; then an elapsed-time counter once it lasts more than
:data:`PROGRESS_AFTER_S`, cleared when the compile ends."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

NOTICE = "compiling kernels once"
EXPECTED_S = {"hpn.routing": 60.0, "hpn.engine": 14.0}
"""Compile time of each kernel package on one core of a 2-core machine (measured cold, before
the kernels were split over several modules), for the notice before this machine has timed one
itself; other packages: :data:`DEFAULT_S`. The notice and its timings go by package
(:func:`kernel_package`): a package's kernels compile together."""
DEFAULT_S = 20.0
PROGRESS_AFTER_S = 3.0  # a compile longer than this shows its elapsed time
_listening = False
_cache_root: Callable[[], str] = os.getcwd  # the kernel cache (set by announce_compiles)


def _timings_path() -> str:
    return os.path.join(_cache_root(), "timings.json")


def _timings() -> dict[str, float]:
    try:
        with open(_timings_path(), encoding="utf-8") as fh:
            data = json.load(fh)
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _record_timing(module: str, seconds: float) -> None:
    data = {**_timings(), module: round(seconds, 1)}
    tmp = f"{_timings_path()}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, _timings_path())
    except OSError:
        pass  # only the next estimate is affected


def kernel_package(module: str) -> str:
    """The unit a compile notice names: ``hpn.<package>`` of an hpn module, else the module.

    >>> kernel_package("hpn.routing.kernel_walk"), kernel_package("k3")
    ('hpn.routing', 'k3')
    """
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "hpn" and len(parts) > 2 else module


def expected_s(module: str) -> float:
    """The compile time to announce for kernel module ``module``: its last measured one, else
    :data:`EXPECTED_S` (else :data:`DEFAULT_S`)."""
    return _timings().get(module, EXPECTED_S.get(module, DEFAULT_S))


class _Notice:
    """numba's compile events as one notice line per kernel module, then a counter."""

    def __init__(self) -> None:
        self.depth = 0
        self.module = ""
        self.started = 0.0
        self.spent: dict[str, float] = {}  # compile seconds of each module in this process
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self, module: str) -> None:
        self.depth += 1
        if self.depth > 1:  # a callee compiled inside a kernel's compile
            return
        self.module, self.started = module, time.perf_counter()
        if not sys.stderr.isatty():
            return
        if module not in self.spent:
            line = f"{NOTICE} ({module}), about {expected_s(module):.0f} s"
            print(line, file=sys.stderr, flush=True)
        self.stop.clear()
        self.thread = threading.Thread(target=self._tick, daemon=True, name="hpn-jit")
        self.thread.start()

    def end(self) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth or not self.module:
            return
        spent = self.spent.get(self.module, 0.0) + time.perf_counter() - self.started
        self.spent[self.module] = spent
        _record_timing(self.module, spent)  # the next notice's estimate
        if self.thread is not None:
            self.stop.set()
            self.thread.join()
            self.thread = None

    def _tick(self) -> None:
        shown = False
        while not self.stop.wait(1.0):
            elapsed = time.perf_counter() - self.started + self.spent.get(self.module, 0.0)
            if elapsed >= PROGRESS_AFTER_S:
                print(f"\r  compiling: {elapsed:.0f} s", end="", file=sys.stderr, flush=True)
                shown = True
        if shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)  # the counter's line cleared


_NOTICE = _Notice()


def announce_compiles(cache_root: Callable[[], str]) -> None:
    """Listen to numba's compile events (once): the notice of the module docstring, its
    timings kept in the folder ``cache_root()`` names (:func:`hpn.jit.cache_root`)."""
    global _listening, _cache_root
    _cache_root = cache_root
    if _listening:
        return
    _listening = True
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            dispatcher = (ev.data or {}).get("dispatcher")
            fn = getattr(dispatcher, "py_func", None)
            _NOTICE.start(kernel_package(getattr(fn, "__module__", "") or "numba"))

        def on_end(self, ev: Any) -> None:
            _NOTICE.end()

    event.register("numba:compile", _Listener())
