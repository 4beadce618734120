"""The event loop: ``simulate(fabric, dag, ...) -> Result``.

Between events every transmitting flow has a constant rate, the max-min fair allocation
(:mod:`hpn.engine.maxmin`). Events sit in a heap as batches (one entry per distinct time and
kind, holding an array of task ids): task starts, task completions (compute done, or a flow's
last byte delivered), capacity changes (the fault/repair hook) and sampling ticks. A flow's
transmission end is not a heap event: the next one is ``min(remaining / rate)`` over the
transmitting flows, and every flow ending within a relative 1e-9 of it ends in the same
batch. Rates are recomputed once per batch, and only when the set of transmitting flows or a
capacity changed.

Remaining bytes are booked lazily, like link loads (:mod:`hpn.engine.links`): a flow's
``rem`` holds its bytes left at ``t_at``, when its rate last changed, and its projected end
``fin`` stays valid until the rate changes again. A batch then costs two passes over the
transmitting flows (the earliest ``fin`` and the flows ending) plus the work for the flows
whose rate changed. The oracle the tests compare against (every shortcut off) is
:mod:`hpn.engine.reference`.

Flows of one connection (same source, destination and routing key) are routed once when the
router declares its choice a function of the connection (``per_connection``).
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import numpy as np

from hpn import jit
from hpn.engine import kernels, state, steps
from hpn.engine.dag import FLOW, FlowDAG, Tasks
from hpn.engine.kernels import add_hops, fill_rates, reached, tier_sums_listed
from hpn.engine.links import LinkLedger
from hpn.engine.maxmin import distinct
from hpn.engine.result import Result, Series
from hpn.engine.state import (
    CAPACITY,
    DONE,
    START,
    Counters,
    EventQueue,
    FlowState,
    Lane,
    PathTable,
    Sampler,
    TaskState,
)
from hpn.errors import InputError
from hpn.routing.base import Router, router_for
from hpn.topology.fabric import Fabric

_TOL = 1e-9

Progress = Callable[[int, int], None]
"""``progress(tasks_done, tasks_total)``, called after every batch of events."""


@dataclass(frozen=True, eq=False)
class CapacityEvents:
    """At ``time[i]``, directed link ``link[i]`` gets ``capacity[i]`` bit/s (0 = down).

    With ``reroute``, flows whose path crosses a link at capacity 0 are re-routed (the router
    avoiding every such link) when the event fires; they keep the bytes already sent. An
    event with ``hold[i]`` takes its link down *held*: the flows crossing it are not re-routed
    but wait at rate 0 (a blackhole nobody has routed around yet) until a later event on that
    link (down without hold: they move; capacity back: they resume).
    """

    time: np.ndarray
    link: np.ndarray
    capacity: np.ndarray
    reroute: bool = False
    hold: np.ndarray | None = None

    @classmethod
    def of(
        cls,
        events: list[tuple[float, int, float]],
        reroute: bool = False,
        hold: list[bool] | None = None,
    ):
        """Events from ``(time, link, capacity)`` tuples.

        Parameters
        ----------
        events
            ``(time s, directed link id, capacity bit/s)`` each.
        reroute
            Re-route flows off links at capacity 0.
        hold
            Per event: a down event whose flows wait instead of moving.

        Returns
        -------
        CapacityEvents
            The events as arrays.
        """
        t, lk, c = zip(*events, strict=True) if events else ((), (), ())
        h = None if hold is None else np.asarray(hold, bool)
        if h is not None and len(h) != len(t):
            raise InputError("capacity event", "hold needs one flag per event")
        arr = np.asarray
        return cls(arr(t, float), arr(lk, np.int64), arr(c, float), reroute, h)


def simulate(
    fabric: Fabric,
    dag: FlowDAG,
    router: Router | str | None = None,
    *,
    seed: int = 0,
    capacity_events: CapacityEvents | None = None,
    sample_interval: float | None = None,
    sample_links: np.ndarray | None = None,
    progress: Progress | None = None,
) -> Result:
    """Run ``dag`` on ``fabric``; flows without explicit paths are routed by ``router`` (a
    policy name; None: the fabric's default, :func:`hpn.routing.default_policy`).

    Flows share links max-min fairly; rates change only at events (a flow starting or
    ending, a capacity event), so each flow's completion time is exact.

    Parameters
    ----------
    fabric
        The fabric.
    dag
        Flows, compute tasks and their dependencies.
    router
        A router, a policy name, or None for the fabric's default.
    seed
        Seed of a router built here.
    capacity_events
        Link capacity changes over time.
    sample_interval
        Seconds between link-utilization samples; None: no sampling.
    sample_links
        Links sampled individually; None: per tier only.
    progress
        ``progress(tasks_done, tasks_total)``, called after every batch of events.

    Returns
    -------
    Result
        Start and finish of every task, flow paths, per-link bytes and utilization.

    Examples
    --------
    A 1 MB flow across a k=4 fat tree (100 Gbit/s links, 0.5 us each, 6 hops): 80 us of
    transmission and 3 us of latency; two such flows into one host share its link:

    >>> from hpn.engine import FlowDAG
    >>> from hpn.topology import build
    >>> f = build("fat-tree", k=4)
    >>> d = FlowDAG()
    >>> _ = d.add_flows([0], [15], 1e6)
    >>> (simulate(f, d).fct * 1e6).round(6).tolist()
    [83.0]
    >>> d = FlowDAG()
    >>> _ = d.add_flows([0, 1], [15, 15], 1e6)
    >>> (simulate(f, d).fct * 1e6).round(6).tolist()
    [163.0, 163.0]
    """
    return run_sim(
        Sim, fabric, dag, router, seed, capacity_events, sample_interval, sample_links, progress
    )


def run_sim(
    cls: type[Sim],
    fabric: Fabric,
    dag: FlowDAG,
    router: Router | str | None,
    seed: int,
    cap_events: CapacityEvents | None,
    interval: float | None,
    sample_links: np.ndarray | None,
    progress: Progress | None,
) -> Result:
    """Build and run a simulator of class ``cls``; its Result.

    Parameters
    ----------
    cls
        :class:`Sim` or a reference subclass.
    fabric, dag, router, seed
        As for :func:`simulate`.
    cap_events, interval, sample_links, progress
        ``capacity_events``, ``sample_interval``, ``sample_links`` and ``progress`` of
        :func:`simulate`.

    Returns
    -------
    Result
        The run, with its wall time.
    """
    wall = _time.perf_counter()
    if router is None or isinstance(router, str):
        router = router_for(fabric, router, seed=seed)
    dag.validate(fabric.num_nodes, cycles=False)  # cycles: see Sim._stuck
    with kernels_for(fabric, len(dag.tasks.size)):  # a small run: the numpy twins
        sim = cls(fabric, dag, router, cap_events, interval, sample_links, progress)
        sim.run()
        return sim.result(_time.perf_counter() - wall)


def kernels_for(fabric: Fabric, n_flows: int) -> AbstractContextManager[bool]:
    """:func:`hpn.jit.kernels_for` for a run of ``n_flows`` on ``fabric`` (its first kernels:
    max-min filling and the routing walk).

    Parameters
    ----------
    fabric
        The fabric.
    n_flows
        Flows of the run.

    Returns
    -------
    context manager
        Yields whether the compiled kernels run in it.
    """
    from hpn.routing.kernel_walk import _route_kernel

    return jit.kernels_for(fabric.num_links + n_flows, (kernels._fill_kernel, _route_kernel))


def route_flows(fabric: Fabric, router: Router, t: Tasks) -> PathTable:
    """Every flow's path: the DAG's explicit ones, the router's for the others (each
    connection routed once when the router allows it).

    Parameters
    ----------
    fabric
        The fabric.
    router
        The router.
    t
        The DAG's tasks (:meth:`FlowDAG.tasks`).

    Returns
    -------
    PathTable
        Path rows, lengths and latency of every flow.
    """
    with kernels_for(fabric, len(t.size)):  # (also when called outside run_sim)
        return _route_flows(fabric, router, t)


def _route_flows(fabric: Fabric, router: Router, t: Tasks) -> PathTable:
    nf = len(t.size)
    lat = fabric.links.latency
    given = np.flatnonzero(t.has_path)
    routed = np.flatnonzero(~t.has_path)
    start = np.zeros(nf, np.int64)
    length = np.zeros(nf, np.int64)
    latency = np.zeros(nf)
    parts, n_routed = [], 0
    if len(given):
        t.paths.check(fabric, t.src[given], t.dst[given])
        start[given] = t.paths.offsets[:-1]
        length[given] = t.paths.lengths
        latency[given] = t.paths.per_flow_sum(lat)
        parts.append(t.paths.links)
    if len(routed):
        src, dst, keys = t.src[routed], t.dst[routed], t.keys[routed]
        if getattr(router, "per_connection", False):
            first, inv = connections(src, dst, keys, fabric.num_nodes)
        else:
            first, inv = np.arange(len(routed)), np.arange(len(routed))
        p = router.route(fabric, src[first], dst[first], keys[first])
        n_routed = len(first)
        base = sum(len(x) for x in parts)
        start[routed] = (p.offsets[:-1] + base)[inv]
        length[routed] = p.lengths[inv]
        latency[routed] = p.per_flow_sum(lat)[inv]
        parts.append(p.links)
    links = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return PathTable(start, length, links.astype(np.int64), latency, n_routed)


def connections(
    src: np.ndarray, dst: np.ndarray, keys: np.ndarray, n_nodes: int, compiled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(first flow of each distinct (src, dst, key) in order of first appearance, the
    connection of every flow).

    Parameters
    ----------
    src, dst, keys
        Per flow.
    n_nodes
        Nodes of the fabric (to combine src and dst into one key).
    compiled
        Group by a compiled hash table of the keys when numba is there (the same result as
        the sorts below; 4.9 M flows: ~0.3 s instead of ~1.3 s); False: the sorts.

    Returns
    -------
    tuple of numpy.ndarray
        First flow of each connection, and each flow's connection index.
    """
    if compiled and (found := kernels.connection_ids(src, dst, keys)) is not None:
        return found
    order = np.argsort(keys, kind="stable")  # keys are mostly unique per (src, dst)
    new = np.ones(len(order), bool)
    k = keys[order]
    np.not_equal(k[1:], k[:-1], out=new[1:])
    pair = src * n_nodes + dst
    p = pair[order]
    if (p[1:] != p[:-1])[~new[1:]].any():  # a key shared by two pairs: sort by both
        order = np.lexsort((keys, pair))
        p, k = pair[order], keys[order]
        new[1:] = (p[1:] != p[:-1]) | (k[1:] != k[:-1])
    group = np.cumsum(new) - 1
    first = order[new]  # stable sorts: the earliest flow of each connection
    rank = np.argsort(first)  # connections in order of first appearance (distinct values)
    pos = np.empty(len(rank), np.int64)
    pos[rank] = np.arange(len(rank))
    inv = np.empty(len(order), np.int64)
    inv[order] = pos[group]
    return first[rank], inv


