"""`EngineBackend`: the pool's `Backend` contract run by real models on a wall clock.

The scheduler thread (the one calling `run` or `serve`) runs every policy callback, timer
and completion, one at a time; each instance's `Worker` does the work on its own threads
(compute, host-to-device, device-to-host) and posts results back. Only the scheduler
thread writes `Instance` handles and `Request` objects, so policies need no locks.

Decode operations run step by step: one forward per same-model batch per step, requests
joining (their KV on the instance) and finished ones leaving between steps; the budget is
counted from the end of the first step; `interrupt` ends the operation at the next step
boundary. A pre-loaded model becomes resident without a copy (its device tensors are
already in the pool); any other load first evicts the resident model, then copies the
weights over the instance's host link behind the copies already queued there.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from hpn.pool.backend import Backend, Cluster, Done, Instance, MetricsSink
from hpn.pool.requests import Request
from hpn.serve.device import DeviceSpec, Link
from hpn.serve.runner import DecodeBatch, Seq, prefill
from hpn.serve.weights import HostModel
from hpn.serve.workers import Worker

BLOCK_TOKENS = 16
KV_FLOOR_BLOCKS = 1024  # pre-loading needs this much KV room left (as the simulator)


class EngineError(RuntimeError):
    """A worker thread failed; raised on the scheduler thread."""


class _DecodeOp:
    def __init__(self, inst, batches, budget, on_done, stop):
        self.inst, self.batches, self.budget, self.on_done, self.stop = (
            inst,
            batches,
            budget,
            on_done,
            stop,
        )
        self.lock = threading.Lock()
        self.joins: list[tuple[int, list[Request]]] = []
        self.interrupted = False
        self.closed = False


class EngineBackend(Backend):
    """Real prefill, decode, weight and KV movement behind the pool contract.

    Parameters
    ----------
    cluster
        Instances by role, as for the simulator.
    sink
        Where token times, switches and busy time go.
    hosts
        Host copies of every model a request may name (`HostModel`, by name).
    spec
        Device, budget, threads and link of every instance.
    cold_start
        Scale-ups (other than of a pre-loaded model) build and initialise the model first,
        as an engine start-up does (for policies with their own loader, e.g. serverless).
    """

    def __init__(
        self,
        cluster: Cluster,
        sink: MetricsSink,
        hosts: dict[str, HostModel],
        spec: DeviceSpec,
        cold_start: bool = False,
    ):
        super().__init__(cluster, sink)
        self.cold_start = cold_start
        self.hosts = hosts
        self.spec = spec
        self.workers = {
            i.iid: Worker(i.iid, spec, hosts, self._worker_error) for i in self.instances
        }
        self.seqs: dict[int, Seq] = {}
        self.reqs: dict[int, Request] = {}
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._heap: list = []
        self._seq = itertools.count()
        self._t0 = time.perf_counter()
        self._pending = 0  # operations started and not yet completed
        self._undelivered = 0  # arrivals of `run` not yet handed to the policy
        self._ops: dict[int, _DecodeOp] = {}
        self._stop = threading.Event()
        # decode-loop accounting: steps, seconds in steps, in forwards, in decode operations
        self.steps, self.step_s, self.forward_s, self.decode_s = 0, 0.0, 0.0, 0.0
        self.forget_after: float | None = None  # seconds after finishing; None: keep
        self._error: tuple[BaseException, str] | None = None
        self.kv_bytes_per_token = {
            m: h.info.kv_bytes_per_token(spec.elem_bytes) for m, h in hosts.items()
        }

    # --- clock and loop ------------------------------------------------------------------
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

    def register(self, req: Request, seq: Seq) -> None:
        """Tokens and sampling of `req` (call before it arrives)."""
        self.reqs[req.rid] = req
        self.seqs[req.rid] = seq

    def synthetic(self, req: Request, vocab: int | None = None) -> Seq:
        """A seeded random prompt of `req.input_len` tokens; exactly `output_len` tokens out."""
        v = vocab or self.hosts[req.model].info.vocab
        rng = np.random.default_rng(req.rid)
        prompt = rng.integers(10, v, size=max(1, req.input_len)).tolist()
        return Seq(req.rid, req.model, prompt, max(1, req.output_len))

    def run(self, arrivals: Sequence[Request], on_arrival, until: float = math.inf) -> None:
        """Deliver `arrivals` on the wall clock (from now) and serve until `until` or idle."""
        for r in arrivals:
            if r.rid not in self.seqs:
                self.register(r, self.synthetic(r))
        self.reset_clock()
        self._undelivered += len(arrivals)
        for r in arrivals:
            self.call_at(r.arrival, self._deliver, on_arrival, r)
        self.loop(until, idle_exit=True)

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
        """No operation running and every request delivered and finished or failed
        (policies may keep periodic timers, e.g. serverless's autoscaler tick)."""
        if self._pending or self._undelivered:
            return False
        return all(r.done_t >= 0 or r.failed for r in self.reqs.values())

    def _deliver(self, on_arrival, r: Request) -> None:
        self._undelivered -= 1
        on_arrival(r)

    def stop(self) -> None:
        self._stop.set()
        self._events.put((lambda: None, ()))

    def close(self) -> None:
        """Stop the worker threads (after `stop`)."""
        for w in self.workers.values():
            w.close()

    def _done(self, fn: Callable, *args) -> None:
        self._pending -= 1
        fn(*args)

    # --- weights -------------------------------------------------------------------------
    def place(self, inst: Instance, model: str) -> None:
        """Static placement: the weights are copied now, before serving (no time charged)."""
        w = self.workers[inst.iid]
        w.slot(model).load(Link(dataclasses.replace(self.spec, link_bps=None)))
        w.ready.add(model)
        super().place(inst, model)

    def evict(self, inst: Instance) -> None:
        """Drop every model's weights on `inst` now (after any copy already queued)."""
        w = self.workers[inst.iid]
        for m in inst.models | {inst.resident}:
            if m is not None:
                w.evict(m)
        if inst.prefetched is not None:
            w.h2d.submit(w.evict, inst.prefetched)
        super().evict(inst)

    def load(self, inst: Instance, model: str, on_done) -> None:
        if inst.resident == model:
            on_done(Done("load", inst, (), self.now()))
            return
        w = self.workers[inst.iid]
        for m in inst.models | {inst.resident}:
            if m is not None and m != model:
                w.evict(m)  # scale down (nothing runs on the instance now)
        pre = inst.prefetched
        inst.resident = None
        inst.models = frozenset()
        inst.prefetched = None
        inst.busy = True
        self._pending += 1
        if pre is not None and pre != model:
            w.h2d.submit(w.evict, pre)  # after its pre-load copy ends

        def copy():
            if model not in w.ready:
                w.copy_in(model, self.cold_start)
            self.post(self._done, self._loaded, inst, model, on_done)

        w.h2d.submit(copy)  # behind a running pre-load of `model`: waits for it, no copy

    def _loaded(self, inst: Instance, model: str, on_done) -> None:
        inst.resident = model
        inst.models = frozenset({model})
        inst.busy = False
        t = self.now()
        self.sink.switched(inst, model, t)
        on_done(Done("load", inst, (), t))

    def prefetch(self, inst: Instance, model: str) -> bool:
        if model == inst.prefetched:
            return True
        if inst.resident is None or model in inst.models:
            return False
        w = self.workers[inst.iid]
        need = self.hosts[model].nbytes
        kv = self._kv_on(inst.iid)
        floor = KV_FLOOR_BLOCKS * BLOCK_TOKENS * self.kv_bytes_per_token[inst.resident]
        if self.spec.memory_bytes - w.weight_bytes() - need - kv < floor:
            return False
        inst.prefetched = model
        w.h2d.submit(w.copy_in, model)
        return True

    # --- compute -------------------------------------------------------------------------
    def prefill(self, inst: Instance, reqs: list[Request], on_done) -> None:
        inst.busy = True
        self._pending += 1
        w = self.workers[inst.iid]
        seqs = [self.seqs[r.rid] for r in reqs]
        model = reqs[0].model

        def job():
            t0 = time.perf_counter()
            toks = prefill(w.module(model), seqs, self.spec.torch_device)
            finals = []
            for s, tok in zip(seqs, toks, strict=True):
                s.kv_on = inst.iid
                s.take(tok)
                finals.append(s.finished)
                if s.finished:
                    s.kv = None
            t = self.now()
            took = time.perf_counter() - t0
            self.post(self._done, self._prefilled, inst, reqs, toks, finals, t, took, on_done)

        w.compute.submit(job)

    def _prefilled(self, inst, reqs, toks, finals, t, took, on_done) -> None:
        for r, tok, final in zip(reqs, toks, finals, strict=True):
            self._token(r, tok, t, final)
            r.kv_at = inst
        inst.busy = False
        self.sink.busy(inst, took)
        on_done(Done("prefill", inst, tuple(reqs), t))

    def _token(self, r: Request, tok: int, t: float, final: bool) -> None:
        """Apply one token (scheduler thread). `final`: the worker ended the request with
        it (the seq itself may already be ahead of the events applied so far)."""
        seq = self.seqs[r.rid]
        if final and r.generated + 1 < r.output_len:  # stopped early (EOS)
            r.output_len = r.generated + 1
        self.emit_tokens(r, t, 0.0, 1)
        if seq.on_token is not None:
            seq.on_token(r, seq, tok, t)
        if r.done_t >= 0 and self.forget_after is not None:
            self.call_at(self.now() + self.forget_after, self._forget, r.rid)

    def _forget(self, rid: int) -> None:
        """Drop a finished request's state (a long-running server)."""
        self.seqs.pop(rid, None)
        self.reqs.pop(rid, None)

    def _tokens(self, items) -> None:
        for r, tok, t, final in items:
            self._token(r, tok, t, final)

    def decode(self, inst, batches, budget, on_done, stop_on_finish=False) -> None:
        op = _DecodeOp(inst, [list(b) for b in batches if b], budget, on_done, stop_on_finish)
        inst.busy = True
        inst.decoding = True
        self._ops[inst.iid] = op
        self._pending += 1
        self.workers[inst.iid].compute.submit(self._run_decode, op)

    def interrupt(self, inst: Instance) -> None:
        op = self._ops.get(inst.iid)
        if op is not None:
            with op.lock:
                op.interrupted = True

    def join(self, inst: Instance, reqs: list[Request], index: int = 0) -> bool:
        op = self._ops.get(inst.iid)
        if op is None:
            return False
        with op.lock:
            if op.closed:
                return False
            op.joins.append((index, list(reqs)))
        return True

    def _run_decode(self, op: _DecodeOp) -> None:
        """The decode loop (compute lane)."""
        w = self.workers[op.inst.iid]
        dev = self.spec.torch_device
        t_start = time.perf_counter()
        dbs = [
            DecodeBatch(w.module(b[0].model), [self._resident_seq(r, w) for r in b], dev)
            for b in op.batches
        ]
        models = [b[0].model for b in op.batches]
        first, budget_end, finished = True, math.inf, []
        while True:
            with op.lock:
                joins, op.joins = op.joins, []
                ending = not first and (op.interrupted or self.now() >= budget_end - 1e-9)
                if ending or (not joins and not any(db.seqs for db in dbs)):
                    op.closed = True
            for index, reqs in joins:
                running = {s.rid for db in dbs for s in db.seqs}
                new = [
                    self._resident_seq(r, w)
                    for r in reqs
                    if r.rid not in running and not self.seqs[r.rid].finished
                ]
                if index >= len(dbs):
                    model = reqs[0].model
                    dbs.append(DecodeBatch(w.module(model), [], dev))
                    models.append(model)
                db = dbs[index]
                have = {s.rid for s in db.seqs}
                db.assemble(db.split() + [s for s in new if s.rid not in have])
            if op.closed:
                break
            out = []
            stop = False
            step_t0 = time.perf_counter()
            for db in dbs:
                if not db.seqs:
                    continue
                toks = db.step()
                t = self.now()
                keep = []
                for i, (s, tok) in enumerate(zip(db.seqs, toks, strict=True)):
                    s.take(tok)
                    out.append((self.reqs[s.rid], tok, t, s.finished))
                    if s.finished:
                        finished.append(self.reqs[s.rid])
                        stop = True
                    else:
                        keep.append(i)
                db.drop(keep)
            self.post(self._tokens, out)
            self.steps += 1
            self.step_s += time.perf_counter() - step_t0
            if first:
                first = False
                if op.budget is not None:
                    budget_end = self.now() + op.budget
            if stop and op.stop:
                with op.lock:  # joins accepted before the close stay resident, not run
                    op.closed = True
                    op.joins = []
                break
        for db in dbs:
            self.forward_s += db.forward_s
            for s in db.split():
                s.kv_on = op.inst.iid
        for r in finished:
            self.seqs[r.rid].kv = None
        self.decode_s += time.perf_counter() - t_start
        t = self.now()
        self.post(self._done, self._decoded, op, tuple(finished), t, time.perf_counter() - t_start)

    def _resident_seq(self, r: Request, w: Worker) -> Seq:
        s = self.seqs[r.rid]
        s.wait_kv()
        if s.kv_on != w.iid or s.kv is None:
            raise RuntimeError(f"request {r.rid}: KV is not on instance {w.iid}")
        return s

    def _decoded(self, op: _DecodeOp, finished, t, took) -> None:
        inst = op.inst
        self._ops.pop(inst.iid, None)
        inst.busy = False
        inst.decoding = False
        self.sink.busy(inst, took)
        op.on_done(Done("decode", inst, finished, t))

    # --- KV cache ------------------------------------------------------------------------
    def _kv_on(self, iid: int) -> int:
        kv = self.kv_bytes_per_token
        return sum(s.kv_tokens * kv[s.model] for s in self.seqs.values() if s.kv_on == iid)

    def move_kv(self, reqs, src, dst, on_done) -> None:
        """Copy KV device -> host (src's d2h lane) -> device (dst's h2d lane). As in the
        simulator, `kv_at` names the destination from the call on; a computation or a
        later move of the same request waits until the copy has landed."""
        self._pending += 1
        seqs = [self.seqs[r.rid] for r in reqs]
        prev = [s.moving for s in seqs]
        landed = threading.Event()
        for s in seqs:
            s.moving = landed
        for r in reqs:
            r.kv_at = dst

        def copy_in():
            self._copy(seqs, dst, self.workers[dst.iid].h2d_link)
            landed.set()
            self.post(self._done, self._moved, reqs, dst, on_done)

        def copy_out():
            for e in prev:
                if e is not None:
                    e.wait()
            self._copy(seqs, None, self.workers[src.iid].d2h_link)
            if dst is None:
                landed.set()
                self.post(self._done, self._moved, reqs, dst, on_done)
            else:
                self.workers[dst.iid].h2d.submit(copy_in)

        def wait_then_in():
            for e in prev:
                if e is not None:
                    e.wait()
            copy_in()

        if src is not None:
            self.workers[src.iid].d2h.submit(copy_out)
        elif dst is not None:
            self.workers[dst.iid].h2d.submit(wait_then_in)
        else:
            landed.set()
            self.call_at(self.now(), self._done, self._moved, reqs, dst, on_done)

    def _copy(self, seqs: list[Seq], dst: Instance | None, link) -> None:
        import torch

        live = [
            s for s in seqs if s.kv is not None and s.kv_on != (None if dst is None else dst.iid)
        ]
        if dst is None:
            pin = self.spec.kind == "cuda"
            new = [torch.empty_like(s.kv, device="cpu", pin_memory=pin) for s in live]
        else:
            new = [torch.empty_like(s.kv, device=self.spec.torch_device) for s in live]
        link.copy(list(zip(new, [s.kv for s in live], strict=True)))
        for s, t in zip(live, new, strict=True):
            s.kv, s.kv_on = t, None if dst is None else dst.iid

    def _moved(self, reqs, dst, on_done) -> None:
        on_done(Done("move_kv", dst, tuple(reqs), self.now()))
