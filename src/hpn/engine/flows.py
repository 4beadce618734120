"""The flows' state: bytes left (booked lazily), rates, projected ends, and the transmitting
flows as a sorted index array (:attr:`FlowState.act`) with a rate index (:class:`RateIndex`).
The next transmission ends are looked for among a few candidates, so a batch costs work in
the flows that change, not in the flows of the DAG.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from hpn.engine import steps

if TYPE_CHECKING:
    from hpn.engine.links import LinkLedger
    from hpn.engine.state import PathTable

ENDING = 2048  # flows kept as candidates for the next transmission ends
SCAN = 8192  # FlowState.at_least looks at every transmitting flow up to this many


@dataclass(eq=False)
class FlowState:
    """Per flow: bytes left at ``t_at`` (booked lazily), rate, projected ends, times.

    ``act`` holds the transmitting flows (sorted, possibly with some that ended since; see
    :meth:`active`). The next ends are looked for among a few candidates: every transmitting
    flow with ``soon <= top`` is in ``cand`` (and ``soon <= fin``), so while the earliest end
    among the candidates is at most ``top`` it is the earliest of all.
    """

    size: np.ndarray
    rem: np.ndarray  # bytes left at t_at
    t_at: np.ndarray  # when the rate last changed
    rate: np.ndarray  # bytes/s
    fin: np.ndarray  # projected end of transmission (inf: not sending)
    soon: np.ndarray  # when rem falls to size * 1e-12 (<= fin)
    tx_end: np.ndarray  # (a flow's start is its task's: TaskState.start)
    sending: np.ndarray  # bool: transmitting
    act: np.ndarray  # the transmitting flows (and some that ended), sorted
    by_rate: RateIndex
    n_act: int = 0  # transmitting flows
    joined: list = field(default_factory=list)  # flows begun since act was last merged
    cand: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    inc: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # in cand
    top: float = -np.inf
    ordered: bool = False  # cand sorted by soon (its entries that stopped sending aside)
    soonest: float = -np.inf  # at most the earliest soon of a candidate (-inf: unknown)
    compiled = steps.HAVE_NUMBA  # the steps of a batch in compiled kernels (same arithmetic)

    @classmethod
    def of(cls, size: np.ndarray) -> FlowState:
        """The state of flows of ``size`` bytes before any starts."""
        n = len(size)
        return cls(
            size=size,
            rem=size.copy(),
            t_at=np.zeros(n),
            rate=np.zeros(n),
            fin=np.full(n, np.inf),
            soon=np.full(n, np.inf),
            tx_end=np.full(n, np.nan),
            sending=np.zeros(n, bool),
            act=np.zeros(0, np.int64),
            by_rate=RateIndex(np.zeros(n, bool)),
            inc=np.zeros(n, bool),
        )

    def release(self) -> None:
        """Drop the per-flow event state (bytes left, rates, projected ends, flags) once
        every flow has ended, keeping ``size`` and ``tx_end`` (what a result reads): on
        millions of flows it is the largest part of the engine's memory."""
        empty, none = np.zeros(0), np.zeros(0, bool)
        self.rem = self.t_at = self.rate = self.fin = self.soon = empty
        self.sending = self.inc = none
        self.act = self.cand = np.zeros(0, np.int64)
        self.by_rate = RateIndex(none)
        self.n_act, self.joined = 0, []

    def active(self) -> np.ndarray:
        """The transmitting flows, sorted."""
        if self.joined:
            act = self.act[self.sending[self.act]]
            new = np.concatenate(self.joined)
            new = np.sort(new[self.sending[new]])
            self.joined = []
            self.act = np.insert(act, np.searchsorted(act, new), new)  # still sorted
        elif len(self.act) != self.n_act:
            self.act = self.act[self.sending[self.act]]
        return self.act

    def begin(self, flows: np.ndarray, now: float) -> bool:
        """Mark unique ``flows`` as transmitting from ``now``; True if any was not."""
        new = flows[~self.sending[flows]]
        self.sending[flows] = True
        self.t_at[flows] = now
        if len(new):
            self.joined.append(new)  # merged into act when it is next needed
            self.n_act += len(new)
        return len(new) > 0

    def depart(
        self,
        ledger: LinkLedger,
        path: PathTable,
        stamp: np.ndarray,
        gone: np.ndarray,
        old: np.ndarray,
        now: float,
    ) -> bool:
        """If :meth:`at_least` finds no flow at the floor the departures ``gone`` (rates
        ``old`` before) set, take those rates off the links and return True (see
        :func:`hpn.engine.steps.depart`); compiled only."""
        scan = self.n_act <= SCAN
        if scan and self.joined or not scan and self.by_rate.stale:
            return False
        return steps.depart(self, ledger, path, stamp, gone, old, now, scan)

    def at_least(self, floor: float) -> np.ndarray:
        """The transmitting flows with a rate of at least ``floor`` (> 0), sorted."""
        if self.n_act <= SCAN:
            act = self.active()
            return act[self.rate[act] >= floor]
        ix = self.by_rate
        if ix.stale:
            ix.build(self.active(), self.rate)
        return ix.at_least(floor, self.sending, self.rate)

    def end(self, flows: np.ndarray, now: float) -> None:
        """Flows whose last byte was sent at ``now``."""
        self.tx_end[flows] = now
        self.rem[flows] = 0.0
        self.rate[flows] = 0.0
        self.fin[flows] = self.soon[flows] = np.inf
        self.n_act -= int(self.sending[flows].sum())
        self.sending[flows] = False

    def settle(self, flows: np.ndarray, now: float) -> None:
        """Book the bytes ``flows`` sent since ``t_at`` (before their rate changes)."""
        self.rem[flows] -= self.rate[flows] * (now - self.t_at[flows])
        self.t_at[flows] = now

    def set_rates(
        self, flows: np.ndarray, rate: np.ndarray, now: float, every: bool = False
    ) -> None:
        """Settle ``flows``, give them ``rate`` from ``now`` and their finish times
        (``every``: they are all the transmitting flows)."""
        self.settle(flows, now)
        self.rate[flows] = rate
        if every:
            self.by_rate.stale = True
        else:
            self.by_rate.moved(flows, self.n_act)
        rem, tiny = self.rem[flows], self.size[flows] * 1e-12
        on = rate > 0
        r = np.where(on, rate, 1.0)
        self.fin[flows] = np.where(on, now + rem / r, np.inf)
        idle = np.where(rem <= tiny, -np.inf, np.inf)
        soon = np.where(on, now + (rem - tiny) / r, idle)
        self.soon[flows] = soon
        self.soonest = -np.inf
        was = self.inc[flows]
        add = flows[(soon <= self.top) & ~was]
        if self.ordered and (len(add) or was.any()):
            self.ordered = False  # a candidate's soon changed, or one joined
        if len(add):
            self.inc[add] = True
            self.cand = np.concatenate([self.cand, add])

    def _candidates(self) -> np.ndarray:
        c = self.cand
        gone = ~self.sending[c]
        if gone.any():
            self.inc[c[gone]] = False
            c = self.cand = c[~gone]
        return c

    def _rebuild(self, top: float | None = None) -> None:
        """New candidates: the ENDING earliest (by ``soon``), or all with soon <= top."""
        a = self.active()
        self.inc[self.cand] = False
        s = self.soon[a]
        if top is None:
            k = min(ENDING, len(a) - 1)
            top = float(np.partition(s, k)[k]) if len(a) else -np.inf
        self.top = top
        self.soonest = -np.inf
        self.cand = a[s <= top]
        if self.compiled:  # ordered by soon: the compiled steps stop early
            self.cand = self.cand[np.argsort(self.soon[self.cand], kind="stable")]
            self.ordered = True
        self.inc[self.cand] = True

    def next_end(self) -> float:
        """The earliest projected end of transmission (inf if none)."""
        if not self.n_act:
            return np.inf
        if self.compiled:
            m = steps.candidates_min(self)
        else:
            c = self._candidates()
            m = self.fin[c].min() if len(c) else np.inf
        if m <= self.top:
            return float(m)
        self._rebuild()
        c = self.cand
        m = self.fin[c].min() if len(c) else np.inf
        return float(m) if m <= self.top else float(self.fin[self.active()].min())

    def cover(self, limit: float) -> None:
        """Make the candidates hold every transmitting flow with ``soon <= limit``."""
        if limit > self.top:
            self._rebuild(limit)

    def ending(self, limit: float, now: float) -> np.ndarray:
        """The transmitting flows whose transmission ends by ``limit``: ``soon <= limit``
        and (``fin <= limit`` or ``soon <= now``), sorted."""
        self.cover(limit)
        c = self._candidates()
        c = np.sort(c[self.soon[c] <= limit])
        return c[(self.fin[c] <= limit) | (self.soon[c] <= now)]


