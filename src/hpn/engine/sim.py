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

import numpy as np

from hpn.engine import flows as flow_state
from hpn.engine import kernels, steps
from hpn.engine.dag import FLOW, FlowDAG
from hpn.engine.events import CapacityEvents
from hpn.engine.fill_kernels import kernels_for
from hpn.engine.flows import FlowState
from hpn.engine.kernels import add_hops, tier_sums_listed
from hpn.engine.links import LinkLedger
from hpn.engine.memory import trim
from hpn.engine.paths import route_flows
from hpn.engine.rates import _TOL, Rates
from hpn.engine.result import Result, Series
from hpn.engine.state import (
    CAPACITY,
    DONE,
    START,
    Counters,
    EventQueue,
    Lane,
    Sampler,
    TaskState,
)
from hpn.errors import InputError
from hpn.routing.base import Router, router_for
from hpn.topology.fabric import Fabric

Progress = Callable[[int, int], None]
"""``progress(tasks_done, tasks_total)``, called after every batch of events."""


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
    trim(len(dag.tasks.kind))  # the DAG's parts, freed when its arrays were joined
    with kernels_for(fabric, len(dag.tasks.size)):  # a small run: the numpy twins
        sim = cls(fabric, dag, router, cap_events, interval, sample_links, progress)
        sim.run()
        return sim.result(_time.perf_counter() - wall)


def _sorted_unique(ids: np.ndarray) -> np.ndarray:
    """``np.unique(ids)`` by a sort (numpy 2.4's ``unique`` hashes: several times slower;
    a stable sort, as a batch's flows come in runs of consecutive ids).

    Examples
    --------
    >>> _sorted_unique(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    s = np.sort(ids, kind="stable")  # ints: the same array; timsort merges sorted runs
    if len(s) > 1:
        s = s[np.concatenate(([True], s[1:] != s[:-1]))]
    return s


class Sim(Rates):
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
        self.task = TaskState.of(self.nt, t.dep_before, t.dep_after, t.dep_off)
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
        trim(self.nf)  # the set-up's temporaries back to the OS
        self.trimmed = _time.process_time()

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
        self.group_rows = None  # the coupled groups' links, built again when next needed
        self._count_hops(sending, 1)
        self.dirty = True

    def _count_hops(self, flows: np.ndarray, delta: int) -> None:
        """Add ``delta`` to :attr:`hops` for every hop of ``flows``."""
        add_hops(self.path.start[flows], self.path.length[flows], self.path.links, self.hops, delta)

    # --- events --------------------------------------------------------------------------

    def _start(self, tasks: np.ndarray) -> None:
        t, now = self.t, self.now
        self.task.start[tasks] = now
        flows = t.local[tasks[t.kind[tasks] == FLOW]].astype(np.int64)  # stored as ID
        comp = tasks[t.kind[tasks] != FLOW]
        if len(comp):
            self.queue.push(now + t.duration[t.local[comp]], DONE, comp)
        if len(flows):
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
        code, m, batches, rates, ended, old = steps.run_quiet(self, cap, flow_state.SCAN, _TOL)
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
            if not self.count.rate_computations % 256:
                self._trim()
        if self.progress is not None:
            self.progress(self.task.done, self.nt)

    TRIM_S = 5.0  # CPU seconds between heap trims in a long run (each costs page faults)

    def _trim(self) -> None:
        """Every :attr:`TRIM_S` CPU seconds, return the heap's free pages to the OS: the
        batches' temporaries (up to the links of millions of flows) fragment the heap, and
        its resident size would otherwise creep up by hundreds of MB over a long run."""
        now = _time.process_time()
        if now - self.trimmed >= self.TRIM_S:
            self.trimmed = now
            trim(self.nf)

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
                smp.next_tick += smp.interval or np.inf  # (next_tick is inf without one)
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
        fl.release()  # every flow has ended: its event state goes before the result's arrays
        trim(self.nf)
        finish = tk.finish[t.flow_task] if self.nf else np.zeros(0)
        start = tk.start[t.flow_task] if self.nf else np.zeros(0)  # a flow starts as its task
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
            start=start,
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
