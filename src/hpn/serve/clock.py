"""The scheduler's side of the engine: a wall clock, timers, and the queue that worker
threads post completions to.

`WallClock` is the part of `EngineBackend` that runs the pool's `Backend` contract on
real time: every policy callback, timer and completion runs on the one thread in `loop`,
one at a time; other threads hand work to it with `post`. A failure on a worker thread is
raised there as `EngineError`.
"""

from __future__ import annotations

import heapq
import itertools
import math
import queue
import threading
import time
from collections.abc import Callable

from hpn.pool.backend import Backend, Cluster, MetricsSink


class EngineError(RuntimeError):
    """A worker thread failed; raised on the scheduler thread."""


class WallClock(Backend):
    """Timers on `time.perf_counter` (from `reset_clock`) and the scheduler loop."""

    def __init__(self, cluster: Cluster, sink: MetricsSink):
        super().__init__(cluster, sink)
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._heap: list = []
        self._seq = itertools.count()
        self._t0 = time.perf_counter()
        self._pending = 0  # operations started and not yet completed
        self._stop = threading.Event()
        self._error: tuple[BaseException, str] | None = None

    def now(self) -> float:
        return time.perf_counter() - self._t0

    def reset_clock(self) -> None:
        self._t0 = time.perf_counter()

    def call_at(self, t: float, fn: Callable, *args) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), fn, args))

    def post(self, fn: Callable, *args) -> None:
        """Run `fn(*args)` on the scheduler thread (thread-safe)."""
        self._events.put((fn, args))

    def _worker_error(self, e: BaseException, tb: str) -> None:
        self._error = (e, tb)
        self._events.put((self._raise, ()))

    def _raise(self) -> None:
        if self._error is None:
            return
        e, tb = self._error
        raise EngineError(f"a worker failed: {e!r}\n{tb}")

    def loop(self, until: float = math.inf, idle_exit: bool = False) -> None:
        """Run callbacks until `until`, `stop()`, or (with `idle_exit`) no work is left."""
        heap = self._heap
        while not self._stop.is_set():
            now = self.now()
            while heap and heap[0][0] <= now:
                _, _, fn, args = heapq.heappop(heap)
                fn(*args)
            done = now >= until or (idle_exit and self._idle())
            if done and self._events.empty():
                return
            nxt = min(heap[0][0] if heap else math.inf, until)
            try:
                fn, args = self._events.get(timeout=min(max(0.0, nxt - self.now()), 0.05))
            except queue.Empty:
                continue
            fn(*args)

    def _idle(self) -> bool:
        """Whether no work is left (`loop` with `idle_exit` returns then)."""
        return self._pending == 0

    def stop(self) -> None:
        self._stop.set()
        self._events.put((lambda: None, ()))

    def _done(self, fn: Callable, *args) -> None:
        self._pending -= 1
        fn(*args)
