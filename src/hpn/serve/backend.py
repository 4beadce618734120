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
import math
import threading
import time
from collections.abc import Sequence

import numpy as np

from hpn.pool.backend import Cluster, Done, Instance, MetricsSink
from hpn.pool.requests import Request
from hpn.serve.clock import EngineError, WallClock
from hpn.serve.decoding import admit, run_decode
from hpn.serve.device import DeviceSpec, Link, check_fits, device_free
from hpn.serve.kv import BLOCK_TOKENS, KVManager
from hpn.serve.paged import KVStore, swap
from hpn.serve.runner import Seq, prefill
from hpn.serve.weights import HostModel
from hpn.serve.workers import Worker

__all__ = ["EngineBackend", "EngineError", "kv_blocks"]

KV_FLOOR_BLOCKS = 1024  # pre-loading needs this much KV room left (as the simulator)


def kv_blocks(hosts: dict[str, HostModel], spec: DeviceSpec, override: int | None = None):
    """(blocks per instance, bytes per block): the budget left by the largest model's
    weights in blocks of `BLOCK_TOKENS` tokens of the largest KV per token (vLLM sizes
    its pool from the memory left after the weights; `override` as its
    ``num_gpu_blocks_override``, here only lower)."""
    per_tok = max(h.info.kv_bytes_per_token(spec.elem_bytes) for h in hosts.values())
    block_bytes = BLOCK_TOKENS * per_tok
    free = spec.memory_bytes - max(h.nbytes for h in hosts.values())
    n = max(0, free // block_bytes)
    if override is not None:
        n = min(n, override)
    return int(n), int(block_bytes)


class _DecodeOp:
    """One running decode operation (shared by the scheduler and the compute lane)."""

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
        self.waiting: list[tuple[int, Seq]] = []  # preempted: (batch index, seq)
        self.interrupted = False
        self.closed = False


class EngineBackend(WallClock):
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
    blocks
        KV blocks per instance at most (default: what the memory budget holds).
    startup_s
        A cold scale-up lasts at least this long before its weights are copied (the
        policy's configured engine start-up; 0: the build alone, as measured).
    """

    def __init__(
        self,
        cluster: Cluster,
        sink: MetricsSink,
        hosts: dict[str, HostModel],
        spec: DeviceSpec,
        cold_start: bool = False,
        blocks: int | None = None,
        startup_s: float = 0.0,
    ):
        super().__init__(cluster, sink)
        self.cold_start = cold_start
        self.startup_s = startup_s
        self.hosts = hosts
        self.spec = spec
        n_blocks, self.block_bytes = kv_blocks(hosts, spec, blocks)
        if n_blocks < 1:
            raise ValueError("the device budget leaves no room for one KV block")
        n, weights = len(self.instances), max(h.nbytes for h in hosts.values())
        need = n * (n_blocks * self.block_bytes + weights)  # before any thread or pool
        check_fits(spec, need, f"the KV pools and largest model of {n} instance(s)")
        self.workers = {
            i.iid: Worker(i.iid, spec, hosts, self._worker_error) for i in self.instances
        }
        self.seqs: dict[int, Seq] = {}
        self.reqs: dict[int, Request] = {}
        self._undelivered = 0  # arrivals of `run` not yet handed to the policy
        self._ops: dict[int, _DecodeOp] = {}
        # decode-loop accounting: steps, seconds in steps, in forwards, in decode operations
        self.steps, self.step_s, self.forward_s, self.decode_s = 0, 0.0, 0.0, 0.0
        self.forget_after: float | None = None  # seconds after finishing; None: keep
        self.kv_bytes_per_token = {
            m: h.info.kv_bytes_per_token(spec.elem_bytes) for m, h in hosts.items()
        }
        elems = self.block_bytes // spec.elem_bytes
        self.kv = {
            i.iid: KVManager(
                n_blocks,
                BLOCK_TOKENS,
                KVStore(n_blocks, elems, BLOCK_TOKENS, spec.torch_device, spec.torch_dtype),
            )
            for i in self.instances
        }
        self.preemptions = 0

    @property
    def max_context(self) -> int:
        """Tokens one request may hold (the whole pool of an instance)."""
        return next(iter(self.kv.values())).capacity_tokens

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

    def _idle(self) -> bool:
        """No operation running and every request delivered and finished or failed
        (policies may keep periodic timers, e.g. serverless's autoscaler tick)."""
        if self._pending or self._undelivered:
            return False
        return all(r.done_t >= 0 or r.failed for r in self.reqs.values())

    def _deliver(self, on_arrival, r: Request) -> None:
        self._undelivered -= 1
        on_arrival(r)

    def close(self) -> None:
        """Stop the worker threads (after `stop`)."""
        for w in self.workers.values():
            w.close()

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
                w.copy_in(model, self.cold_start, self.startup_s)
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
        free = device_free(self.spec)  # CUDA: the KV pool is allocated whole, not by use
        if free is not None and need > free:
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
            self.post(self._scheduled, reqs, self.now())
            res: dict[int, tuple] = {}
            for chunk in admit(self, inst.iid, [s for s in seqs if not s.cancelled]):
                toks = prefill(w.module(model), chunk, self.kv[inst.iid])
                for s, (tok, lp) in zip(chunk, toks, strict=True):
                    s.kv_on = inst.iid
                    s.take(tok, lp)
                    res[s.rid] = (tok, s.finished)
                    if s.finished:
                        self._release(s)
            t = self.now()
            took = time.perf_counter() - t0
            out = [res.get(r.rid) for r in reqs]
            self.post(self._done, self._prefilled, inst, reqs, out, t, took, on_done)

        w.compute.submit(job)

    def _scheduled(self, reqs: list[Request], t: float) -> None:
        scheduled = getattr(self.sink, "scheduled", None)
        if scheduled is not None:
            for r in reqs:
                if r.generated == 0:
                    scheduled(r, t)

    def _prefilled(self, inst, reqs, out, t, took, on_done) -> None:
        for r, res in zip(reqs, out, strict=True):
            if res is None:  # aborted before its prefill
                self._ended(r, t)
                continue
            self._token(r, res[0], t, res[1])
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
        if r.done_t >= 0:  # metrics first: a client woken by its last token may read them
            self._finished(r)
        if seq.on_token is not None:
            seq.on_token(r, seq, tok, t)

    def _finished(self, r: Request) -> None:
        ended = getattr(self.sink, "ended", None)
        if ended is not None:
            ended(r, self.seqs[r.rid])
        if self.forget_after is not None:
            self.call_at(self.now() + self.forget_after, self._forget, r.rid)

    def abort(self, rid: int, reason: str = "abort") -> None:
        """End request `rid` at its next step boundary (scheduler thread): it leaves its
        batch, its blocks are freed and the policy sees it finished; `reason` (abort, or
        stop for a stop string the server matched) goes to the metrics."""
        s, r = self.seqs.get(rid), self.reqs.get(rid)
        if s is None or r is None or r.done_t >= 0 or r.failed or s.cancelled:
            return
        s.end_reason = reason
        s.cancel_step = self.steps
        s.cancelled = True

    def _ended(self, r: Request, t: float) -> None:
        """An aborted request leaves (scheduler thread): done with what it generated."""
        if r.done_t >= 0:
            return
        r.output_len = r.generated
        r.done_t = t
        if r.generated == 0:
            r.last_t = t
        self._finished(r)

    def _release(self, s: Seq) -> None:
        """Drop a request's KV and blocks wherever they are (any thread)."""
        s.kv = None
        if s.kv_on is not None:
            self.kv[s.kv_on].free(s.rid)

    def _forget(self, rid: int) -> None:
        """Drop a finished request's state (a long-running server)."""
        s = self.seqs.pop(rid, None)
        if s is not None and s.kv_on is not None:
            self.kv[s.kv_on].free(rid)
        self.reqs.pop(rid, None)

    def _tokens(self, items) -> None:
        for r, tok, t, final in items:
            if tok is None:
                self._ended(r, t)
            else:
                self._token(r, tok, t, final)

    def _preempted(self, rid: int) -> None:
        self.preemptions += 1
        note = getattr(self.sink, "preempted", None)
        r = self.reqs.get(rid)
        if note is not None and r is not None:
            note(r)

    def decode(self, inst, batches, budget, on_done, stop_on_finish=False) -> None:
        op = _DecodeOp(inst, [list(b) for b in batches if b], budget, on_done, stop_on_finish)
        inst.busy = True
        inst.decoding = True
        self._ops[inst.iid] = op
        self._pending += 1
        self.workers[inst.iid].compute.submit(run_decode, self, op)

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

    def _decoded(self, op: _DecodeOp, finished, t, took) -> None:
        inst = op.inst
        self._ops.pop(inst.iid, None)
        inst.busy = False
        inst.decoding = False
        self.sink.busy(inst, took)
        op.on_done(Done("decode", inst, finished, t))

    # --- KV cache ------------------------------------------------------------------------
    def _kv_on(self, iid: int) -> int:
        """Bytes of the blocks in use on instance `iid`."""
        return self.kv[iid].used_blocks() * self.block_bytes

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
        """Copy KV to `dst` (None: host), blocks freed at the source and taken at the
        destination; a KV finding no free blocks there is dropped (preempted: the
        decode loop recomputes it), as is one of a request already gone."""
        swap(self, seqs, dst, link)

    def _moved(self, reqs, dst, on_done) -> None:
        on_done(Done("move_kv", dst, tuple(reqs), self.now()))
