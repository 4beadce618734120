"""The rate recomputation of :class:`hpn.engine.sim.Sim` (a base class of it): full re-fills,
partial ones after departures and arrivals (the floor below which rates stay), the components
a change reaches, and the link loads booked after a fill."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hpn.engine.fill_kernels import fill_rates, group_rows, reach_cache, reached, reached_flows
from hpn.engine.maxmin import distinct

if TYPE_CHECKING:
    from hpn.engine.flows import FlowState
    from hpn.engine.links import LinkLedger
    from hpn.engine.state import Counters, PathTable

_TOL = 1e-9  # relative: ends within it of the earliest end are one batch
_NONE = np.zeros(0, np.int64)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)``; no flows if there are no parts."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else _NONE


class Rates:
    """Max-min rates of the transmitting flows, recomputed once per batch (see
    :meth:`_rates`); the state it reads is the simulator's."""

    t: Any
    flow: FlowState
    path: PathTable
    ledger: LinkLedger
    count: Counters
    cap: np.ndarray
    hops: np.ndarray
    stamp: np.ndarray
    group_stamp: np.ndarray
    now: float
    full: bool
    compiled: bool
    departed: list[np.ndarray]
    departed_rates: list[np.ndarray]
    arrived: list[np.ndarray]

    components = True
    group_rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # see _reached
    reach_cache: tuple[np.ndarray, ...] = ()

    def _users(self, flows: np.ndarray) -> tuple[np.ndarray, int]:
        """(the user of each of ``flows``: a coupled group is one user, the number of users)."""
        group = self.t.group[flows]
        grouped = group >= 0
        if not grouped.any():
            return np.arange(len(flows)), len(flows)
        ug, ginv = distinct(group[grouped], self.group_stamp)
        solo = np.flatnonzero(~grouped)
        user = np.empty(len(flows), np.int64)
        user[solo] = np.arange(len(solo))
        user[grouped] = len(solo) + ginv
        return user, len(solo) + len(ug)

    def _fill(self, flows, rep, local, avail) -> np.ndarray:
        """Max-min rates of ``flows`` whose hops are (``rep``: position in flows, ``local``:
        index into ``avail``, the capacity in bytes/s left to them per link)."""
        user, n_users = self._users(flows)
        return fill_rates(user[rep], local, n_users, len(avail), avail)[user]

    def _reached(self, live: np.ndarray, gone: np.ndarray, new: np.ndarray) -> np.ndarray:
        """The flows of ``live`` connected (by shared links, among ``live``, and coupled
        groups) to a link of a changed flow (``gone``: departed; ``new``: arrived, also in
        ``live``). Max-min fairness decomposes over these components: on what the users kept
        below the floor leave, a component that no changed flow touches faces the same
        problem as before, so its rates stay. Compiled, one call does it all: a coupled group
        all of whose members are here is read by its links (built once per run and again
        after a re-route), and the components of those groups are kept while the next
        search has the same ones (the same result). Live flows are sending, departed ones
        are not, so ``live`` and ``gone`` are distinct flows."""
        both = np.concatenate([live, gone, new])  # a changed flow joins its group's members
        if self.compiled:
            p = self.path
            path = (p.start, p.length, p.links)
            if self.group_rows is None:
                self.group_rows = group_rows(self.t.group, *path, len(self.cap))
                self.reach_cache = reach_cache(len(self.group_rows[2]), len(self.cap))
            n_seen = len(live) + len(gone)
            hit = reached_flows(
                both,
                len(live),
                n_seen,
                self.t.group,
                path,
                self.stamp,
                self.group_rows,
                self.reach_cache,
                compiled=True,
            )
            return live[hit]
        user, n_users = self._users(both)
        start, length = self.path.start[both], self.path.length[both]
        hit = reached(start, length, self.path.links, user, n_users, len(live), self.stamp)
        return live[hit]

    def _full_refill(self) -> bool:
        """Whether this recomputation re-fills every sending flow."""
        return self.full or not (self.departed or self.arrived)

    def _arrival_floor(self, new: np.ndarray) -> float:
        """A level below which no user's rate changes when ``new`` flows join: every link a
        new flow crosses has a share of at least ``capacity / hops`` in every round of the
        fill (shares only rise as users freeze), so rounds at lower levels, with their
        eps-grouped bottlenecks, are the same with and without the new flows."""
        _, links = self.path.entries(new)
        if not len(links):
            return np.inf
        return float((self.cap[links] / self.hops[links]).min()) / (1 + 2 * _TOL)

    def _rates(self) -> None:
        """Recompute rates. After departures and arrivals, users at rates below a floor keep
        theirs (progressive filling reaches those levels unchanged: a departure only raises
        the saturation level of the links it crossed, all at or above its own rate; for
        arrivals see :meth:`_arrival_floor`), so only the flows at or above it and the new
        ones are filled again, on what the others leave. Capacity changes re-fill all."""
        self.count.rate_computations += 1
        fl = self.flow
        full = self._full_refill()
        self.full = False
        if not full and not self.arrived and fl.compiled and self.ledger.compiled:
            gone, old = _joined(self.departed), _joined(self.departed_rates)
            # departures only, and no rate changes: their rates come off the links
            if fl.depart(self.ledger, self.path, self.stamp, gone, old, self.now):
                self.departed, self.departed_rates = [], []
                return
        if not full:
            gone, old, new = _joined(self.departed), _joined(self.departed_rates), _NONE
            if self.arrived:
                new = _joined(self.arrived)
                new = new[fl.sending[new]]
            floor = float(old.min()) * (1 - 1e-9) if len(old) else np.inf
            if len(new):
                floor = min(floor, self._arrival_floor(new))
            live = None
            if floor > 0 and not len(new):
                live = fl.at_least(floor)
            elif floor > 0:  # and the new flows (rate 0 so far) and their groups' members
                act = fl.active()
                keep = fl.rate[act] < floor
                keep[np.searchsorted(act, new)] = False
                grp = self.t.group[new]
                grp = grp[grp >= 0]
                if len(grp):
                    keep &= ~np.isin(self.t.group[act], grp)
                live = act[~keep]
            if live is not None and len(live) and self.components:
                live = self._reached(live, gone, new)
            full = live is None or 2 * len(live) > fl.n_act
        self.departed, self.departed_rates, self.arrived = [], [], []
        if full:
            self.count.full_refills += 1
            act = fl.active()
            loaded = self.ledger.loaded()
            if not len(act):
                self.ledger.set(loaded, np.zeros(len(loaded)), self.now)
                return
            rep, links = self.path.entries(act)
            used, local = distinct(links, self.stamp)
            rate = self._fill(act, rep, local, self.cap[used])
            fl.set_rates(act, rate, self.now, every=True)
            load = np.bincount(local, weights=rate[rep], minlength=len(used))
            self._set_all(used, load, loaded)
            return
        assert live is not None
        g_rep, g_links = self.path.entries(gone)
        l_rep, l_links = self.path.entries(live)
        touched, inv = distinct(np.concatenate([g_links, l_links]), self.stamp)
        g_loc, l_loc = inv[: len(g_links)], inv[len(g_links) :]
        n = len(touched)
        fixed = self.ledger.load[touched] - np.bincount(g_loc, weights=old[g_rep], minlength=n)
        fixed -= np.bincount(l_loc, weights=fl.rate[live][l_rep], minlength=n)
        np.maximum(fixed, 0.0, out=fixed)
        new = fixed
        if len(live):
            used, local = distinct(l_loc, self.stamp)
            avail = np.maximum(self.cap[touched[used]] - fixed[used], 0.0)
            rate = self._fill(live, l_rep, local, avail)
            fl.set_rates(live, rate, self.now)
            new = fixed + np.bincount(l_loc, weights=rate[l_rep], minlength=n)
        self.ledger.set(touched, new, self.now)

    def _set_all(self, used: np.ndarray, load: np.ndarray, loaded: np.ndarray) -> None:
        """Book a full re-fill: distinct ``used`` links carry ``load``, the other ``loaded``
        links (sorted) none. Many links are booked in link order (the ledger's arrays are
        then read in order, not at random: 2-3x faster at 400 K links); the bookings do not
        depend on the order."""
        nl = len(self.cap)
        if 8 * len(used) < nl:
            self.ledger.on[used] = False  # the loaded links no flow crosses any more
            idle = loaded[self.ledger.on[loaded]]
            links = np.concatenate([used, idle])
            self.ledger.set(links, np.concatenate([load, np.zeros(len(idle))]), self.now)
            return
        mark = np.zeros(nl, bool)
        mark[used] = mark[loaded] = True
        links = np.flatnonzero(mark)
        value = np.zeros(nl)
        value[used] = load
        self.ledger.set(links, value[links], self.now)
