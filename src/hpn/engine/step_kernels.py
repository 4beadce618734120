"""The compiled code of the departure-batch steps (:mod:`hpn.engine.steps` calls it): each
kernel with the same floating-point operations in the same order as the numpy code it
replaces, and :func:`_kernel`, which compiles them on first use. The helpers ``_ledger_set`` and
``_prefetch`` come from :mod:`hpn.engine.kernels`; their edits recompile these kernels too
(:func:`hpn.jit.source_key` follows callees into other modules).
"""

from __future__ import annotations

import numpy as np

from hpn.engine import kernels as _k
from hpn.engine.kernels import HAVE_NUMBA
from hpn.jit import compile_in

_compiled: dict = {}
_ledger_set = _k._ledger_set  # LinkLedger.set for one link (compiled in `_kernel`)
_prefetch = _k._prefetch  # a cache-line hint (the numba intrinsic once `_kernel` ran)

__all__ = ["BEFORE", "GROW", "HAVE_NUMBA", "RESUME"]


def _cand_min(cand, lo, hi, fr, ordered):  # pragma: no cover
    # compiled. The candidates cand[lo:hi]: returns those kept, as cand[lo:hi] again, and
    # the earliest fin and soon among them (fr: FlowRec)
    sending, inc, fin, soon = fr.sending, fr.inc, fr.fin, fr.soon
    m = np.inf
    first = np.inf
    if ordered:  # by soon <= fin: stop at the first soon past the best fin
        h = lo
        for i in range(lo, hi):
            f = cand[i]
            if not sending[f]:
                if i == h:  # leading entries that stopped sending leave
                    h += 1
                    inc[f] = False
                continue
            if soon[f] < first:
                first = soon[f]
            if soon[f] > m:
                break
            if fin[f] < m:
                m = fin[f]
        return h, hi, m, first
    n = lo
    for i in range(lo, hi):
        f = cand[i]
        if sending[f]:
            cand[n] = f
            n += 1
            if fin[f] < m:
                m = fin[f]
            if soon[f] < first:
                first = soon[f]
        else:
            inc[f] = False
    return lo, n, m, first


def _cand_min_kernel(cand, fr, ordered):  # pragma: no cover - compiled
    return _cand_min(cand, 0, len(cand), fr, ordered)


def _end_batch(cand, lo, hi, fr, limit, now, pr, hops, flow_task, ordered):
    # pragma: no cover - compiled
    # FlowState.ending, then Sim._tx_done for those flows (all sending), with the times and
    # tasks of their completions sorted as EventQueue.push sorts them (np.lexsort), of the
    # candidates cand[lo:hi]; those kept are cand[lo:n] (fr: FlowRec, pr: PathRec)
    sending, inc, fin, soon, rate, rem, tx_end = fr
    start, length, links, latency = pr
    n = lo
    out = np.empty(hi - lo, np.int64)
    k = 0
    if ordered:  # by soon: stop at the first soon past the limit
        n = hi
        for i in range(lo, hi):
            f = cand[i]
            if not sending[f]:
                if i == lo:
                    lo += 1
                    inc[f] = False
                continue
            if soon[f] > limit:
                break
            if fin[f] <= limit or soon[f] <= now:
                out[k] = f
                k += 1
    else:
        for i in range(lo, hi):
            f = cand[i]
            if not sending[f]:
                inc[f] = False
                continue
            cand[n] = f
            n += 1
            if soon[f] <= limit and (fin[f] <= limit or soon[f] <= now):
                out[k] = f
                k += 1
    ended = np.sort(out[:k])
    old = np.empty(k, np.float64)
    times = np.empty(k, np.float64)
    ids = np.empty(k, np.int64)
    for i in range(min(k, 8)):  # the first flows' fields (the loop asks 8 flows ahead)
        f = ended[i]
        _prefetch(latency, f)
        _prefetch(flow_task, f)
        _prefetch(tx_end, f)
        _prefetch(rem, f)
    for i in range(k):
        if i + 8 < k:  # a later flow's fields, and a nearer one's links' hop counts
            f = ended[i + 8]
            _prefetch(latency, f)
            _prefetch(flow_task, f)
            _prefetch(tx_end, f)
            _prefetch(rem, f)
            _prefetch(start, f)
            _prefetch(length, f)
        if i + 2 < k:
            f = ended[i + 2]
            for j in range(start[f], start[f] + length[f]):
                _prefetch(hops, links[j])
        f = ended[i]
        old[i] = rate[f]
        for j in range(start[f], start[f] + length[f]):
            hops[links[j]] -= 1
        tx_end[f] = now
        rem[f] = 0.0
        rate[f] = 0.0
        fin[f] = np.inf
        soon[f] = np.inf
        sending[f] = False
        times[i] = now + latency[f]
        ids[i] = flow_task[f]
    by_id = np.argsort(ids, kind="mergesort")
    order = by_id[np.argsort(times[by_id], kind="mergesort")]
    times, ids = times[order], ids[order]
    bounds = np.empty(k + 1, np.int64)
    nb = 0
    for i in range(k):
        if i == 0 or times[i] != times[i - 1]:
            bounds[nb] = i
            nb += 1
    bounds[nb] = k
    return lo, n, ended, old, times, ids, bounds[: nb + 1]


