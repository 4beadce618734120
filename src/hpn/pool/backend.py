"""The backend boundary: what a policy may ask of the GPUs, and the simulated backend.

A policy only calls the `Backend` methods and reacts to their callbacks; it never reads a
clock other than `now()`. `SimulatedBackend` charges durations from the cost model on a
heapq event loop; a real engine backend implements the same methods with real work.

Decode runs as operations of many steps (a "turn"): the simulated backend advances a batch
by whole runs of steps between request completions (constant step time per run) and emits
each request's tokens in closed form, so the cost is per run, not per token.
"""

from __future__ import annotations

import heapq
import math
from abc import ABC, abstractmethod
from collections.abc import Callable

from hpn.pool.costs import CostModel
from hpn.pool.requests import Request

EPS = 1e-9


class Instance:
    """One serving instance: `tp` GPUs running one model at a time (plus a pre-loaded one)."""

    __slots__ = (
        "iid",
        "tp",
        "role",
        "resident",
        "prefetched",
        "prefetch_ready",
        "h2d_free",
        "d2h_free",
        "busy",
        "op",
        "busy_s",
        "seen",
        "state",
    )

    def __init__(self, iid: int, tp: int, role: str):
        self.iid, self.tp, self.role = iid, tp, role
        self.resident: str | None = None
        self.prefetched: str | None = None
        self.prefetch_ready = 0.0
        self.h2d_free = 0.0
        self.d2h_free = 0.0
        self.busy = False
        self.op: _DecodeOp | None = None
        self.busy_s = 0.0
        self.seen: set[str] = set()
        self.state = None  # owned by the policy


class Backend(ABC):
    """Operations a policy can run on instances; each reports completion by callback."""

    instances: list[Instance]

    @abstractmethod
    def now(self) -> float: ...

    @abstractmethod
    def call_at(self, t: float, fn: Callable, *args) -> None: ...

    @abstractmethod
    def load(
        self, inst: Instance, model: str, on_done: Callable, seconds: float | None = None
    ) -> None:
        """Make `model` resident (scale the old one down); on_done(inst). `seconds` overrides
        the cost model's switch time (a baseline with its own loader)."""

    @abstractmethod
    def prefetch(self, inst: Instance, model: str) -> bool:
        """Start pre-loading `model` behind the resident one if memory allows."""

    @abstractmethod
    def prefill(self, inst: Instance, reqs: list[Request], on_done: Callable) -> None:
        """Prefill same-model requests (first token each); on_done(inst, reqs)."""

    @abstractmethod
    def decode(
        self, inst, batches, budget: float | None, on_done: Callable, stop_on_finish=False
    ) -> None:
        """Decode steps over `batches` (lists of same-model requests, interleaved step by
        step) until `budget` seconds pass after the end of the first step (Art: a quota is
        wall-clock time counted from the end of the turn's first step), every request
        finishes, or (with `stop_on_finish`) one finishes; on_done(inst, finished)."""

    @abstractmethod
    def interrupt(self, inst: Instance) -> None:
        """End the running decode operation at its next step boundary."""

    @abstractmethod
    def join(self, inst: Instance, reqs: list[Request], index: int = 0) -> bool:
        """Add `reqs` (KV resident) to batch `index` of the running decode operation from its
        next step boundary, keeping its budget; False if the operation ends there anyway."""

    @abstractmethod
    def move_kv(self, reqs, src: Instance | None, dst: Instance | None, on_done) -> None:
        """Copy the KV cache of `reqs` between instances (None = host memory); on_done(reqs)."""

    def place(self, inst: Instance, model: str) -> None:
        """Weights resident before serving starts (static placement; no time charged)."""
        inst.resident = model
        inst.seen.add(model)

    def fail(self, req: Request) -> None:
        """The policy gives up on a request (counts 0 attainment)."""
        req.failed = True


class _DecodeOp:
    __slots__ = (
        "inst",
        "batches",
        "start",
        "budget_end",
        "on_done",
        "stop",
        "segs",
        "end",
        "ver",
        "joins",
        "done",
    )