_NONE = np.zeros(0, np.int64)


def _sorted_unique(ids: np.ndarray) -> np.ndarray:
    """``np.unique(ids)`` by a sort (numpy 2.4's ``unique`` hashes: several times slower).

    Examples
    --------
    >>> _sorted_unique(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    s = np.sort(ids)
    if len(s) > 1:
        s = s[np.concatenate(([True], s[1:] != s[:-1]))]
    return s


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)``; no flows if there are no parts."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else _NONE


class Sim:
    """The fast simulator: lazily booked bytes, partial re-fills, work per sending flow."""

    def __init__(self, fabric, dag, router, cap_events, sample_interval, sample_links, progress):
        self.fabric, self.router, self.progress, self.dag = fabric, router, progress, dag
        t = self.t = dag.tasks
        nl = fabric.num_links
        self.nf, self.nt = len(t.size), len(t.kind)
        self.cap = fabric.links.capacity / 8.0  # bytes/s
        self.cap0 = fabric.links.capacity.copy()
        self.lat = fabric.links.latency
        self.path = route_flows(fabric, router, t)
        self.flow = FlowState.of(t.size)
        self.task = TaskState.of(self.nt, t.dep_before, t.dep_after)
        self.ledger = LinkLedger(self.cap)
        self.compiled = kernels._use()  # numba, or the numpy twins (hpn.jit.kernels_for)
        if not self.compiled:
            self.flow.compiled = self.task.compiled = self.ledger.compiled = False
        self.stamp = np.full(nl, -1, np.int64)  # scratch for sort-free dedupe of link ids
        self.group_stamp = np.full(int(t.group.max(initial=-1)) + 1, -1, np.int64)
        self.queue = EventQueue()
        self.count = Counters()
        self.now, self.dirty, self.full = 0.0, False, True
        self.departed: list[np.ndarray] = []  # flows that ended since the last rate update
        self.departed_rates: list[np.ndarray] = []
        self.arrived: list[np.ndarray] = []  # flows that began since the last rate update
        self.hops = np.zeros(nl, np.int64)  # hops of transmitting flows per link
        self.live: np.ndarray | None = None  # every loaded link (and some) at the last sample
        roots = self.task.roots()
        self.queue.push(t.delay[roots], START, roots)
        self.cap_events = cap_events
        self.held = np.zeros(nl, bool)  # links down whose flows wait (CapacityEvents.hold)
        if cap_events is not None and len(cap_events.time):
            ce = cap_events
            if (ce.link < 0).any() or (ce.link >= nl).any():
                raise InputError("capacity event", f"link ids must be in 0..{nl - 1}")
            if (ce.capacity < 0).any() or (ce.time < 0).any():
                raise InputError("capacity event", "times and capacities must be >= 0")
            self.queue.push(ce.time, CAPACITY, np.arange(len(ce.time)))
        tiers = fabric.links.tier
        self.n_tiers = int(tiers.max()) + 1 if len(tiers) else 0
        if sample_interval is not None and not sample_interval > 0:
            raise InputError("sample_interval", "must be > 0")
        self.sampler = Sampler(
            sample_interval,
            np.zeros(0, np.int64) if sample_links is None else np.asarray(sample_links, np.int64),
        )

    # --- paths ---------------------------------------------------------------------------

    def _reroute(self) -> None:
        down = self.cap <= 0
        pending = np.isnan(self.flow.tx_end)
        rep, links = self.path.entries(np.arange(self.nf))
        hit = np.zeros(self.nf, bool)
        hit[rep[(down & ~self.held)[links]]] = True
        hit[rep[self.held[links]]] = False  # a held link keeps every flow crossing it
        flows = np.flatnonzero(hit & pending)
        if not len(flows):
            return
        t = self.t
        try:
            new = self.router.route(self.fabric, t.src[flows], t.dst[flows], t.keys[flows], down)
        except InputError:
            return  # no path avoids the failed links: the flows wait for a repair
        sending = flows[self.flow.sending[flows]]
        self._count_hops(sending, -1)
        self.path.replace(flows, new, self.lat)
        self._count_hops(sending, 1)
        self.dirty = True

    def _count_hops(self, flows: np.ndarray, delta: int) -> None:
        """Add ``delta`` to :attr:`hops` for every hop of ``flows``."""
        add_hops(self.path.start[flows], self.path.length[flows], self.path.links, self.hops, delta)

    # --- events --------------------------------------------------------------------------

    def _start(self, tasks: np.ndarray) -> None:
        t, now = self.t, self.now
        self.task.start[tasks] = now
        flows = t.local[tasks[t.kind[tasks] == FLOW]]
        comp = tasks[t.kind[tasks] != FLOW]
        if len(comp):
            self.queue.push(now + t.duration[t.local[comp]], DONE, comp)
        if len(flows):
            self.flow.start[flows] = now
            empty = self.flow.rem[flows] <= 0
            if empty.any():
                self._tx_done(flows[empty])
            live = flows[~empty]
            if len(live):
                live = _sorted_unique(live)
                new = live[~self.flow.sending[live]]
                self.flow.begin(live, now)
                if len(new):
                    self._count_hops(new, 1)
                    self.arrived.append(new)
                self.dirty = True

    def _tx_done(self, flows: np.ndarray) -> None:
        if self.flow.compiled:
            sent, old = steps.end_flows(self.flow, self.path, self.hops, flows, self.now)
            if len(sent):
                self.departed.append(sent)
                self.departed_rates.append(old)
        else:
            sent = flows[self.flow.sending[flows]]
            if len(sent):
                self.departed.append(sent)
                self.departed_rates.append(self.flow.rate[sent].copy())
                self._count_hops(sent, -1)
            self.flow.end(flows, self.now)
        self.queue.push(self.now + self.path.latency[flows], DONE, self.t.flow_task[flows])

    def _complete(self, tasks: np.ndarray) -> None:
        ready = self.task.complete(tasks, self.now)
        if len(ready):
            self.queue.push(self.now + self.t.delay[ready], START, ready)

    def _capacity(self, idx: np.ndarray) -> None:
        ce = self.cap_events
        for i in idx:  # in event order, so the last change of a link at one time wins
            self.cap[ce.link[i]] = ce.capacity[i] / 8.0
            self.held[ce.link[i]] = ce.hold is not None and ce.hold[i] and ce.capacity[i] <= 0
        self.sampler.capacity_changed()
        if ce.reroute:
            self._reroute()
        self.dirty = self.full = True

    # --- rates ---------------------------------------------------------------------------

    components = True

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

    def _reached(self, live: np.ndarray, changed: np.ndarray) -> np.ndarray:
        """The flows of ``live`` connected (by shared links, among ``live``, and coupled
        groups) to a link of a ``changed`` flow. Max-min fairness decomposes over these
        components: on what the users kept below the floor leave, a component that no changed
        flow touches faces the same problem as before, so its rates stay."""
        both = np.concatenate([live, changed])  # a changed flow joins its group's members
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
                live = self._reached(live, np.concatenate([gone, new]))
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

    # --- the loop: hooks the reference overrides -------------------------------------------

    def _advance(self, t_next: float) -> None:
        self.now = t_next

    def _next_end(self) -> float:
        """When the next transmission ends (inf if none is sending)."""
        return self.flow.next_end()

    def _end_transmissions(self, t_next: float, dt: float) -> None:
        """End the flows whose transmission ends at ``t_next`` (within the tolerance)."""
        fl = self.flow
        if not fl.n_act:
            return
        # the reference's test, on projected times: proj = fin - (now - dt)
        limit = t_next + dt * _TOL + 1e-15
        if fl.compiled:  # the same steps as below, in one compiled call
            fl.cover(limit)
            if fl.soonest > limit:  # no candidate, so no flow, ends by the limit
                return
            ended, old, times, ids, bounds = steps.end_batch(
                fl, self.path, self.hops, self.t.flow_task, limit, self.now
            )
            if len(ended):
                self.departed.append(ended)
                self.departed_rates.append(old)
                self.queue.push_sorted(times, DONE, ids, bounds)
                self.dirty = True
            return
        ended = fl.ending(limit, self.now)
        if len(ended):
            self._tx_done(ended)
            self.dirty = True

    def _sample(self) -> None:
        led, tiers = self.ledger, self.fabric.links.tier
        if self.live is None or led.raised:  # between samples, most loads only fall to 0
            self.live, led.raised = led.loaded(), False
        tier_load, self.live = tier_sums_listed(self.live, led.on, tiers, led.load, self.n_tiers)
        self.sampler.sample(self.now, tiers, self.cap, led.load, tier_load)

    fused = True  # quiet departure batches in one compiled call (steps.run_quiet)
    LANE = 4096  # room for completions queued by it (grown when short)
    _HOOKS = ("_advance", "_next_end", "_end_transmissions", "_full_refill", "_rates")

    def _fusable(self) -> bool:
        """Whether :func:`hpn.engine.steps.run_quiet` may take batches: compiled steps, and
        the hooks it does the work of not overridden (the reference's are)."""
        fl = self.flow
        if not (self.fused and fl.compiled and self.task.compiled and self.ledger.compiled):
            return False
        return all(getattr(type(self), h) is getattr(Sim, h) for h in self._HOOKS)

    def _quiet_run(self) -> tuple[int, float]:
        """Take the batches :func:`hpn.engine.steps.run_quiet` can; (where it stopped, the
        next projected end if known, else nan)."""
        cap = 256 if self.progress is not None else 1 << 62
        code, m, batches, rates, ended, old = steps.run_quiet(self, cap, state.SCAN, _TOL)
        self.count.batches += batches
        self.count.rate_computations += rates
        if code == steps.RESUME and len(ended):
            self.departed.append(ended)
            self.departed_rates.append(old)
            self.dirty = True
        elif code == steps.GROW:
            self.queue.lane.grow(len(self.flow.cand))  # type: ignore[union-attr]
        if batches and code != steps.RESUME and self.progress is not None:
            self.progress(self.task.done, self.nt)
        return code, m

    def _due(self) -> None:
        """The rest of a batch: the events due now, then the rates if they changed."""
        for kind, ids in self.queue.pop_due(self.now):
            if kind == CAPACITY:
                self._capacity(ids)
            elif kind == DONE:
                self._complete(ids)
            else:
                self._start(ids)
        if self.dirty:
            self._rates()
            self.dirty = False
        if self.progress is not None:
            self.progress(self.task.done, self.nt)

    def run(self) -> None:
        """Process events until every task has finished."""
        smp, q, fl = self.sampler, self.queue, self.flow
        fused = self._fusable()
        if fused:
            q.lane = Lane.of(self.LANE)
        while True:
            m = np.nan
            if fused and not (self.full or self.arrived or self.departed or fl.joined):
                code, m = self._quiet_run()
                if code == steps.RESUME:
                    self._due()
                    continue
                if code == steps.GROW:
                    continue
            t_next = min(q.next_time(), self._next_end() if m != m else m)
            if self.task.done == self.nt:
                break
            if t_next == np.inf:
                self._stuck()
            if smp.next_tick < t_next:
                self._advance(smp.next_tick)
                self._sample()
                smp.next_tick += smp.interval
                continue
            dt = t_next - self.now
            self._advance(t_next)
            self.count.batches += 1
            self._end_transmissions(t_next, dt)
            self._due()
        if smp.interval and self.task.done:
            self._sample()
        loaded = self.ledger.loaded()
        self.ledger.set(loaded, np.zeros(len(loaded)), self.now)

    def _stuck(self) -> None:
        left = self.nt - self.task.done
        act = self.flow.active()
        if len(act):
            f = int(act[0])
            _, links = self.path.entries(act[:1])
            dead = links[self.cap[links] <= 0]
            why = f"its path crosses link {int(dead[0])} at capacity 0" if len(dead) else "rate 0"
            raise InputError(
                "dag",
                f"{left} tasks can never finish: flow {f} (and {len(act) - 1} more) "
                f"has {why} and no repair is scheduled",
            )
        self.dag.check_cycles()
        raise InputError("dag", f"{left} tasks can never start (their dependencies never finish)")

    def result(self, wall: float) -> Result:
        """The run's :class:`Result`, with ``wall`` seconds of wall time."""
        t, fl, tk, smp = self.t, self.flow, self.task, self.sampler
        finish = tk.finish[t.flow_task] if self.nf else np.zeros(0)
        series = None
        if smp.interval:
            series = Series(
                np.asarray(smp.time),
                np.asarray(smp.tier),
                np.asarray(smp.link).reshape(len(smp.time), -1),
                smp.links,
            )
        makespan = float(np.nanmax(tk.finish)) if self.nt else 0.0
        return Result(
            task_start=tk.start,
            task_finish=tk.finish,
            flow_task=t.flow_task,
            size=t.size,
            start=fl.start,
            tx_end=fl.tx_end,
            finish=finish,
            path_latency=self.path.latency,
            link_bytes=self.ledger.bytes.copy(),  # contiguous (a column of the ledger's rows)
            link_busy=self.ledger.busy.copy(),
            link_peak_util=self.ledger.peak.copy(),
            link_capacity=self.cap0,
            makespan=makespan,
            series=series,
            stats={
                "events": self.queue.popped,
                "batches": self.count.batches,
                "rate_computations": self.count.rate_computations,
                "full_refills": self.count.full_refills,  # the others re-filled a part
                "sim_wall_s": wall,
                "routed_paths": self.path.routed,  # < routed flows: connections routed once
                "kernels": "numba" if self.compiled else "numpy",
            },
            path_source=self.path.paths,
        )