class RateIndex:
    """Transmitting flows by rate, for :meth:`FlowState.at_least` in time proportional to
    the flows found (a departure batch usually finds none).

    At a build, the flows are sorted by falling rate. Flows whose rate is set later are
    flagged and listed apart (``extra``); ended flows are dropped when a query passes them.
    Once the list outgrows an eighth of the transmitting flows, the next query rebuilds.

    Parameters
    ----------
    flagged
        Per flow, all False: scratch for the flag.
    """

    SMALL = 1024  # the extra list may always grow this long

    def __init__(self, flagged: np.ndarray) -> None:
        self.flagged = flagged  # rate set since the build
        self.order = np.zeros(0, np.int64)  # flows by falling rate at the build
        self.neg = np.zeros(0)  # minus their rates then (ascending)
        self.head = 0  # order[:head] are dropped
        self.extra = np.zeros(0, np.int64)  # the flagged flows
        self.stale = True

    def build(self, act: np.ndarray, rate: np.ndarray) -> None:
        """Index the transmitting flows ``act`` by their ``rate``."""
        self.flagged[self.extra] = False
        neg = -rate[act]
        o = np.argsort(neg, kind="stable")
        self.order, self.neg, self.head = act[o], neg[o], 0
        self.extra = np.zeros(0, np.int64)
        self.stale = False

    def moved(self, flows: np.ndarray, n_act: int) -> None:
        """``flows`` got new rates."""
        if self.stale:
            return
        add = flows[~self.flagged[flows]]
        if len(add):
            self.flagged[add] = True
            self.extra = np.concatenate([self.extra, add])
        if len(self.extra) > max(self.SMALL, n_act // 8):
            self.stale = True

    def at_least(self, floor: float, sending: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """The sending flows with ``rate >= floor`` (> 0), sorted."""
        end = self.head + int(np.searchsorted(self.neg[self.head :], -floor, side="right"))
        if end == self.head and not len(self.extra):
            return self.extra  # none (an empty array)
        found = np.zeros(0, np.int64)
        if end > self.head:
            seg = self.order[self.head : end]
            ok = sending[seg] & ~self.flagged[seg]
            if not ok.all():  # drop the others: order[head:end] keeps its order
                kept = seg[ok]
                neg = self.neg[self.head : end][ok]
                self.head = end - len(kept)
                self.order[self.head : end] = kept
                self.neg[self.head : end] = neg
                seg = kept
            found = seg
        x = self.extra
        if len(x):
            live = sending[x]
            if not live.all():
                self.flagged[x[~live]] = False
                x = self.extra = x[live]
            found = np.concatenate([found, x[rate[x] >= floor]])
        # distinct ids, so any sort gives the same array; a stable (tim)sort merges the runs
        # that equal rates leave (a coupled group's members, by id): ~10x quicksort's speed
        return np.sort(found, kind="stable")