def _batch_kernel(cand, fr, limit, now, pr, hops, flow_task, ordered):
    # pragma: no cover - compiled
    return _end_batch(cand, 0, len(cand), fr, limit, now, pr, hops, flow_task, ordered)


def _end_kernel(flows, now, fr, pr, hops):  # pragma: no cover - compiled
    sending, inc, fin, soon, rate, rem, tx_end = fr
    start, length, links = pr.start, pr.length, pr.links
    sent = np.empty(len(flows), np.int64)
    old = np.empty(len(flows), np.float64)
    n = 0
    for i in range(len(flows)):
        f = flows[i]
        if sending[f]:
            sent[n] = f
            old[n] = rate[f]
            n += 1
            for j in range(start[f], start[f] + length[f]):
                hops[links[j]] -= 1
    for i in range(len(flows)):
        f = flows[i]
        tx_end[f] = now
        rem[f] = 0.0
        rate[f] = 0.0
        fin[f] = np.inf
        soon[f] = np.inf
        sending[f] = False
    return sent[:n], old[:n]


AHEAD = 16  # prefetch distance, in links (windowed: a whole large batch would not fit)


def _release_kernel(gone, old, pr, stamp, now, led):  # pragma: no cover - compiled
    start, length, links = pr.start, pr.length, pr.links
    load, carried, busy, peak, since, cap_at, cap, on = led
    total = 0
    for i in range(len(gone)):
        total += length[gone[i]]
    hop = np.empty(total, np.int64)  # every hop's link, in hop order
    who = np.empty(total, np.int64)  # and its flow's position in gone
    h = 0
    for i in range(len(gone)):
        f = gone[i]
        for j in range(start[f], start[f] + length[f]):
            hop[h] = links[j]
            who[h] = i
            h += 1
    touched = np.empty(total, np.int64)
    acc = np.empty(total, np.float64)
    nt = 0
    for h in range(total):
        if h + AHEAD < total:
            _prefetch(stamp, hop[h + AHEAD])
        lk = hop[h]
        x = stamp[lk]
        if x < 0:
            x = nt
            stamp[lk] = nt
            touched[nt] = lk
            acc[nt] = 0.0
            nt += 1
        acc[x] += old[who[h]]
    for k in range(nt):
        if k + AHEAD < nt:
            ahead = touched[k + AHEAD]
            _prefetch(load, ahead)
            _prefetch(carried, ahead)
            _prefetch(cap_at, ahead)
            _prefetch(cap, ahead)
            _prefetch(on, ahead)
        lk = touched[k]
        stamp[lk] = -1
        v = load[lk] - acc[k]
        if not (v > 0.0 or v != v):  # np.maximum(v, 0.0)
            v = 0.0
        _ledger_set(lk, v, now, led)


