"""State records the compiled kernels take: named tuples of the engine's arrays (numba types a
``NamedTuple`` of arrays as one argument; the arrays are shared, so a kernel's writes land in
the engine's state), instead of long positional parameter lists. Built per call from the
state objects (their arrays may be replaced between calls); scalars travel apart, since a
kernel cannot write a tuple's fields."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class LedgerRec(NamedTuple):
    """The per-link fields a booking touches (:class:`hpn.engine.links.LinkLedger`)."""

    load: np.ndarray
    carried: np.ndarray  # bytes carried (the ledger's ``bytes``)
    busy: np.ndarray
    peak: np.ndarray
    since: np.ndarray
    cap_at: np.ndarray
    cap: np.ndarray
    on: np.ndarray

    @classmethod
    def of(cls, ledger: Any) -> LedgerRec:
        """The record of a :class:`~hpn.engine.links.LinkLedger`."""
        lg = ledger
        return cls(lg.load, lg.bytes, lg.busy, lg.peak, lg.since, lg.cap_at, lg.cap, lg.on)


class PathRec(NamedTuple):
    """Each flow's path row and latency (:class:`hpn.engine.state.PathTable`)."""

    start: np.ndarray
    length: np.ndarray
    links: np.ndarray
    latency: np.ndarray

    @classmethod
    def of(cls, path: Any) -> PathRec:
        """The record of a :class:`~hpn.engine.state.PathTable`."""
        return cls(path.start, path.length, path.links, path.latency)


class FlowRec(NamedTuple):
    """The per-flow fields of :class:`hpn.engine.flows.FlowState` the batch steps touch."""

    sending: np.ndarray
    inc: np.ndarray
    fin: np.ndarray
    soon: np.ndarray
    rate: np.ndarray
    rem: np.ndarray
    tx_end: np.ndarray

    @classmethod
    def of(cls, fl: Any) -> FlowRec:
        """The record of a :class:`~hpn.engine.flows.FlowState`."""
        return cls(fl.sending, fl.inc, fl.fin, fl.soon, fl.rate, fl.rem, fl.tx_end)


class IndexRec(NamedTuple):
    """The transmitting flows and their rate index (:class:`hpn.engine.flows.RateIndex`)."""

    act: np.ndarray
    order: np.ndarray
    neg: np.ndarray
    extra: np.ndarray
    flagged: np.ndarray

    @classmethod
    def of(cls, fl: Any) -> IndexRec:
        """The record of a :class:`~hpn.engine.flows.FlowState`'s ``act`` and index."""
        ix = fl.by_rate
        return cls(fl.act, ix.order, ix.neg, ix.extra, ix.flagged)


class LaneRec(NamedTuple):
    """The completion lane's arrays (:class:`hpn.engine.state.Lane`)."""

    t: np.ndarray
    seq: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ids: np.ndarray

    @classmethod
    def of(cls, lane: Any) -> LaneRec:
        """The record of a :class:`~hpn.engine.state.Lane`."""
        return cls(lane.t, lane.seq, lane.lo, lane.hi, lane.ids)


class LoopRec(NamedTuple):
    """The scalars the compiled quiet loop starts from (:func:`hpn.engine.steps.run_quiet`):
    the candidates' window and state, the rate index's head and staleness, the tasks done,
    the heap's next time and sequence number, the lane's fill, the clock and the limits."""

    c_lo: int
    c_hi: int
    ordered: bool
    top: float
    n_act: int
    soonest: float
    head: int
    stale: bool
    scan_max: int
    done: int
    nt: int
    heap_t: float
    seq: int
    ln: int
    lu: int
    now: float
    tick: float
    max_batches: int
    tol: float
