"""The event loop: ``simulate(fabric, dag, ...) -> Result``.

Between events every transmitting flow has a constant rate, the max-min fair allocation
(:mod:`hpn.engine.maxmin`). Events sit in a heap as batches (one entry per distinct time and
kind, holding an array of task ids): task starts, task completions (compute done, or a flow's
last byte delivered), capacity changes (the fault/repair hook) and sampling ticks. A flow's
transmission end is not a heap event: the next one is ``min(remaining / rate)``, found
vectorized, and every flow ending within a relative 1e-9 of it ends in the same batch. Rates
are recomputed once per batch, and only when the set of transmitting flows or a capacity
changed.

Remaining bytes are booked lazily, like link loads (:mod:`hpn.engine.links`): a flow's
``rem`` holds its bytes left at ``t_at``, when its rate last changed, and its projected end
``fin`` stays valid until the rate changes again. A batch then costs two passes over
contiguous per-flow arrays (``fin.min()`` and the flows ending) plus the work for the flows
whose rate changed, instead of gathering, dividing and decrementing every transmitting flow.
"""

from __future__ import annotations

import heapq
import time as _time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hpn.engine.dag import FLOW, FlowDAG
from hpn.engine.links import LinkLedger
from hpn.engine.maxmin import incidence, maxmin_rates
from hpn.engine.result import Result, Series
from hpn.errors import InputError
from hpn.routing.base import Paths, Router, router_for
from hpn.topology.fabric import Fabric

START, DONE, CAPACITY = 2, 1, 0  # heap order at equal times: capacity, completions, starts
_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class CapacityEvents:
    """At ``time[i]``, directed link ``link[i]`` gets ``capacity[i]`` bit/s (0 = down).

    With ``reroute``, flows whose path crosses a link at capacity 0 are re-routed (the router
    avoiding every such link) when the event fires; they keep the bytes already sent.
    """

    time: np.ndarray
    link: np.ndarray
    capacity: np.ndarray
    reroute: bool = False

    @classmethod
    def of(cls, events: list[tuple[float, int, float]], reroute: bool = False):
        t, lk, c = zip(*events, strict=True) if events else ((), (), ())
        return cls(np.asarray(t, float), np.asarray(lk, np.int64), np.asarray(c, float), reroute)


