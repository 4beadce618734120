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

from hpn.engine.records import FlowRec, IndexRec, LaneRec, LedgerRec, LoopRec, PathRec
from hpn.engine.step_kernels import BEFORE, GROW, HAVE_NUMBA, RESUME, _kernel

__all__ = [
    "BEFORE", "GROW", "HAVE_NUMBA", "RESUME", "candidates_min", "complete", "depart", "end_batch",
    "end_flows", "run_quiet",
]  # fmt: skip


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
        The :class:`~hpn.engine.flows.FlowState` (its rate index is built unless ``scan``;
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
        gone, old, scan, IndexRec.of(fl), ix.head, FlowRec.of(fl), PathRec.of(path), stamp,
        float(now), LedgerRec.of(ledger),
    )  # fmt: skip
    return bool(ok)


def run_quiet(sim: Any, max_batches: int, scan_max: int, tol: float) -> tuple:
    """Run ``sim``'s loop (:meth:`hpn.engine.sim.Sim.run`) in one compiled call for as long
    as every batch is a quiet departure: flows end (or only completions of earlier ends
    fall due), their tasks have no successors, and no rate changes (no flow is at or above
    the floor their rates set, :meth:`~hpn.engine.flows.FlowState.depart`). Completions are
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
        :data:`hpn.engine.flows.SCAN`.
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
    loop = LoopRec(
        0, len(fl.cand), bool(fl.ordered), float(fl.top), int(fl.n_act), float(fl.soonest),
        int(ix.head), bool(ix.stale), int(scan_max), int(task.done), int(sim.nt),
        float(q.heap[0][0]) if q.heap else np.inf, int(q.seq), int(lane.n), int(lane.used),
        float(sim.now), float(sim.sampler.next_tick), int(max_batches), float(tol),
    )  # fmt: skip
    r = _kernel("run")(
        fl.cand, FlowRec.of(fl), IndexRec.of(fl), PathRec.of(path), LedgerRec.of(ledger),
        LaneRec.of(lane), sim.t.flow_task, sim.hops, sim.stamp, task.finish, task.succ_off,
        loop,
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
        The :class:`~hpn.engine.flows.FlowState` (its candidates are compacted in place).

    Returns
    -------
    float
        The earliest ``fin`` of a candidate.
    """
    lo, hi, m, first = _kernel("cand_min")(fl.cand, FlowRec.of(fl), fl.ordered)
    fl.cand = fl.cand[lo:hi]
    fl.soonest = float(first)
    return float(m)


def end_batch(
    fl: Any, path: Any, hops: np.ndarray, flow_task: np.ndarray, limit: float, now: float
) -> tuple[np.ndarray, ...]:
    """End the candidates of ``fl`` whose transmission ends by ``limit`` (as
    :meth:`~hpn.engine.flows.FlowState.ending` finds them) at ``now``.

    Parameters
    ----------
    fl
        The :class:`~hpn.engine.flows.FlowState` (its candidates are compacted in place).
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
        fl.cand, FlowRec.of(fl), limit, now, PathRec.of(path), hops, flow_task, fl.ordered
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
        The :class:`~hpn.engine.flows.FlowState`.
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
    sent, old = _kernel("end")(flows, now, FlowRec.of(fl), PathRec.of(path), hops)
    fl.n_act -= len(sent)
    return sent, old


def complete(task: Any, tasks: np.ndarray, now: float) -> np.ndarray:
    """:meth:`~hpn.engine.state.TaskState.complete` in one call: ``tasks`` finish at ``now``.

    Parameters
    ----------
    task
        The :class:`~hpn.engine.state.TaskState` (finish times and predecessor counts
        updated in place).
    tasks
        The tasks that finished.
    now
        The time, s.

    Returns
    -------
    numpy.ndarray
        The successors whose last predecessor finished, sorted, each once.
    """
    return _kernel("complete")(tasks, float(now), task.finish, task.succ, task.succ_off, task.indeg)
