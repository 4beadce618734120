"""The decode loop of one instance (its compute lane), with paged-KV admission.

Each step, as vLLM v1's scheduler (`vllm/v1/core/sched/scheduler.py`, `schedule`):

1. requests their clients aborted leave the batch (blocks freed);
2. running requests, oldest first, get the slot of the token they feed
   (`KVManager.allocate_slots`); when the pool is short, the newest running request is
   preempted (``PreemptionMode.RECOMPUTE``: its blocks go back to the pool, and with them
   its KV), and again, until the rest fit;
3. preempted requests, oldest first, are re-admitted while their whole context fits in the
   free blocks: one forward over prompt and output rebuilds their KV (greedy tokens are
   unchanged by it), and they rejoin their batch;
4. one forward per same-model batch; finished requests leave.

A prefill takes the blocks of its prompts (`admit`); when they are short it waits for KV
already leaving the instance, else preempts the instance's resident requests, newest
first (the pool policy owns the waiting queue, so a prefill it starts is admitted).
"""

from __future__ import annotations

import math
import time

from hpn.serve.runner import DecodeBatch, Seq, prefill


def admit(be, iid: int, seqs: list[Seq]):
    """Prefill `seqs` on instance `iid` in chunks whose prompts' blocks are free (a
    generator: the caller prefills each chunk before the next is admitted). A prompt that
    finds no free block waits for KV already leaving the instance, else preempts the
    instance's newest resident request (those of earlier chunks included)."""
    kvm = be.kv[iid]
    pending = list(seqs)
    while pending:
        chunk = []
        for s in pending:
            if not kvm.allocate_slots(s.rid, len(s.prompt)):
                break
            chunk.append(s)
        if not chunk:
            s = pending[0]
            while not kvm.allocate_slots(s.rid, len(s.prompt)):
                if not _evict_other(be, kvm, {x.rid for x in pending}):
                    if not _leaving(be, kvm):
                        raise RuntimeError(
                            f"request {s.rid}: {len(s.prompt)} prompt tokens exceed the KV pool"
                        )
                    kvm.wait_freed(0.05)
            chunk = [s]
        yield chunk
        pending = pending[len(chunk) :]


def _leaving(be, kvm) -> bool:
    """Whether KV of this instance is being copied out (its blocks free when it lands)."""
    for rid in list(kvm.tables):
        v = be.seqs.get(rid)
        if v is not None and v.moving is not None and not v.moving.is_set():
            return True
    return False


def preempt(be, s: Seq) -> None:
    """Drop `s`'s KV and blocks; it is recomputed when blocks free (any lane)."""
    be._release(s)
    s.preempted = True
    be.post(be._preempted, s.rid)


def _age(be, s: Seq):
    r = be.reqs.get(s.rid)
    return (r.arrival if r is not None else math.inf, s.rid)


def run_decode(be, op) -> None:
    """The decode operation `op` on its instance's compute lane."""
    w = be.workers[op.inst.iid]
    kvm = be.kv[op.inst.iid]
    t_start = time.perf_counter()
    dbs: list[DecodeBatch] = []
    models: list[str] = []
    ended: list = []  # requests finished or aborted during the operation
    out: list = []

    def add(index: int, reqs) -> None:
        while index >= len(dbs):
            model = reqs[0].model
            dbs.append(DecodeBatch(w.module(model), [], kvm))
            models.append(model)
        db = dbs[index]
        have = {s.rid for d in dbs for s in d.seqs} | {s.rid for _, s in op.waiting}
        new = []
        for r in reqs:
            s = be.seqs[r.rid]
            if r.rid in have or s.finished:
                continue
            s.wait_kv()
            if s.preempted or not (s.kv is not None or kvm.holds(s.rid)):
                s.preempted = True
                s.kv_on = op.inst.iid
                op.waiting.append((index, s))
            elif s.kv_on != w.iid:
                raise RuntimeError(f"request {r.rid}: KV is not on instance {w.iid}")
            else:
                new.append(s)
        if new:
            db.assemble(db.split() + new)

    for i, b in enumerate(op.batches):
        add(i, b)
    first, budget_end = True, math.inf
    while True:
        with op.lock:
            joins, op.joins = op.joins, []
            ending = not first and (op.interrupted or be.now() >= budget_end - 1e-9)
        for index, reqs in joins:
            add(index, reqs)
        stop = _leave_cancelled(be, dbs, op, ended, out)
        with op.lock:
            idle = not op.joins and not any(db.seqs for db in dbs) and not op.waiting
            if ending or idle or (stop and op.stop):
                op.closed = True
                op.joins = []
        if out:
            be.post(be._tokens, out)
            out = []
        if op.closed:
            break
        _slots(be, kvm, dbs, op)
        _readmit(be, kvm, dbs, op, w)
        step_t0 = time.perf_counter()
        for db in dbs:
            if not db.seqs:
                continue
            toks = db.step()
            t = be.now()
            keep = []
            for i, (s, (tok, lp)) in enumerate(zip(db.seqs, toks, strict=True)):
                s.take(tok, lp)
                out.append((be.reqs[s.rid], tok, t, s.finished))
                if s.finished:
                    ended.append(be.reqs[s.rid])
                    stop = True
                else:
                    keep.append(i)
            db.drop(keep)
        be.post(be._tokens, out)
        out = []
        be.steps += 1
        be.step_s += time.perf_counter() - step_t0
        if first:
            first = False
            if op.budget is not None:
                budget_end = be.now() + op.budget
        if stop and op.stop:
            with op.lock:  # joins accepted before the close stay resident, not run
                op.closed = True
                op.joins = []
            break
    for db in dbs:
        be.forward_s += db.forward_s
        for s in db.split():
            s.kv_on = op.inst.iid
    for r in ended:
        be._release(be.seqs[r.rid])
    be.decode_s += time.perf_counter() - t_start
    t = be.now()
    be.post(be._done, be._decoded, op, tuple(ended), t, time.perf_counter() - t_start)


