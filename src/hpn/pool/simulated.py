"""The simulated backend: the contract of `backend.Backend` on a heapq event clock, charging
every duration from the ground-truth `CostModel`.

Decode runs as operations of many steps (a "turn"): the backend advances a batch by whole
runs of steps between request completions (constant step time per run) and emits each
request's tokens in closed form, so the cost is per run, not per token. The first decode
of a model after its scale-up starts `CostModel.decode_warmup` later (0 for the catalog's
GPUs); a KV move starts once the request's previous move has landed.

A cost model whose step times are not the plain formulas (`CostModel.forms`: a batch term
evaluated at a fixed value, whole milliseconds) is charged through `CostModel.decode_step`,
with a run cut where the step time changes; with a time grid (`CostModel.grid`, 1 ms) every
event time is put on it, so events at the same millisecond tie exactly (and run in the
order they were scheduled) as in a simulator that counts whole milliseconds.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any

from hpn.errors import InputError
from hpn.pool.backend import Backend, Cluster, Done, Instance, MetricsSink, OnDone
from hpn.pool.costs import CostModel, decode_latency
from hpn.pool.requests import Request

EPS = 1e-9

Seg = tuple[float, float, int, int]
"""A run of decode steps: (start, step time, steps, steps before)."""


class _Slot:
    """Backend-private state of one instance: link timers, the running decode, pre-load."""

    __slots__ = ("h2d_free", "d2h_free", "prefetch_ready", "op", "warm")

    def __init__(self) -> None:
        self.warm: str | None = None  # the model decoded since its last scale-up
        self.h2d_free = 0.0
        self.d2h_free = 0.0
        self.prefetch_ready = 0.0
        self.op: _DecodeOp | None = None


class _DecodeOp:
    """A running decode operation: its batches, budget, planned runs of steps, joins."""

    inst: Instance
    batches: list[list[Request]]
    start: float
    budget_end: float | None
    on_done: OnDone
    stop: bool
    segs: list[Seg]
    end: float
    ver: int  # bumped when the plan changes: stale completion events are ignored
    joins: list[tuple[int, list[Request]]]
    done: list[Request]

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
    """`Backend` on an event clock; durations from `cost` (the ground truth)."""

    def __init__(self, cost: CostModel, cluster: Cluster, sink: MetricsSink):
        super().__init__(cluster, sink)
        self.cost = cost
        self.t = 0.0
        self._heap: list[tuple[float, int, Callable[..., object], tuple[object, ...]]] = []
        self._seq = 0
        self._slots = [_Slot() for _ in self.instances]
        self._landed: dict[int, float] = {}  # rid: when its last KV move lands
        self._hz = None if cost.grid is None else round(1.0 / cost.grid)

    def _on_grid(self, t: float) -> float:
        """`t` on the cost model's time grid (unchanged without one)."""
        return t if self._hz is None else round(t * self._hz) / self._hz

    # --- clock and run loop --------------------------------------------------------------
    def now(self) -> float:
        return self.t

    def call_at(self, t: float, fn: Callable[..., object], *args: object) -> None:
        self._seq += 1
        if self._hz is not None:
            t = self._on_grid(t)
        heapq.heappush(self._heap, (max(t, self.t), self._seq, fn, args))

    def run(
        self,
        arrivals: Sequence[Request],
        on_arrival: Callable[[Request], None],
        until: float = math.inf,
    ) -> None:
        for r in arrivals:  # bulk-scheduled in O(n)
            self._seq += 1
            self._heap.append((r.arrival, self._seq, on_arrival, (r,)))
        heapq.heapify(self._heap)
        heap = self._heap
        while heap and heap[0][0] <= until:
            t, _, fn, args = heapq.heappop(heap)
            self.t = t
            fn(*args)

    def _busy(self, inst: Instance, seconds: float) -> None:
        self.sink.busy(inst, seconds)

    # --- model weights -------------------------------------------------------------------
    def load(self, inst: Instance, model: str, on_done: OnDone) -> None:
        if inst.resident == model:
            on_done(Done("load", inst, (), self.t))
            return
        c, s = self.cost, self._slots[inst.iid]
        if inst.prefetched == model:
            t = max(self.t, s.prefetch_ready) + c.device_copy_time(model)
        else:
            start = max(self.t, s.h2d_free)
            t = start + c.switch_time(model)
            s.h2d_free = t
        inst.prefetched = None
        inst.resident = None
        inst.models = frozenset()
        inst.busy = True
        self.call_at(t, self._loaded, inst, model, on_done)

    def _loaded(self, inst: Instance, model: str, on_done: OnDone) -> None:
        self._slots[inst.iid].warm = None  # fresh weights: the next decode warms up
        inst.resident = model
        inst.models = frozenset((model,))
        inst.busy = False
        self.sink.switched(inst, model, self.t)
        on_done(Done("load", inst, (), self.t))

    def prefetch(self, inst: Instance, model: str) -> bool:
        c, s = self.cost, self._slots[inst.iid]
        if model in (inst.resident, inst.prefetched) or inst.resident is None:
            return model == inst.prefetched
        free = c.memory_budget(inst.tp) - c.weights(inst.resident) - c.weights(model)
        if free < c.kv_floor(inst.resident):
            return False
        start = max(self.t, s.h2d_free)
        inst.prefetched = model
        s.prefetch_ready = s.h2d_free = start + c.prefetch_time(model)
        return True

    # --- compute -------------------------------------------------------------------------
    def prefill(self, inst: Instance, reqs: list[Request], on_done: OnDone) -> None:
        dur = self.cost.prefill_time(reqs[0].model, [r.input_len for r in reqs])
        self._slots[inst.iid].warm = reqs[0].model  # a forward of the model ran here
        inst.busy = True
        self._busy(inst, dur)
        self.call_at(self.t + dur, self._prefilled, inst, reqs, on_done)

    def _prefilled(self, inst: Instance, reqs: list[Request], on_done: OnDone) -> None:
        for r in reqs:
            self.emit_tokens(r, self.t, 0.0, 1)
            r.kv_at = inst
        inst.busy = False
        on_done(Done("prefill", inst, tuple(reqs), self.t))

    def decode(
        self,
        inst: Instance,
        batches: list[list[Request]],
        budget: float | None,
        on_done: OnDone,
        stop_on_finish: bool = False,
    ) -> None:
        op = _DecodeOp()
        op.inst, op.batches, op.start, op.on_done, op.stop = (
            inst,
            batches,
            self.t,
            on_done,
            stop_on_finish,
        )
        # the first decode after a scale-up warms up first (`CostModel.decode_warmup`);
        # the quota counts from the end of the first step, as without it
        slot, model = self._slots[inst.iid], next((b[0].model for b in batches if b), None)
        warm = 0.0 if model is None or slot.warm == model else self.cost.decode_warmup(model)
        slot.warm = model
        if warm > 0:
            op.start = self.t + warm
            self._busy(inst, warm)
        op.budget_end = None if budget is None else op.start + self._step(batches) + budget
        op.ver, op.joins, op.done = 0, [], []
        op.segs, op.end = self._plan(op)
        inst.busy = inst.decoding = True
        self._slots[inst.iid].op = op
        self.call_at(op.end, self._decoded, op, 0)

    def _step(self, batches: list[list[Request]]) -> float:
        """Duration of the next step over `batches`."""
        d = 0.0
        for b in batches:
            if b:
                d += self.cost.decode_step(
                    b[0].model, len(b), sum(r.input_len + r.generated for r in b)
                )
        return d

    def interrupt(self, inst: Instance) -> None:
        op = self._slots[inst.iid].op
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
                return self._on_grid(t0 + k * d), off + k
        last = op.segs[-1]
        return op.end, last[2] + last[3]

    def step_end(self, inst: Instance) -> float | None:
        """The end of the last step completed before now. A step that ends at this very
        moment has not: events at one time run in the order they were scheduled, and the
        steps of an operation come after what was scheduled before it (every arrival)."""
        op = self._slots[inst.iid].op
        if op is None or not op.segs:
            return None
        last = None
        for t0, d, n, _off in op.segs:
            if t0 + d >= self.t - EPS:
                break
            last = t0 + min(n, math.ceil((self.t - t0) / d - EPS) - 1) * d
        return last if last is None else self._on_grid(last)

    def join(self, inst: Instance, reqs: list[Request], index: int = 0) -> bool:
        op = self._slots[inst.iid].op
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
        self._busy(op.inst, self.t - op.start)
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

    def _plan(self, op: _DecodeOp) -> tuple[list[Seg], float]:
        """Runs of steps (start, step time, steps, steps before) and the end time.

        A run is constant in step time: with the plain formulas it is charged at its first
        step's context; with a model of other forms (`CostModel.forms`) each step is
        `CostModel.decode_step` at its own context and a run is also cut where that
        changes (`_same_steps`)."""
        forms, dec = self.cost.forms, self.cost.dec
        exact = bool(forms) and any(b and b[0].model in forms for b in op.batches)
        step = self.cost.decode_step
        # per batch, a list for speed:
        # [coefficients, (steps left, KV) sorted, next, running, KV, model]
        state: list[list[Any]] = []
        for b in op.batches:
            if b:
                rem = sorted((r.output_len - r.generated, r.input_len + r.output_len) for r in b)
                ctx = sum(r.input_len + r.generated for r in b)
                state.append([dec[b[0].model], rem, 0, len(b), ctx, b[0].model])
        t, steps, budget_end = op.start, 0, op.budget_end
        segs: list[Seg] = []
        while True:
            d, k = 0.0, math.inf
            for s in state:
                if s[3]:
                    d += step(s[5], s[3], s[4]) if exact else decode_latency(s[0], s[3], s[4])
                    k = min(k, s[1][s[2]][0] - steps)
            if d == 0.0:
                if exact and k < math.inf:  # whole ms can reach 0: time would stop
                    names = ", ".join(sorted({s[5] for s in state if s[3]}))
                    raise InputError("pool.costs", f"a decode step of {names} takes 0 s")
                break
            kb: float = math.inf
            if budget_end is not None:
                if steps and t >= budget_end - EPS:
                    break
                kb = max(1, math.ceil((budget_end - t) / d - EPS))
            n = int(min(k, kb))  # finite: a batch with requests running bounds k
            if exact:
                for s in state:
                    if s[3]:
                        n = self._same_steps(s[5], s[3], s[4], n)
            segs.append((t, d, n, steps))
            t = self._on_grid(t + n * d)
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

    def _same_steps(self, model: str, running: int, ctx: int, limit: int) -> int:
        """Steps from now (at least 1, at most `limit`) over which `model`'s step time stays
        what it is now, the context growing by `running` tokens a step (the step time is
        monotone in the context, so a bisection finds where it changes)."""
        step = self.cost.decode_step
        d0 = step(model, running, ctx)
        if limit <= 1 or step(model, running, ctx + (limit - 1) * running) == d0:
            return max(1, limit)
        lo, hi = 0, limit - 1  # the same at lo, not at hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if step(model, running, ctx + mid * running) == d0:
                lo = mid
            else:
                hi = mid
        return hi

    def _emit(self, op: _DecodeOp, total: int) -> None:
        """Emit the tokens of the first `total` steps of the operation."""
        for b in op.batches:
            for r in b:
                left = min(r.output_len - r.generated, total)
                for t0, d, n, off in op.segs:
                    if off >= left:
                        break
                    self.emit_tokens(r, t0 + d, d, min(n, left - off))

    def _decoded(self, op: _DecodeOp, ver: int) -> None:
        if ver != op.ver:
            return
        self._emit(op, op.segs[-1][2] + op.segs[-1][3] if op.segs else 0)
        finished = op.done + [r for b in op.batches for r in b if r.done_t >= 0]
        inst = op.inst
        inst.busy = inst.decoding = False
        self._slots[inst.iid].op = None
        self._busy(inst, op.end - op.start)
        op.on_done(Done("decode", inst, tuple(finished), self.t))

    # --- KV cache ------------------------------------------------------------------------
    def move_kv(
        self, reqs: list[Request], src: Instance | None, dst: Instance | None, on_done: OnDone
    ) -> None:
        dur = sum(self.cost.kv_transfer_time(r.model, r.input_len + r.generated) for r in reqs)
        # a transfer waits for the last transfer of its blocks (A §5.3): a KV swapped out
        # and straight back in (a batch whose next turn is its own) comes in after it left
        landed = self._landed
        t = max([self.t, *(landed.get(r.rid, 0.0) for r in reqs)])
        if src is not None:
            s = self._slots[src.iid]
            t = max(t, s.d2h_free) + dur
            s.d2h_free = t
        if dst is not None:
            s = self._slots[dst.iid]
            t = max(t, s.h2d_free) + dur
            s.h2d_free = t
        for r in reqs:
            r.kv_at = dst
            landed[r.rid] = t
        self.call_at(t, self._moved, dst, tuple(reqs), on_done)

    def _moved(self, dst: Instance | None, reqs: tuple[Request, ...], on_done: OnDone) -> None:
        on_done(Done("move_kv", dst, reqs, self.t))