def _quiet_kernel(gone, old, scan, xr, head, sending, rate):  # pragma: no cover - compiled
    # Sim._rates after departures only: whether no transmitting flow has a rate at or above
    # the floor (FlowState.at_least finds none), and the index's new head (xr: IndexRec)
    act, order, neg, extra, flagged = xr
    floor = np.inf
    for i in range(len(old)):
        if old[i] < floor:
            floor = old[i]
    if len(old):
        floor = floor * (1 - 1e-9)
    if not floor > 0:
        return False, head
    if scan:
        for f in act:
            if sending[f] and rate[f] >= floor:
                return False, head
        return True, head
    lo, hi = head, len(neg)  # the end of the entries with rate >= floor: -rate <= -floor
    while lo < hi:
        mid = (lo + hi) // 2
        if neg[mid] <= -floor:
            lo = mid + 1
        else:
            hi = mid
    while head < lo and not (sending[order[head]] and not flagged[order[head]]):
        head += 1  # ended or re-filled since the build: dropped, the order kept
    for j in range(head, lo):
        f = order[j]
        if sending[f] and not flagged[f]:
            return False, head
    for f in extra:
        if sending[f] and rate[f] >= floor:
            return False, head
    return True, head


def _depart_kernel(gone, old, scan, xr, head, fr, pr, stamp, now, led):
    # pragma: no cover - compiled
    # _quiet_kernel, then (if quiet) _release_kernel: one call for a quiet departure batch
    ok, head = _quiet_kernel(gone, old, scan, xr, head, fr.sending, fr.rate)
    if ok:
        _release_kernel(gone, old, pr, stamp, now, led)
    return ok, head


def _complete_kernel(tasks, now, finish, succ, off, indeg):  # pragma: no cover
    # compiled. TaskState.complete: every successor edge of the tasks takes one off its
    # task's count; the successors at 0 after all of them are ready, each once (a count set
    # to -1 marks one taken, and is set back to 0)
    total = 0
    for t in tasks:
        finish[t] = now
        for j in range(off[t], off[t + 1]):
            indeg[succ[j]] -= 1
            total += 1
    ready = np.empty(total, np.int64)
    k = 0
    for t in tasks:
        for j in range(off[t], off[t + 1]):
            s = succ[j]
            if indeg[s] == 0:
                indeg[s] = -1
                ready[k] = s
                k += 1
    ready = np.sort(ready[:k])
    for s in ready:
        indeg[s] = 0
    return ready


BEFORE, RESUME, GROW = 0, 1, 2  # where `run_quiet` stopped (see there)


def _lane_first(lt, ls, ln):  # pragma: no cover - compiled
    # the lane's earliest entry by (time, seq), and its time (-1 and inf if empty)
    best, bt, bs = -1, np.inf, 0
    for i in range(ln):
        if best < 0 or lt[i] < bt or (lt[i] == bt and ls[i] < bs):
            best, bt, bs = i, lt[i], ls[i]
    return best, bt