def _leave_cancelled(be, dbs, op, ended, out) -> bool:
    """Aborted requests leave at this step boundary; whether any did."""
    t = be.now()
    gone = []
    for db in dbs:
        keep = [i for i, s in enumerate(db.seqs) if not s.cancelled]
        if len(keep) < len(db.seqs):
            gone += [s for s in db.seqs if s.cancelled]
            db.drop(keep)
    gone += [s for _, s in op.waiting if s.cancelled]
    op.waiting = [(i, s) for i, s in op.waiting if not s.cancelled]
    for s in gone:
        s.drop_step = be.steps
        be._release(s)
        s.finished = True
        r = be.reqs[s.rid]
        ended.append(r)
        out.append((r, None, t, True))
    return bool(gone)


def _slots(be, kvm, dbs, op) -> None:
    """Every running request gets the slot of the token it feeds; the newest are
    preempted while the pool is short."""
    running = sorted(
        ((s, i) for i, db in enumerate(dbs) for s in db.seqs), key=lambda x: _age(be, x[0])
    )
    out: set[int] = set()
    for s, _ in running:
        if s.rid in out:
            continue
        while not kvm.allocate_slots(s.rid, s.kv_tokens + 1):
            v, vi = next((x for x in reversed(running) if x[0].rid not in out), (s, 0))
            out.add(v.rid)
            kvm.free(v.rid)
            op.waiting.append((vi, v))
            if v is s:
                break
    if not out:
        return
    for db in dbs:
        if any(s.rid in out for s in db.seqs):
            keep = [k for k, s in enumerate(db.seqs) if s.rid not in out]
            victims = [s for s in db.seqs if s.rid in out]
            db.drop(keep)
            for s in victims:
                preempt(be, s)


def _evict_other(be, kvm, ours: set[int]) -> bool:
    """Preempt the newest resident request outside `ours` (not leaving); whether one was."""
    victims = []
    for rid in list(kvm.tables):
        v = be.seqs.get(rid)
        if v is None or rid in ours or (v.moving is not None and not v.moving.is_set()):
            continue
        victims.append(v)
    if not victims:
        return False
    preempt(be, max(victims, key=lambda x: _age(be, x)))
    return True


def _readmit(be, kvm, dbs, op, w) -> None:
    """Preempted requests, oldest first, recomputed while their context fits."""
    if not op.waiting:
        return
    op.waiting.sort(key=lambda x: _age(be, x[1]))
    back: dict[int, list[Seq]] = {}
    ours = {s.rid for _, s in op.waiting} | {s.rid for db in dbs for s in db.seqs}
    while op.waiting:
        index, s = op.waiting[0]
        if not kvm.allocate_slots(s.rid, s.kv_tokens + 1):
            if any(db.seqs for db in dbs) or back:
                break  # FCFS: the next ones wait behind it
            # nothing runs: KV of requests outside this operation makes room
            if not _evict_other(be, kvm, ours):
                kvm.wait_freed(0.05)
            return
        op.waiting.pop(0)
        back.setdefault(index, []).append(s)
    for index, seqs in back.items():
        prefill(w.module(seqs[0].model), seqs, kvm, recompute=True)
        for s in seqs:
            s.preempted = False
            s.kv_on = op.inst.iid
        db = dbs[index]
        db.assemble(db.split() + seqs)
