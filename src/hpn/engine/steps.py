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

__all__ = ["HAVE_NUMBA", "candidates_min", "complete", "depart", "end_batch", "end_flows"]


def _cand_min_kernel(cand, sending, inc, fin, soon, ordered):  # pragma: no cover - compiled
    # returns the candidates kept as cand[lo:hi], the earliest fin and soon among them
    m = np.inf
    first = np.inf
    if ordered:  # by soon <= fin: stop at the first soon past the best fin
        h = 0
        for i in range(len(cand)):
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
        return h, len(cand), m, first
    n = 0
    for i in range(len(cand)):
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
    return 0, n, m, first


def _batch_kernel(
    cand,
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
    # tasks of their completions sorted as EventQueue.push sorts them (np.lexsort); the
    # candidates kept are cand[lo:n]
    lo, n = 0, 0
    out = np.empty(len(cand), np.int64)
    k = 0
    if ordered:  # by soon: stop at the first soon past the limit
        n = len(cand)
        for i in range(len(cand)):
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
        for i in range(len(cand)):
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
    for i in range(k):  # the ended flows' fields and their links' hop counts, asked for first
        f = ended[i]
        _prefetch(latency, f)
        _prefetch(flow_task, f)
        _prefetch(tx_end, f)
        _prefetch(rem, f)
        for j in range(start[f], start[f] + length[f]):
            _prefetch(hops, links[j])
    old = np.empty(k, np.float64)
    times = np.empty(k, np.float64)
    ids = np.empty(k, np.int64)
    for i in range(k):
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


def _release_kernel(
    gone, old, start, length, links, stamp, now, load, carried, busy, peak, since, cap_at, cap, on
):  # pragma: no cover - compiled
    for i in range(len(gone)):  # the rows' and the links' cache lines, all asked for first
        _prefetch(start, gone[i])
        _prefetch(length, gone[i])
    total = 0
    for i in range(len(gone)):
        f = gone[i]
        total += length[f]
        for j in range(start[f], start[f] + length[f]):
            lk = links[j]
            _prefetch(stamp, lk)
            _prefetch(load, lk)
            _prefetch(carried, lk)
            _prefetch(cap_at, lk)
            _prefetch(cap, lk)
            _prefetch(on, lk)
    touched = np.empty(total, np.int64)
    acc = np.empty(total, np.float64)
    nt = 0
    for i in range(len(gone)):
        f = gone[i]
        for j in range(start[f], start[f] + length[f]):
            lk = links[j]
            x = stamp[lk]
            if x < 0:
                x = nt
                stamp[lk] = nt
                touched[nt] = lk
                acc[nt] = 0.0
                nt += 1
            acc[x] += old[i]
    for k in range(nt):
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


def _kernel(name: str):
    if not _compiled:
        g = globals()
        g["_ledger_set"] = _k._helper("_ledger_set")
        g["_prefetch"] = _k._prefetch
        kernels = {
            "depart": "_depart_kernel", "cand_min": "_cand_min_kernel",
            "batch": "_batch_kernel", "end": "_end_kernel", "complete": "_complete_kernel",
        }  # fmt: skip
        _compiled.update(compile_in(g, ("_quiet_kernel", "_release_kernel"), kernels))
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