def simulate(
    fabric: Fabric,
    dag: FlowDAG,
    router: Router | str | None = None,
    *,
    seed: int = 0,
    capacity_events: CapacityEvents | None = None,
    sample_interval: float | None = None,
    sample_links: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Result:
    """Run ``dag`` on ``fabric``; flows without explicit paths are routed by ``router`` (a
    policy name; None: the fabric's default, :func:`hpn.routing.default_policy`)."""
    wall = _time.perf_counter()
    if router is None or isinstance(router, str):
        router = router_for(fabric, router, seed=seed)
    dag.validate(fabric.num_nodes)
    sim = _Sim(fabric, dag, router, capacity_events, sample_interval, sample_links, progress)
    sim.run()
    return sim.result(_time.perf_counter() - wall)


def _reference(
    fabric: Fabric, dag: FlowDAG, router: Router | str | None = None, *, refill=True, **kw
) -> Result:
    """:func:`simulate` with the shortcuts off, the oracle of the tests: remaining bytes
    decremented for every transmitting flow at every batch, ends found by dividing them by
    the rates and, with ``refill``, rates fully re-filled at every recomputation."""
    wall = _time.perf_counter()
    if router is None or isinstance(router, str):
        router = router_for(fabric, router, seed=kw.pop("seed", 0))
    kw.pop("seed", None)
    dag.validate(fabric.num_nodes)
    sim = _Sim(
        fabric,
        dag,
        router,
        kw.get("capacity_events"),
        kw.get("sample_interval"),
        kw.get("sample_links"),
        None,
        reference=2 if refill else 1,
    )
    sim.run()
    return sim.result(_time.perf_counter() - wall)


class _Sim:
    def __init__(
        self,
        fabric,
        dag,
        router,
        cap_events,
        sample_interval,
        sample_links,
        progress,
        reference=False,
    ):
        self.fabric, self.router, self.progress = fabric, router, progress
        self.reference = reference
        t = self.t = dag.tasks
        nf, nt, nl = len(t.size), len(t.kind), fabric.num_links
        self.nf, self.nt = nf, nt
        self.cap = fabric.links.capacity / 8.0  # bytes/s
        self.cap0 = fabric.links.capacity.copy()
        self.lat = fabric.links.latency
        self._init_paths(t)
        self.rem = t.size.copy()  # bytes left at t_at
        self.t_at = np.zeros(nf)
        self.rate = np.zeros(nf)
        self.fin = np.full(nf, np.inf)  # projected end of transmission (inf: not sending)
        self.soon = np.full(nf, np.inf)  # when rem falls to size * 1e-12 (<= fin)
        self.start = np.full(nf, np.nan)
        self.tx_end = np.full(nf, np.nan)
        self.task_start = np.full(nt, np.nan)
        self.task_finish = np.full(nt, np.nan)
        self.sending = np.zeros(nf, bool)  # transmitting flows
        self.n_act = 0
        self.ledger = LinkLedger(self.cap)
        self.now, self.done, self.dirty, self.full = 0.0, 0, False, True
        self.departed: list[np.ndarray] = []  # flows that ended since the last rate update
        self.departed_rates: list[np.ndarray] = []
        self.heap: list = []
        self.seq = 0
        self.n_events = self.n_rates = self.n_batches = 0
        # dependencies as CSR: successors of each task; remaining predecessor counts
        order = np.argsort(t.dep_before, kind="stable")
        self.succ = t.dep_after[order]
        self.succ_off = np.zeros(nt + 1, np.int64)
        np.cumsum(np.bincount(t.dep_before, minlength=nt), out=self.succ_off[1:])
        self.indeg = np.bincount(t.dep_after, minlength=nt).astype(np.int64)
        roots = np.flatnonzero(self.indeg == 0)
        self._push_grouped(t.delay[roots], START, roots)
        self.cap_events = cap_events
        if cap_events is not None and len(cap_events.time):
            ce = cap_events
            if (ce.link < 0).any() or (ce.link >= nl).any():
                raise InputError("capacity event", f"link ids must be in 0..{nl - 1}")
            if (ce.capacity < 0).any() or (ce.time < 0).any():
                raise InputError("capacity event", "times and capacities must be >= 0")
            self._push_grouped(ce.time, CAPACITY, np.arange(len(ce.time)))
        self.interval = sample_interval
        if sample_interval is not None and not sample_interval > 0:
            raise InputError("sample_interval", "must be > 0")
        self.sample_links = (
            np.zeros(0, np.int64) if sample_links is None else np.asarray(sample_links, np.int64)
        )
        self.samples_t: list[float] = []
        self.samples_tier: list[np.ndarray] = []
        self.samples_link: list[np.ndarray] = []
        self.next_tick = 0.0 if sample_interval else np.inf

    # --- paths ---------------------------------------------------------------------------

    def _init_paths(self, t) -> None:
        nf = len(t.size)
        routed = np.flatnonzero(~t.has_path)
        given = np.flatnonzero(t.has_path)
        if len(given):
            t.paths.check(self.fabric, t.src[given], t.dst[given])
        parts, idx = [], []
        if len(given):
            parts.append(t.paths)
            idx.append(given)
        if len(routed):
            parts.append(
                self.router.route(self.fabric, t.src[routed], t.dst[routed], t.keys[routed])
            )
            idx.append(routed)
        order = np.concatenate(idx) if idx else np.zeros(0, np.int64)
        paths = (
            Paths.concat(parts).take(np.argsort(order, kind="stable")) if nf else Paths.concat([])
        )
        self.p_start = paths.offsets[:-1].copy()
        self.p_len = paths.lengths.copy()
        self.p_links = paths.links
        self.path_lat = paths.per_flow_sum(self.lat) if nf else np.zeros(0)

    def paths(self) -> Paths:
        offsets = np.zeros(self.nf + 1, np.int64)
        np.cumsum(self.p_len, out=offsets[1:])
        pos = np.repeat(self.p_start - offsets[:-1], self.p_len) + np.arange(offsets[-1])
        return Paths(offsets, self.p_links[pos])

    def _entries(self, flows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``flows``, link id) for every hop of those flows."""
        ln = self.p_len[flows]
        rep = np.repeat(np.arange(len(flows)), ln)
        base = np.repeat(self.p_start[flows] - np.concatenate(([0], np.cumsum(ln)[:-1])), ln)
        return rep, self.p_links[base + np.arange(len(rep))]

    def _reroute(self) -> None:
        down = self.cap <= 0
        pending = np.isnan(self.tx_end)
        rep, links = self._entries(np.arange(self.nf))
        hit = np.zeros(self.nf, bool)
        hit[rep[down[links]]] = True
        flows = np.flatnonzero(hit & pending)
        if not len(flows):
            return
        t = self.t
        try:
            new = self.router.route(self.fabric, t.src[flows], t.dst[flows], t.keys[flows], down)
        except InputError:
            return  # no path avoids the failed links: the flows wait for a repair
        self.p_start[flows] = len(self.p_links) + new.offsets[:-1]
        self.p_len[flows] = new.lengths
        self.p_links = np.concatenate([self.p_links, new.links])
        self.path_lat[flows] = new.per_flow_sum(self.lat)
        self.dirty = True

    # --- events --------------------------------------------------------------------------

    def _push_grouped(self, times: np.ndarray, kind: int, ids: np.ndarray) -> None:
        if not len(ids):
            return
        order = np.lexsort((ids, times))
        times, ids = times[order], ids[order]
        cut = np.flatnonzero(np.diff(times)) + 1
        for ts, chunk in zip(np.split(times, cut), np.split(ids, cut), strict=True):
            heapq.heappush(self.heap, (float(ts[0]), kind, self.seq, chunk))
            self.seq += 1

    def _start(self, tasks: np.ndarray) -> None:
        t, now = self.t, self.now
        self.task_start[tasks] = now
        flows = t.local[tasks[t.kind[tasks] == FLOW]]
        comp = tasks[t.kind[tasks] != FLOW]
        if len(comp):
            self._push_grouped(now + t.duration[t.local[comp]], DONE, comp)
        if len(flows):
            self.start[flows] = now
            empty = self.rem[flows] <= 0
            if empty.any():
                self._tx_done(flows[empty])
            live = flows[~empty]
            if len(live):
                live = np.unique(live)
                self.n_act += int((~self.sending[live]).sum())
                self.sending[live] = True
                self.t_at[live] = now
                self.dirty = self.full = True

    def _tx_done(self, flows: np.ndarray) -> None:
        self.departed.append(flows)
        self.departed_rates.append(self.rate[flows].copy())
        self.tx_end[flows] = self.now
        self.rem[flows] = 0.0
        self.rate[flows] = 0.0
        self.fin[flows] = self.soon[flows] = np.inf
        self.n_act -= int(self.sending[flows].sum())
        self.sending[flows] = False
        self._push_grouped(self.now + self.path_lat[flows], DONE, self.t.flow_task[flows])

    def _complete(self, tasks: np.ndarray) -> None:
        self.task_finish[tasks] = self.now
        self.done += len(tasks)
        off = self.succ_off
        cnt = off[tasks + 1] - off[tasks]
        if not cnt.sum():
            return
        pos = np.repeat(off[tasks] - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
        succ = self.succ[pos + np.arange(int(cnt.sum()))]
        np.subtract.at(self.indeg, succ, 1)
        ready = np.unique(succ[self.indeg[succ] == 0])
        self._push_grouped(self.now + self.t.delay[ready], START, ready)

    def _capacity(self, idx: np.ndarray) -> None:
        ce = self.cap_events
        for i in idx:  # in event order, so the last change of a link at one time wins
            self.cap[ce.link[i]] = ce.capacity[i] / 8.0
        if ce.reroute:
            self._reroute()
        self.dirty = self.full = True

    # --- rates ---------------------------------------------------------------------------

    def _fill(self, flows, rep, local, avail) -> np.ndarray:
        """Max-min rates of ``flows`` whose hops are (``rep``: position in flows, ``local``:
        index into ``avail``, the capacity in bytes/s left to them per link)."""
        group = self.t.group[flows]
        grouped = group >= 0
        user = np.arange(len(flows))
        if grouped.any():
            ug, ginv = np.unique(group[grouped], return_inverse=True)
            solo = np.flatnonzero(~grouped)
            user = np.empty(len(flows), np.int64)
            user[solo] = np.arange(len(solo))
            user[grouped] = len(solo) + ginv
        a = incidence(user[rep], local, int(user.max()) + 1, len(avail))
        return maxmin_rates(a, avail)[user]

    def _set_load(self, links: np.ndarray, new: np.ndarray) -> None:
        self.ledger.set(links, new, self.now)

    def _settle(self, flows: np.ndarray) -> None:
        """Book the bytes ``flows`` sent since ``t_at`` (before their rate changes)."""
        self.rem[flows] -= self.rate[flows] * (self.now - self.t_at[flows])
        self.t_at[flows] = self.now

    def _set_rates(self, flows: np.ndarray, rate: np.ndarray) -> None:
        self._settle(flows)
        self.rate[flows] = rate
        rem, tiny = self.rem[flows], self.t.size[flows] * 1e-12
        on = rate > 0
        r = np.where(on, rate, 1.0)
        self.fin[flows] = np.where(on, self.now + rem / r, np.inf)
        idle = np.where(rem <= tiny, -np.inf, np.inf)
        self.soon[flows] = np.where(on, self.now + (rem - tiny) / r, idle)

    def _rates(self) -> None:
        """Recompute rates. After departures only, users at rates below the lowest departed
        rate keep theirs (progressive filling reaches those levels unchanged: a departure only
        raises the saturation level of the links it crossed, all at or above its own rate),
        so only the flows at or above it are filled again, on what the others leave."""
        self.n_rates += 1
        full = self.full or self.reference == 2 or not len(self.departed)
        self.full = False
        if not full:
            gone = np.concatenate(self.departed)
            old = np.concatenate(self.departed_rates)
            floor = old.min() * (1 - 1e-9)
            # flows not sending have rate 0: with a positive floor they are never picked
            live = np.flatnonzero(self.rate >= floor) if floor > 0 else None
            full = live is None or 2 * len(live) > self.n_act
        self.departed, self.departed_rates = [], []
        if full:
            act = np.flatnonzero(self.sending)
            load = self.ledger.load
            new = np.zeros(len(self.cap))
            if len(act):
                rep, links = self._entries(act)
                used, local = np.unique(links, return_inverse=True)
                rate = self._fill(act, rep, local, self.cap[used])
                self._set_rates(act, rate)
                new[used] = np.bincount(local, weights=rate[rep], minlength=len(used))
            touched = np.flatnonzero((load > 0) | (new > 0))
            self._set_load(touched, new[touched])
            return
        g_rep, g_links = self._entries(gone)
        l_rep, l_links = self._entries(live)
        touched, inv = np.unique(np.concatenate([g_links, l_links]), return_inverse=True)
        g_loc, l_loc = inv[: len(g_links)], inv[len(g_links) :]
        n = len(touched)
        fixed = self.ledger.load[touched] - np.bincount(g_loc, weights=old[g_rep], minlength=n)
        fixed -= np.bincount(l_loc, weights=self.rate[live][l_rep], minlength=n)
        np.maximum(fixed, 0.0, out=fixed)
        new = fixed
        if len(live):
            used, local = np.unique(l_loc, return_inverse=True)
            avail = np.maximum(self.cap[touched[used]] - fixed[used], 0.0)
            rate = self._fill(live, l_rep, local, avail)
            self._set_rates(live, rate)
            new = fixed + np.bincount(l_loc, weights=rate[l_rep], minlength=n)
        self._set_load(touched, new)

    def _advance(self, t_next: float) -> None:
        self.now = t_next
        if self.reference and self.n_act:  # eager bookkeeping, as the oracle
            self._settle(np.flatnonzero(self.sending))

    def _sample(self) -> None:
        lk = self.fabric.links
        ntier = int(lk.tier.max()) + 1 if len(lk.tier) else 0
        tier_cap = np.bincount(lk.tier, weights=self.cap, minlength=ntier)
        tier_load = np.bincount(lk.tier, weights=self.ledger.load, minlength=ntier)
        self.samples_t.append(self.now)
        self.samples_tier.append(
            np.divide(tier_load, tier_cap, where=tier_cap > 0, out=np.zeros(ntier))
        )
        cap = self.cap[self.sample_links]
        load = self.ledger.load[self.sample_links]
        self.samples_link.append(np.divide(load, cap, where=cap > 0, out=np.zeros(len(cap))))

    # --- the loop ------------------------------------------------------------------------

    def run(self) -> None:
        while True:
            t_heap = self.heap[0][0] if self.heap else np.inf
            act, proj = None, None
            t_fin = self.fin.min() if self.n_act else np.inf
            if self.reference and self.n_act:
                act = np.flatnonzero(self.sending)
                r = self.rate[act]
                with np.errstate(divide="ignore"):
                    proj = np.where(r > 0, self.rem[act] / r, np.inf)
                t_fin = self.now + proj.min()
            t_next = min(t_heap, t_fin)
            if self.done == self.nt:
                break
            if t_next == np.inf:
                self._stuck()
            if self.next_tick < t_next:
                self._advance(self.next_tick)
                self._sample()
                self.next_tick += self.interval
                continue
            dt = t_next - self.now
            self._advance(t_next)
            self.n_batches += 1
            if proj is not None:
                ended = proj <= dt * (1 + _TOL) + 1e-15
                ended |= self.rem[act] <= self.t.size[act] * 1e-12
                if ended.any():
                    self._tx_done(act[ended])
                    self.dirty = True
            elif self.n_act:
                # the reference's test, on projected times: proj = fin - (now - dt)
                limit = t_next + dt * _TOL + 1e-15
                cand = np.flatnonzero(self.soon <= limit)  # soon <= fin: a superset
                if len(cand):
                    ended = cand[(self.fin[cand] <= limit) | (self.soon[cand] <= self.now)]
                    if len(ended):
                        self._tx_done(ended)
                        self.dirty = True
            while self.heap and self.heap[0][0] <= self.now * (1 + 1e-15):
                _, kind, _, ids = heapq.heappop(self.heap)
                self.n_events += len(ids)
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
                self.progress(self.done, self.nt)
        if self.interval and self.done:
            self._sample()
        loaded = np.flatnonzero(self.ledger.load > 0)
        self._set_load(loaded, np.zeros(len(loaded)))

    def _stuck(self) -> None:
        left = self.nt - self.done
        act = np.flatnonzero(self.sending)
        if len(act):
            f = int(act[0])
            rep, links = self._entries(act[:1])
            dead = links[self.cap[links] <= 0]
            why = f"its path crosses link {int(dead[0])} at capacity 0" if len(dead) else "rate 0"
            raise InputError(
                "dag",
                f"{left} tasks can never finish: flow {f} (and {len(act) - 1} more) "
                f"has {why} and no repair is scheduled",
            )
        raise InputError("dag", f"{left} tasks can never start (their dependencies never finish)")

    def result(self, wall: float) -> Result:
        t = self.t
        finish = self.task_finish[t.flow_task] if self.nf else np.zeros(0)
        series = None
        if self.interval:
            series = Series(
                np.asarray(self.samples_t),
                np.asarray(self.samples_tier),
                np.asarray(self.samples_link).reshape(len(self.samples_t), -1),
                self.sample_links,
            )
        makespan = float(np.nanmax(self.task_finish)) if self.nt else 0.0
        return Result(
            task_start=self.task_start,
            task_finish=self.task_finish,
            flow_task=t.flow_task,
            size=t.size,
            start=self.start,
            tx_end=self.tx_end,
            finish=finish,
            path_latency=self.path_lat,
            paths=self.paths(),
            link_bytes=self.ledger.bytes,
            link_busy=self.ledger.busy,
            link_peak_util=self.ledger.peak,
            link_capacity=self.cap0,
            makespan=makespan,
            series=series,
            stats={
                "events": self.n_events,
                "batches": self.n_batches,
                "rate_computations": self.n_rates,
                "sim_wall_s": wall,
            },
        )