class SimulatedBackend(Backend):
    def __init__(self, cost: CostModel):
        self.cost = cost
        self.t = 0.0
        self._heap: list = []
        self._seq = 0
        self.instances: list[Instance] = []
        self.switches = 0
        self.gaps: list[tuple[float, int]] = []

    def add_instances(self, n: int, tp: int, role: str) -> list[Instance]:
        new = [Instance(len(self.instances) + i, tp, role) for i in range(n)]
        self.instances += new
        return new

    # --- event loop ----------------------------------------------------------------------
    def now(self) -> float:
        return self.t

    def call_at(self, t: float, fn: Callable, *args) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (max(t, self.t), self._seq, fn, args))

    def schedule_all(self, items: list[tuple[float, Callable, tuple]]) -> None:
        """Bulk-schedule (time, fn, args) events (e.g. every arrival) in O(n)."""
        for t, fn, args in items:
            self._seq += 1
            self._heap.append((t, self._seq, fn, args))
        heapq.heapify(self._heap)

    def run(self, until: float = math.inf) -> None:
        heap = self._heap
        while heap and heap[0][0] <= until:
            t, _, fn, args = heapq.heappop(heap)
            self.t = t
            fn(*args)

    # --- model weights -------------------------------------------------------------------
    def load(self, inst: Instance, model: str, on_done: Callable, seconds=None) -> None:
        if inst.resident == model:
            on_done(inst)
            return
        c = self.cost
        if inst.prefetched == model:
            t = max(self.t, inst.prefetch_ready) + c.device_copy_time(model)
        else:
            start = max(self.t, inst.h2d_free)
            t = start + (c.switch_time(model) if seconds is None else seconds)
            inst.h2d_free = t
        inst.prefetched = None
        inst.resident = None
        inst.busy = True
        self.call_at(t, self._loaded, inst, model, on_done)

    def _loaded(self, inst: Instance, model: str, on_done: Callable) -> None:
        inst.resident = model
        inst.busy = False
        inst.seen.add(model)
        self.switches += 1
        on_done(inst)

    def prefetch(self, inst: Instance, model: str) -> bool:
        c = self.cost
        if model in (inst.resident, inst.prefetched) or inst.resident is None:
            return model == inst.prefetched
        free = c.memory_budget(inst.tp) - c.weights(inst.resident) - c.weights(model)
        if free < c.kv_floor(inst.resident):
            return False
        start = max(self.t, inst.h2d_free)
        inst.prefetched = model
        inst.prefetch_ready = inst.h2d_free = start + c.prefetch_time(model)
        return True

    # --- compute -------------------------------------------------------------------------
    def prefill(self, inst: Instance, reqs: list[Request], on_done: Callable) -> None:
        dur = self.cost.prefill_time(reqs[0].model, [r.input_len for r in reqs])
        inst.busy = True
        inst.busy_s += dur * inst.tp
        self.call_at(self.t + dur, self._prefilled, inst, reqs, on_done)

    def _prefilled(self, inst: Instance, reqs: list[Request], on_done: Callable) -> None:
        for r in reqs:
            r.emit(self.t, 0.0, 1, self.gaps)
            r.kv_at = inst
        inst.busy = False
        on_done(inst, reqs)

    def decode(self, inst, batches, budget, on_done, stop_on_finish=False) -> None:
        op = _DecodeOp()
        op.inst, op.batches, op.start, op.on_done, op.stop = (
            inst,
            batches,
            self.t,
            on_done,
            stop_on_finish,
        )
        op.budget_end = None if budget is None else self.t + self._step(batches) + budget
        op.ver, op.joins, op.done = 0, [], []
        op.segs, op.end = self._plan(op)
        inst.busy = True
        inst.op = op
        self.call_at(op.end, self._decoded, op, 0)

    def _step(self, batches) -> float:
        """Duration of the next step over `batches`."""
        d = 0.0
        for b in batches:
            if b:
                a, bb, c = self.cost.dec[b[0].model]
                d += a + bb * sum(r.input_len + r.generated for r in b) + c * len(b)
        return d

    def interrupt(self, inst: Instance) -> None:
        op = inst.op
        if op is None or op.end <= self.t + EPS:
            return
        op.budget_end = self.t if op.budget_end is None else min(op.budget_end, self.t)
        if op.joins:  # the operation is already cut at the next boundary (see join)
            return
        op.segs, op.end = self._plan(op)
        op.ver += 1
        self.call_at(op.end, self._decoded, op, op.ver)

    def _boundary(self, op: _DecodeOp) -> tuple[float, int]:
        """(time, steps done) of the first step boundary at or after now."""
        for t0, d, n, off in op.segs:
            if t0 + n * d >= self.t - EPS:
                k = max(0, math.ceil((self.t - t0) / d - EPS))
                return t0 + k * d, off + k
        last = op.segs[-1]
        return op.end, last[2] + last[3]

    def join(self, inst: Instance, reqs, index: int = 0) -> bool:
        op = inst.op
        if op is None or op.end <= self.t + EPS:
            return False
        t, _ = self._boundary(op)
        if t >= op.end - EPS:
            return False
        if not op.joins:
            op.ver += 1
            self.call_at(t, self._rejoin, op, op.ver)
        op.joins.append((index, list(reqs)))
        return True

    def _rejoin(self, op: _DecodeOp, ver: int) -> None:
        if ver != op.ver:
            return
        _, steps = self._boundary(op)
        self._emit(op, steps)
        inst = op.inst
        inst.busy_s += (self.t - op.start) * inst.tp
        op.done += [r for b in op.batches for r in b if r.done_t >= 0]
        batches = [[r for r in b if r.done_t < 0] for b in op.batches]
        for i, reqs in op.joins:
            batches[i] += [r for r in reqs if r.done_t < 0 and r not in batches[i]]
        op.joins = []
        op.batches, op.start = batches, self.t
        if not any(batches) or (op.budget_end is not None and self.t >= op.budget_end - EPS):
            op.segs, op.end = [], self.t
            self._decoded(op, op.ver)
            return
        op.segs, op.end = self._plan(op)
        op.ver += 1
        self.call_at(op.end, self._decoded, op, op.ver)

    def _plan(self, op: _DecodeOp):
        """Runs of steps (start, step time, steps, steps before) and the end time."""
        dec = self.cost.dec
        state = []
        for b in op.batches:
            if b:
                rem = sorted((r.output_len - r.generated, r.input_len + r.output_len) for r in b)
                ctx = sum(r.input_len + r.generated for r in b)
                state.append([dec[b[0].model], rem, 0, len(b), ctx])
        t, steps, segs, budget_end = op.start, 0, [], op.budget_end
        while True:
            d, k = 0.0, math.inf
            for s in state:
                if s[3]:
                    a, b, c = s[0]
                    d += a + b * s[4] + c * s[3]
                    k = min(k, s[1][s[2]][0] - steps)
            if d == 0.0:
                break
            n, kb = k, math.inf
            if budget_end is not None:
                if steps and t >= budget_end - EPS:
                    break
                kb = max(1, math.ceil((budget_end - t) / d - EPS))
                n = min(k, kb)
            segs.append((t, d, n, steps))
            t += n * d
            steps += n
            finished = False
            for s in state:
                if s[3]:
                    s[4] += n * s[3]
                    rem = s[1]
                    while s[2] < len(rem) and rem[s[2]][0] <= steps:
                        s[4] -= rem[s[2]][1]
                        s[3] -= 1
                        s[2] += 1
                        finished = True
            if (finished and op.stop) or n == kb:
                break
        return segs, t

    def _emit(self, op: _DecodeOp, total: int) -> None:
        """Emit the tokens of the first `total` steps of the operation."""
        gaps = self.gaps
        for b in op.batches:
            for r in b:
                left = min(r.output_len - r.generated, total)
                for t0, d, n, off in op.segs:
                    if off >= left:
                        break
                    r.emit(t0 + d, d, min(n, left - off), gaps)

    def _decoded(self, op: _DecodeOp, ver: int) -> None:
        if ver != op.ver:
            return
        self._emit(op, op.segs[-1][2] + op.segs[-1][3] if op.segs else 0)
        finished = op.done + [r for b in op.batches for r in b if r.done_t >= 0]
        inst = op.inst
        inst.busy = False
        inst.op = None
        inst.busy_s += (op.end - op.start) * inst.tp
        op.on_done(inst, finished)

    # --- KV cache ------------------------------------------------------------------------
    def move_kv(self, reqs, src, dst, on_done) -> None:
        dur = sum(self.cost.kv_transfer_time(r.model, r.input_len + r.generated) for r in reqs)
        t = self.t
        if src is not None:
            t = max(t, src.d2h_free) + dur
            src.d2h_free = t
        if dst is not None:
            t = max(t, dst.h2d_free) + dur
            dst.h2d_free = t
        for r in reqs:
            r.kv_at = dst
        self.call_at(t, on_done, reqs)
