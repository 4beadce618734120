"""Compiled steps of a departure batch (numba, the ``fast`` extra).

A batch in which flows only end costs a few small array operations: find the next ends among
the candidates, end those flows, take their rates off the links they crossed. In numpy each
is a handful of calls on a few elements, so the per-call overhead dominates over ~10^4
batches; these kernels do each step in one call, with the same floating-point operations in
the same order as the numpy code they replace (which runs when numba is missing):

- :func:`candidates_min`: :meth:`FlowState.next_end` over the candidates;
- :func:`end_batch`: :meth:`FlowState.ending` plus the end test of
  ``Sim._end_transmissions``, then ``Sim._tx_done`` for those flows (their completions
  sorted as :meth:`EventQueue.push` sorts them);
- :func:`end_flows`: ``Sim._tx_done``'s hop counts and :meth:`FlowState.end`;
- :func:`depart`: ``Sim._rates`` when only departures happened: whether a flow is at or
  above the floor (:meth:`FlowState.at_least`, through the rate index or a scan); if none
  is, no rate changes, and each link's load loses the departed rates (summed in hop order,
  as ``np.bincount``), clipped at 0 and booked (:meth:`LinkLedger.set`);
- :func:`complete`: :meth:`TaskState.complete` (finish times, predecessor counts, the
  successors that became ready).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpn.engine import kernels as _k
from hpn.engine.kernels import HAVE_NUMBA
from hpn.jit import compile_in

_compiled: dict = {}
_ledger_set = _k._ledger_set  # LinkLedger.set for one link (compiled in `_kernel`)
_prefetch = _k._prefetch  # a cache-line hint (the numba intrinsic once `_kernel` ran)

__all__ = [
    "HAVE_NUMBA", "candidates_min", "complete", "depart", "end_batch", "end_flows", "run_quiet",
]  # fmt: skip


def _cand_min(cand, lo, hi, sending, inc, fin, soon, ordered):  # pragma: no cover
    # compiled. The candidates cand[lo:hi]: returns those kept, as cand[lo:hi] again, and
    # the earliest fin and soon among them
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


def _cand_min_kernel(cand, sending, inc, fin, soon, ordered):  # pragma: no cover - compiled
    return _cand_min(cand, 0, len(cand), sending, inc, fin, soon, ordered)


def _end_batch(
    cand,
    lo,
    hi,
    sending,
    inc,
    soon,
    fin,
    limit,
    now,
    rate,
    rem,
    tx_end,
    start,
    length,
    links,
    hops,
    latency,
    flow_task,
    ordered,
):  # pragma: no cover - compiled
    # FlowState.ending, then Sim._tx_done for those flows (all sending), with the times and
    # tasks of their completions sorted as EventQueue.push sorts them (np.lexsort), of the
    # candidates cand[lo:hi]; those kept are cand[lo:n]
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


# fmt: off
def _batch_kernel(
    cand, sending, inc, soon, fin, limit, now, rate, rem, tx_end, start, length, links, hops,
    latency, flow_task, ordered,
):  # pragma: no cover - compiled
    return _end_batch(
        cand, 0, len(cand), sending, inc, soon, fin, limit, now, rate, rem, tx_end, start,
        length, links, hops, latency, flow_task, ordered,
    )
# fmt: on


def _end_kernel(flows, now, sending, rate, rem, fin, soon, tx_end, start, length, links, hops):
    # pragma: no cover - compiled
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


def _release_kernel(
    gone, old, start, length, links, stamp, now, load, carried, busy, peak, since, cap_at, cap, on
):  # pragma: no cover - compiled
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
        _ledger_set(lk, v, now, load, carried, busy, peak, since, cap_at, cap, on)


def _quiet_kernel(
    gone, old, scan, act, order, neg, head, extra, flagged, sending, rate
):  # pragma: no cover - compiled
    # Sim._rates after departures only: whether no transmitting flow has a rate at or above
    # the floor (FlowState.at_least finds none), and the index's new head
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


def _depart_kernel(
    gone,
    old,
    scan,
    act,
    order,
    neg,
    head,
    extra,
    flagged,
    sending,
    rate,
    start,
    length,
    links,
    stamp,
    now,
    load,
    carried,
    busy,
    peak,
    since,
    cap_at,
    cap,
    on,
):  # pragma: no cover - compiled
    # _quiet_kernel, then (if quiet) _release_kernel: one call for a quiet departure batch
    ok, head = _quiet_kernel(gone, old, scan, act, order, neg, head, extra, flagged, sending, rate)
    if ok:
        _release_kernel(
            gone,
            old,
            start,
            length,
            links,
            stamp,
            now,
            load,
            carried,
            busy,
            peak,
            since,
            cap_at,
            cap,
            on,
        )
    return ok, head


def _complete_kernel(tasks, now, finish, succ, off, indeg, stamp):  # pragma: no cover
    # compiled. TaskState.complete: every successor edge of the tasks takes one off its
    # task's count; the successors at 0 after all of them (each once: stamp) are ready
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
            if indeg[s] == 0 and stamp[s] < 0:
                stamp[s] = 0
                ready[k] = s
                k += 1
    ready = np.sort(ready[:k])
    for s in ready:
        stamp[s] = -1
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
    cand, c_lo, c_hi, ordered, top, n_act, soonest, sending, inc, fin, soon, rate, rem,
    tx_end, act, order, neg, head, extra, flagged, stale, scan_max, start, length, links,
    latency, flow_task, hops, stamp, load, carried, busy, peak, since, cap_at, cap, on,
    finish, succ_off, done, nt, heap_t, seq, lt, ls, llo, lhi, lids, ln, lu, now, tick,
    max_batches, tol,
):  # pragma: no cover - compiled
    # Sim.run's iterations while each is a departure batch whose completions have no
    # successors and whose rates need no re-fill; see run_quiet
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
            c_lo, c_hi, mm, soonest = _cand_min(cand, c_lo, c_hi, sending, inc, fin, soon, ordered)
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
                cand, c_lo, c_hi, sending, inc, soon, fin, limit, now, rate, rem, tx_end,
                start, length, links, hops, latency, flow_task, ordered,
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
            ok, head = _quiet_kernel(
                ended, old, scan, act, order, neg, head, extra, flagged, sending, rate
            )
            if not ok:
                code = RESUME
                break
            _release_kernel(
                ended, old, start, length, links, stamp, now, load, carried, busy, peak,
                since, cap_at, cap, on,
            )
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


def depart(
    fl: Any,
    ledger: Any,
    path: Any,
    stamp: np.ndarray,
    gone: np.ndarray,
    old: np.ndarray,
    now: float,
    scan: bool,
) -> bool:
    """If no transmitting flow of ``fl`` is at or above the floor that the departures
    ``gone`` (rates ``old`` before) set in :meth:`hpn.engine.sim.Sim._rates`, no rate
    changes: take those rates off the loads of the links they crossed, at ``now``.

    Parameters
    ----------
    fl
        The :class:`~hpn.engine.state.FlowState` (its rate index is built unless ``scan``;
        the head of the index may move past entries that ended).
    ledger
        The :class:`~hpn.engine.links.LinkLedger`, booked in place.
    path
        The :class:`~hpn.engine.state.PathTable`.
    stamp
        Scratch indexed by link id, all -1 (left so).
    gone, old
        The departed flows and their rates before, bytes/s.
    now
        Time of the change, s.
    scan
        Look at every transmitting flow (few of them) instead of the rate index.

    Returns
    -------
    bool
        True if no flow is re-filled (and the loads were booked).
    """
    ix = fl.by_rate
    ok, ix.head = _kernel("depart")(
        gone,
        old,
        scan,
        fl.act,
        ix.order,
        ix.neg,
        ix.head,
        ix.extra,
        ix.flagged,
        fl.sending,
        fl.rate,
        path.start,
        path.length,
        path.links,
        stamp,
        float(now),
        ledger.load,
        ledger.bytes,
        ledger.busy,
        ledger.peak,
        ledger.since,
        ledger.cap_at,
        ledger.cap,
        ledger.on,
    )
    return bool(ok)


def run_quiet(sim: Any, max_batches: int, scan_max: int, tol: float) -> tuple:
    """Run ``sim``'s loop (:meth:`hpn.engine.sim.Sim.run`) in one compiled call for as long
    as every batch is a quiet departure: flows end (or only completions of earlier ends
    fall due), their tasks have no successors, and no rate changes (no flow is at or above
    the floor their rates set, :meth:`~hpn.engine.state.FlowState.depart`). Completions are
    queued in the queue's lane (:class:`~hpn.engine.state.Lane`), in heap order with the
    heap's entries. The steps are the ones of the Python loop, in the same order, with the
    same arithmetic.

    Parameters
    ----------
    sim
        The :class:`~hpn.engine.sim.Sim`, with no re-fill pending (its state is updated).
    max_batches
        At most this many batches.
    scan_max
        :data:`hpn.engine.state.SCAN`.
    tol
        The relative tolerance of ends in one batch.

    Returns
    -------
    tuple
        (where it stopped: `BEFORE` a batch that it does not take, `RESUME` inside one whose
        completions or rates the Python loop takes from its `pop_due`, `GROW` before one that
        needs a larger lane; the earliest projected end if it stopped `BEFORE` with it known,
        else nan; the batches it took; the rate computations it did; for `RESUME`, the
        flows that ended in the batch and their rates before).
    """
    fl, task, path, ledger, q = sim.flow, sim.task, sim.path, sim.ledger, sim.queue
    ix, lane = fl.by_rate, q.lane
    r = _kernel("run")(
        fl.cand, 0, len(fl.cand), bool(fl.ordered), float(fl.top), int(fl.n_act),
        float(fl.soonest), fl.sending, fl.inc, fl.fin, fl.soon, fl.rate, fl.rem, fl.tx_end,
        fl.act, ix.order, ix.neg, int(ix.head), ix.extra, ix.flagged, bool(ix.stale),
        int(scan_max), path.start, path.length, path.links, path.latency, sim.t.flow_task,
        sim.hops, sim.stamp, ledger.load, ledger.bytes, ledger.busy, ledger.peak,
        ledger.since, ledger.cap_at, ledger.cap, ledger.on, task.finish, task.succ_off,
        int(task.done), int(sim.nt), float(q.heap[0][0]) if q.heap else np.inf, int(q.seq),
        lane.t, lane.seq, lane.lo, lane.hi, lane.ids, int(lane.n), int(lane.used),
        float(sim.now), float(sim.sampler.next_tick), int(max_batches), float(tol),
    )  # fmt: skip
    code, c_lo, c_hi, fl.soonest, m, fl.n_act, ix.head, sim.now, task.done = r[:9]
    popped, batches, rates, q.seq, lane.n, lane.used, first, ended, old = r[9:]
    fl.cand = fl.cand[c_lo:c_hi]
    lane.first = float(first)
    q.popped += popped
    return int(code), float(m), int(batches), int(rates), ended, old


def candidates_min(fl: Any) -> float:
    """Drop the candidates of ``fl`` that stopped sending; the earliest projected end
    among the others (inf if none). Their earliest ``soon`` goes to ``fl.soonest``.

    Parameters
    ----------
    fl
        The :class:`~hpn.engine.state.FlowState` (its candidates are compacted in place).

    Returns
    -------
    float
        The earliest ``fin`` of a candidate.
    """
    lo, hi, m, first = _kernel("cand_min")(fl.cand, fl.sending, fl.inc, fl.fin, fl.soon, fl.ordered)
    fl.cand = fl.cand[lo:hi]
    fl.soonest = float(first)
    return float(m)


def end_batch(
    fl: Any, path: Any, hops: np.ndarray, flow_task: np.ndarray, limit: float, now: float
) -> tuple[np.ndarray, ...]:
    """End the candidates of ``fl`` whose transmission ends by ``limit`` (as
    :meth:`~hpn.engine.state.FlowState.ending` finds them) at ``now``.

    Parameters
    ----------
    fl
        The :class:`~hpn.engine.state.FlowState` (its candidates are compacted in place).
    path
        The :class:`~hpn.engine.state.PathTable`.
    hops
        Hops of transmitting flows per link, updated in place.
    flow_task
        Task of each flow.
    limit
        Latest end time in the batch, s.
    now
        The batch's time, s.

    Returns
    -------
    tuple of numpy.ndarray
        The flows ended (sorted) and their rates before; the times and tasks of their
        completions, sorted by time then task, and where each distinct time begins (and the
        end).
    """
    lo, hi, ended, old, times, ids, bounds = _kernel("batch")(
        fl.cand,
        fl.sending,
        fl.inc,
        fl.soon,
        fl.fin,
        limit,
        now,
        fl.rate,
        fl.rem,
        fl.tx_end,
        path.start,
        path.length,
        path.links,
        hops,
        path.latency,
        flow_task,
        fl.ordered,
    )
    fl.cand = fl.cand[lo:hi]
    fl.n_act -= len(ended)
    return ended, old, times, ids, bounds


def end_flows(
    fl: Any, path: Any, hops: np.ndarray, flows: np.ndarray, now: float
) -> tuple[np.ndarray, np.ndarray]:
    """End ``flows`` at ``now``: the hop counts of those sending drop.

    Parameters
    ----------
    fl
        The :class:`~hpn.engine.state.FlowState`.
    path
        The :class:`~hpn.engine.state.PathTable`.
    hops
        Hops of transmitting flows per link, updated in place.
    flows
        The flows that end.
    now
        Their end of transmission, s.

    Returns
    -------
    tuple of numpy.ndarray
        The flows that were sending, and their rates before.
    """
    sent, old = _kernel("end")(
        flows,
        now,
        fl.sending,
        fl.rate,
        fl.rem,
        fl.fin,
        fl.soon,
        fl.tx_end,
        path.start,
        path.length,
        path.links,
        hops,
    )
    fl.n_act -= len(sent)
    return sent, old


def complete(task: Any, tasks: np.ndarray, now: float) -> np.ndarray:
    """:meth:`~hpn.engine.state.TaskState.complete` in one call: ``tasks`` finish at ``now``.

    Parameters
    ----------
    task
        The :class:`~hpn.engine.state.TaskState` (finish times and predecessor counts
        updated in place; its ``stamp`` scratch is left all -1).
    tasks
        The tasks that finished.
    now
        The time, s.

    Returns
    -------
    numpy.ndarray
        The successors whose last predecessor finished, sorted, each once.
    """
    return _kernel("complete")(
        tasks, float(now), task.finish, task.succ, task.succ_off, task.indeg, task.stamp
    )
