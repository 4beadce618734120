"""One instance's threads: compute (prefill and decode), host-to-device and device-to-host.

Each thread runs its jobs one at a time, in order, like a CUDA stream: a model load queued
behind a pre-load waits for it, a KV swap-in waits for the copies before it. Jobs never
touch policy-visible state; they report back through `post` (run on the scheduler thread).
"""

from __future__ import annotations

import queue
import threading
import traceback
from collections.abc import Callable

from hpn.serve.device import DeviceSpec, Link
from hpn.serve.weights import DeviceModel, HostModel


class Lane:
    """A thread that runs submitted jobs in order."""

    def __init__(self, name: str, init: Callable[[], None] | None, on_error: Callable):
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._on_error = on_error
        self._init = init
        self._t = threading.Thread(target=self._run, name=name, daemon=True)
        self._t.start()

    def submit(self, fn: Callable, *args) -> None:
        self._q.put((fn, args))

    def close(self) -> None:
        self._q.put(None)
        self._t.join(timeout=30)

    def _run(self) -> None:
        if self._init is not None:
            self._init()
        while True:
            item = self._q.get()
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except BaseException as e:  # reported to the scheduler thread, which raises
                self._on_error(e, traceback.format_exc())


class Worker:
    """The device side of one instance: its lanes, links and weight slots."""

    def __init__(self, iid: int, spec: DeviceSpec, hosts: dict[str, HostModel], on_error):
        self.iid = iid
        self.spec = spec
        self.hosts = hosts
        self.slots: dict[str, DeviceModel] = {}  # models with device copies (resident, pre-loaded)
        self.ready: set[str] = set()  # slots whose copy finished
        self.h2d_link, self.d2h_link = Link(spec), Link(spec)

        def init_threads() -> None:
            import torch

            torch.set_num_threads(spec.threads)

        self.compute = Lane(f"hpn-serve-{iid}-compute", init_threads, on_error)
        self.h2d = Lane(f"hpn-serve-{iid}-h2d", None, on_error)
        self.d2h = Lane(f"hpn-serve-{iid}-d2h", None, on_error)

    def slot(self, model: str) -> DeviceModel:
        s = self.slots.get(model)
        if s is None:
            s = self.slots[model] = DeviceModel(self.hosts[model], self.spec)
        return s

    def module(self, model: str):
        s = self.slots.get(model)
        if s is None or s.module is None or model not in self.ready:
            raise RuntimeError(f"instance {self.iid}: {model} is not on the device")
        return s.module

    def copy_in(self, model: str, cold: bool = False, startup_s: float = 0.0) -> float:
        """Scale up `model` (on the h2d lane): seconds the copy took."""
        took = self.slot(model).load(self.h2d_link, cold, startup_s)
        self.ready.add(model)
        return took

    def evict(self, model: str) -> None:
        s = self.slots.get(model)
        self.ready.discard(model)
        if s is not None:
            s.evict()

    def weight_bytes(self) -> int:
        return sum(s.nbytes for m, s in self.slots.items() if s.module is not None)

    def close(self) -> None:
        for lane in (self.compute, self.h2d, self.d2h):
            lane.close()
