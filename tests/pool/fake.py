"""A scripted fake backend: the `Backend` contract with made-up durations, token by token.

Like vLLM's scheduler tests with made-up model outputs: every load takes `load_s`, every
prefill `prefill_s`, every decode step `step_s` per batch, every KV move `kv_s` per request,
whatever the model or lengths. It shares no code with the simulated backend, so a policy
that passes against both keeps to the contract, not to simulator details. `log` records
(start time, op, instance id, detail) for hand-computed timelines.
"""

from __future__ import annotations

import heapq
import math

from hpn.pool.backend import Backend, Cluster, Done
from hpn.pool.metrics import Recorder
from hpn.pool.predictor import Predictor

EPS = 1e-9


def predictor(models, load_s=1.0, prefill_s=0.5, step_s=0.2, kv_s=0.1, weights=10e9):
    """Estimates that agree with the script (so policies plan with the true durations)."""
    return Predictor(
        prefill={m: (prefill_s, 0.0, 0.0) for m in models},
        decode={m: (step_s, 0.0, 0.0) for m in models},
        switch_s={m: load_s for m in models},
        kv_s_per_token={m: 0.0 for m in models},
        weights={m: weights for m in models},
        kv_bytes_per_token={m: 1e5 for m in models},
        memory_per_gpu=72e9,
        gpu_memory=80e9,
    )


class _Decode:
    def __init__(self, batches, budget_end, on_done, stop):
        self.batches, self.budget_end, self.on_done, self.stop = batches, budget_end, on_done, stop
        self.joins: list = []
        self.finished: list = []
        self.step_end = 0.0
        self.first = True


class ScriptedBackend(Backend):
    def __init__(
        self,
        cluster: Cluster,
        load_s=1.0,
        prefill_s=0.5,
        step_s=0.2,
        kv_s=0.1,
        prefetch_ok=False,
    ):
        super().__init__(cluster, Recorder())
        self.load_s, self.prefill_s, self.step_s, self.kv_s = load_s, prefill_s, step_s, kv_s
        self.prefetch_ok = prefetch_ok
        self.t = 0.0
        self._heap: list = []
        self._seq = 0
        self._ops: dict[int, _Decode] = {}
        self.log: list[tuple[float, str, int | None, object]] = []
        self.done_count: dict[str, int] = {}

    # clock and run loop
    def now(self):
        return self.t

    def call_at(self, t, fn, *args):
        self._seq += 1
        heapq.heappush(self._heap, (max(t, self.t), self._seq, fn, args))

    def run(self, arrivals, on_arrival, until=math.inf):
        for r in arrivals:
            self.call_at(r.arrival, on_arrival, r)
        while self._heap and self._heap[0][0] <= until:
            self.t, _, fn, args = heapq.heappop(self._heap)
            fn(*args)

    def _complete(self, on_done, done):
        self.done_count[done.op] = self.done_count.get(done.op, 0) + 1
        on_done(done)

    # weights
    def load(self, inst, model, on_done):
        self.log.append((self.t, "load", inst.iid, model))
        if inst.resident == model:
            self._complete(on_done, Done("load", inst, (), self.t))
            return
        inst.resident, inst.models, inst.busy = None, frozenset(), True
        dur = 0.0 if inst.prefetched == model else self.load_s
        inst.prefetched = None

        def loaded():
            inst.resident, inst.models, inst.busy = model, frozenset((model,)), False
            self.sink.switched(inst, model, self.t)
            self._complete(on_done, Done("load", inst, (), self.t))

        self.call_at(self.t + dur, loaded)

    def prefetch(self, inst, model):
        if not self.prefetch_ok or inst.resident in (None, model):
            return False
        inst.prefetched = model
        return True

    # compute
    def prefill(self, inst, reqs, on_done):
        assert all(r.model in inst.models for r in reqs), "prefill needs the model's weights"
        self.log.append((self.t, "prefill", inst.iid, [r.rid for r in reqs]))
        inst.busy = True
        self.sink.busy(inst, self.prefill_s)

        def prefilled():
            for r in reqs:
                self.emit_tokens(r, self.t, 0.0, 1)
                r.kv_at = inst
            inst.busy = False
            self._complete(on_done, Done("prefill", inst, tuple(reqs), self.t))

        self.call_at(self.t + self.prefill_s, prefilled)

    def decode(self, inst, batches, budget, on_done, stop_on_finish=False):
        for b in batches:
            assert all(r.kv_at is inst for r in b), "decode needs the KV on the instance"
            assert all(r.model in inst.models for r in b), "decode needs the model's weights"
        self.log.append((self.t, "decode", inst.iid, [[r.rid for r in b] for b in batches]))
        op = _Decode([list(b) for b in batches], budget, on_done, stop_on_finish)
        inst.busy = inst.decoding = True
        self._ops[inst.iid] = op
        self._step(inst, op)

    def _step(self, inst, op):
        n = sum(1 for b in op.batches if b)
        op.step_end = self.t + self.step_s * n
        self.sink.busy(inst, self.step_s * n)
        self.call_at(op.step_end, self._stepped, inst, op)

    def _stepped(self, inst, op):
        finished = False
        for b in op.batches:
            for r in b:
                self.emit_tokens(r, self.t, 0.0, 1)
                if r.done_t >= 0:
                    op.finished.append(r)
                    finished = True
            b[:] = [r for r in b if r.done_t < 0]
        if op.first and op.budget_end is not None:
            op.budget_end = self.t + op.budget_end  # a quota counts from the first step's end
        op.first = False
        for i, reqs in op.joins:
            op.batches[i] += [r for r in reqs if r.done_t < 0]
        op.joins = []
        over = op.budget_end is not None and self.t >= op.budget_end - EPS
        if not any(op.batches) or over or (finished and op.stop):
            inst.busy = inst.decoding = False
            del self._ops[inst.iid]
            self._complete(op.on_done, Done("decode", inst, tuple(op.finished), self.t))
            return
        self._step(inst, op)

    def interrupt(self, inst):
        op = self._ops.get(inst.iid)
        if op is not None:
            op.budget_end = -math.inf if op.first else self.t

    def join(self, inst, reqs, index=0):
        op = self._ops.get(inst.iid)
        if op is None:
            return False
        ends = (op.budget_end is not None and not op.first and op.step_end >= op.budget_end) or all(
            r.remaining <= 1 for b in op.batches for r in b
        )
        if ends:
            return False
        op.joins.append((index, list(reqs)))
        return True

    # KV cache
    def move_kv(self, reqs, src, dst, on_done):
        self.log.append(
            (self.t, "move_kv", None if dst is None else dst.iid, [r.rid for r in reqs])
        )
        for r in reqs:
            r.kv_at = dst
        self.call_at(
            self.t + self.kv_s * len(reqs),
            lambda: self._complete(on_done, Done("move_kv", dst, tuple(reqs), self.t)),
        )