# fmt: off
def _run_kernel(
    cand, fr, xr, pr, led, lane, flow_task, hops, stamp, finish, succ_off, loop,
):  # pragma: no cover - compiled
    # Sim.run's iterations while each is a departure batch whose completions have no
    # successors and whose rates need no re-fill; see run_quiet. fr, xr, pr, led, lane:
    # FlowRec, IndexRec, PathRec, LedgerRec, LaneRec; loop: LoopRec (the scalars)
    sending, rate = fr.sending, fr.rate
    lt, ls, llo, lhi, lids = lane
    (
        c_lo, c_hi, ordered, top, n_act, soonest, head, stale, scan_max, done, nt, heap_t,
        seq, ln, lu, now, tick, max_batches, tol,
    ) = loop
    batches = popped = rates = 0
    code = BEFORE
    m = np.nan
    ended = np.empty(0, np.int64)
    old = np.empty(0, np.float64)
    k = 0
    while True:
        m = np.nan
        ended = np.empty(0, np.int64)
        old = np.empty(0, np.float64)
        if n_act == 0:  # FlowState.next_end
            m = np.inf
        else:
            c_lo, c_hi, mm, soonest = _cand_min(cand, c_lo, c_hi, fr, ordered)
            if mm > top:
                break  # the candidates are rebuilt (in Python)
            m = mm
        best, first = _lane_first(lt, ls, ln)
        t_next = min(min(heap_t, first), m)
        if done == nt or t_next == np.inf or tick < t_next or batches >= max_batches:
            break
        if heap_t <= t_next * (1 + 1e-15):
            break  # an event of the heap is due
        limit = t_next + (t_next - now) * tol + 1e-15
        need = c_hi - c_lo  # at most this many completions to queue
        if n_act and limit > top:
            break  # the candidates are rebuilt (in Python)
        if n_act and (ln + need > len(lt) or lu + need > len(lids)):
            lu = _lane_compact(llo, lhi, lids, ln)
            if ln + need > len(lt) or lu + need > len(lids):
                code = GROW
                break
        # the batch: Sim._advance, then Sim._end_transmissions
        now = t_next
        batches += 1
        k = 0
        if n_act and not soonest > limit:
            c_lo, c_hi, ended, old, times, ids, bounds = _end_batch(
                cand, c_lo, c_hi, fr, limit, now, pr, hops, flow_task, ordered
            )
            k = len(ended)
            n_act -= k
            for b in range(len(bounds) - 1):  # EventQueue.push_sorted, into the lane
                lt[ln], ls[ln], llo[ln], lhi[ln] = times[bounds[b]], seq, lu, lu
                for j in range(bounds[b], bounds[b + 1]):
                    lids[lu] = ids[j]
                    lu += 1
                lhi[ln] = lu
                ln += 1
                seq += 1
        # EventQueue.pop_due: the lane's completions due now (the heap has none due)
        lim = now * (1 + 1e-15)
        while ln:
            best, first = _lane_first(lt, ls, ln)
            if not first <= lim:
                break
            blocked = False
            for j in range(llo[best], lhi[best]):
                t = lids[j]
                if succ_off[t + 1] > succ_off[t]:
                    blocked = True
            if blocked:  # a successor may start: TaskState.complete in Python
                code = RESUME
                break
            for j in range(llo[best], lhi[best]):
                finish[lids[j]] = now
            cnt = lhi[best] - llo[best]
            done += cnt
            popped += cnt
            ln -= 1  # the last entry takes its place
            lt[best], ls[best], llo[best], lhi[best] = lt[ln], ls[ln], llo[ln], lhi[ln]
            if ln == 0:
                lu = 0
        if code == RESUME:
            break
        if k:  # Sim._rates: quiet departures only (FlowState.depart), else in Python
            scan = n_act <= scan_max
            if not scan and stale:
                code = RESUME
                break
            ok, head = _quiet_kernel(ended, old, scan, xr, head, sending, rate)
            if not ok:
                code = RESUME
                break
            _release_kernel(ended, old, pr, stamp, now, led)
            rates += 1
            k = 0
    if code != RESUME or not k:
        ended = np.empty(0, np.int64)
        old = np.empty(0, np.float64)
    _, first = _lane_first(lt, ls, ln)
    return (
        code, c_lo, c_hi, soonest, m, n_act, head, now, done, popped, batches, rates, seq,
        ln, lu, first, ended, old,
    )
# fmt: on


def _lane_compact(llo, lhi, lids, ln):  # pragma: no cover - compiled
    # the lane's ids moved to the front of lids, in entry order; the new end
    tmp = np.empty(lhi[:ln].sum() - llo[:ln].sum() if ln else 0, np.int64)
    u = 0
    for i in range(ln):
        for j in range(llo[i], lhi[i]):
            tmp[u] = lids[j]
            u += 1
    u = 0
    for i in range(ln):
        n = lhi[i] - llo[i]
        lids[u : u + n] = tmp[u : u + n]
        llo[i], lhi[i] = u, u + n
        u += n
    return u


def _kernel(name: str):
    if not _compiled:
        g = globals()
        g["_ledger_set"] = _k._helper("_ledger_set")
        g["_prefetch"] = _k._prefetch
        kernels = {
            "depart": "_depart_kernel", "cand_min": "_cand_min_kernel",
            "batch": "_batch_kernel", "end": "_end_kernel", "complete": "_complete_kernel",
            "run": "_run_kernel",
        }  # fmt: skip
        helpers = (
            "_quiet_kernel", "_release_kernel", "_cand_min", "_end_batch", "_lane_first",
            "_lane_compact",
        )  # fmt: skip
        _compiled.update(compile_in(g, helpers, kernels))
    return _compiled[name]
