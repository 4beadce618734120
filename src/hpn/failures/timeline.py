"""Iterations of a job across faults: throughput, halts, crashes and restarts.

Iteration by iteration: each starts from the fault state at its start (links down at time 0,
so routing avoids them from the first byte) and sees, as engine capacity events, every change
that happens while it runs (with re-routing: a flow crossing a link that goes down moves to a
surviving path; a flow with none, a cut-off NIC, stalls until the repair). An iteration with
the same start state and no change inside it takes the same time, so durations are cached by
state: a timeline of thousands of iterations costs a handful of simulations. Exact for the
fluid model except one simplification: flows moved off a link within an iteration stay on
their new path until the iteration ends (the next iteration uses the repaired link again).

Flows crossing a *held* link (:mod:`hpn.failures.failover`: blackholed until someone routes
around it) wait at rate 0; ``blackholed_s`` is the time some flow of the job was so held.

A crash: when some GPU of the job is cut off (all its NIC ports down), or some flow of it
blackholed, for longer than the timeout, the job dies at ``cut-off + timeout``, restarts
``restart`` seconds later on healthy hosts (faults that began before the crash no longer
touch it) and redoes the work since its last checkpoint (:mod:`hpn.failures.checkpoint`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from hpn.engine import CapacityEvents, simulate
from hpn.failures.checkpoint import Recovery
from hpn.failures.result import CrashEvent, TimelineFigures
from hpn.failures.semantics import Outage, Reach
from hpn.failures.workload import Iteration
from hpn.topology.fabric import Fabric

_EPS = 1e-9


class _States:
    """Fault states over time and iteration durations per state (cached)."""

    def __init__(self, fabric: Fabric, it: Iteration, router, seed: int):
        self.fabric, self.it, self.router, self.seed = fabric, it, router, seed
        self.cap0 = fabric.links.capacity
        self.reach = Reach(fabric, it.gpus)
        self.cache: dict[tuple, float] = {}
        self.simulations = 0
        self._used: np.ndarray | None = None

    def state(self, t: float, outs: list[Outage]) -> tuple[np.ndarray, np.ndarray]:
        """(links down, links down whose flows are held) at time ``t``."""
        return self.state3(t, outs)[:2]

    def state3(self, t: float, outs: list[Outage]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(links down, held, capacity share left on links degraded but up) at ``t``."""
        d = np.zeros(self.fabric.num_links, bool)
        h = np.zeros(self.fabric.num_links, bool)
        g = np.ones(self.fabric.num_links)
        for o in outs:
            if o.start <= t < o.end:
                if o.scale > 0:
                    g[o.links] = np.minimum(g[o.links], o.scale)
                    continue
                d[o.links] = True
                h[o.held(t)] = True
        g[d] = 1.0
        return d, h, g

    def down(self, t: float, outs: list[Outage]) -> np.ndarray:
        return self.state(t, outs)[0]

    @staticmethod
    def changes(outs: list[Outage]) -> np.ndarray:
        t = [x for o in outs for x in o.changes()]
        return np.unique(np.asarray(t, float))

    @property
    def used(self) -> np.ndarray:
        """Bool per link: some flow of the iteration crosses it when nothing is down."""
        if self._used is None:
            from hpn.engine.sim import route_flows

            tasks = self.it.dag.tasks
            path = route_flows(self.fabric, self.router, tasks)
            _, links = path.entries(np.arange(len(tasks.size)))
            self._used = np.zeros(self.fabric.num_links, bool)
            self._used[links] = True
        return self._used

    def cut_offs(
        self, outs: list[Outage], nics: bool = True, held_flows: bool = True
    ) -> list[tuple[float, float]]:
        """Maximal [a, b) intervals in which some GPU of the job is cut off (all its ports
        down; ``nics``) or some flow of it blackholed (crossing a held link; ``held_flows``)."""
        pts = self.changes(outs)
        spans: list[list[float]] = []
        for i, c in enumerate(pts):
            down, held = self.state(c, outs)
            cut = nics and self.reach.cut_off(down).any()
            if cut or held_flows and held.any() and (held & self.used).any():
                end = pts[i + 1] if i + 1 < len(pts) else math.inf
                if spans and spans[-1][1] == c:
                    spans[-1][1] = end
                else:
                    spans.append([float(c), float(end)])
        return [(a, b) for a, b in spans]

    def duration(self, t: float, outs: list[Outage], limit: float = math.inf) -> float:
        """Time of the iteration starting at ``t`` (changes at or after ``limit`` ignored)."""
        down, held, share = self.state3(t, outs)
        gray = np.flatnonzero(share < 1)
        key = (
            tuple(np.flatnonzero(down).tolist()),
            tuple(np.flatnonzero(held).tolist()),
            tuple(zip(gray.tolist(), share[gray].tolist(), strict=True)),
        )
        pts = self.changes(outs)
        pts = pts[(pts > t + _EPS) & (pts < limit)]
        known = self.cache.get(key)
        if known is not None and not (pts <= t + known).any():
            return known
        ev = [(0.0, int(lk), 0.0) for lk in np.flatnonzero(down)]
        ev += [(0.0, int(lk), float(self.cap0[lk] * share[lk])) for lk in gray]
        hold = [bool(held[lk]) for lk in np.flatnonzero(down)] + [False] * len(gray)
        prev, prev_h, prev_g = down, held, share
        for c in pts:
            now, now_h, now_g = self.state3(c, outs)
            for lk in np.flatnonzero((now != prev) | (now_h != prev_h) | (now_g != prev_g)):
                cap = 0.0 if now[lk] else float(self.cap0[lk] * now_g[lk])
                ev.append((float(c - t), int(lk), cap))
                hold.append(bool(now_h[lk]))
            prev, prev_h, prev_g = now, now_h, now_g
        events = CapacityEvents.of(ev, reroute=True, hold=hold) if ev else None
        res = simulate(
            self.fabric, self.it.dag, self.router, seed=self.seed, capacity_events=events
        )
        self.simulations += 1
        d = float(res.makespan)
        if not (pts <= t + d).any():
            self.cache[key] = d
        return d


def _clean(x: float, scale: float = 1.0) -> float:
    """``x`` as a float, with rounding noise (|x| < 1e-9 scale) as 0."""
    return 0.0 if abs(x) < 1e-9 * max(scale, 1.0) else float(x)


def _overlap(a: float, b: float, lo: float, hi: float) -> float:
    return max(0.0, min(b, hi) - max(a, lo))


def run_timeline(
    fabric: Fabric,
    it: Iteration,
    outs: list[Outage],
    router,
    recovery: Recovery,
    duration: float | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[TimelineFigures, dict[str, Any]]:
    """(result, tables) of the job running across ``outs`` from time 0; ``progress(done,
    total)``: simulated milliseconds done of the horizon's, after every iteration."""
    st = _States(fabric, it, router, seed)
    d0 = st.duration(0.0, [])
    rate0 = it.samples / d0
    tail = max(5 * d0, 10.0)
    finite = st.changes(outs)
    horizon = duration if duration is not None else (finite.max() if len(finite) else 0) + tail
    rows: list[tuple[float, float, float]] = []  # (start, end, samples) of finished iterations
    crashes: list[CrashEvent] = []
    epochs: list[tuple[float, float, list[Outage]]] = []  # (from, to, outages in force)
    t, since, live = 0.0, 0.0, list(outs)
    cuts = st.cut_offs(live)
    while t < horizon - _EPS:
        if progress is not None:
            progress(int(t * 1e3), int(horizon * 1e3))
        crash = next(
            ((max(a, t), b) for a, b in cuts if b - a > recovery.timeout and b > t + _EPS), None
        )
        if crash is not None and crash[0] <= t + _EPS:
            d = math.inf  # cut off as it starts: halted, no byte moves until the crash
        else:
            d = st.duration(t, live, crash[0] if crash else math.inf)
        if crash is None or t + d <= crash[0] + _EPS:
            rows.append((t, t + d, it.samples))
            t += d
            continue
        a = crash[0]
        x = a + recovery.timeout
        crashes.append(
            CrashEvent(
                cut_off_s=a,
                crash_s=x,
                restart_s=x + recovery.restart,
                lost_work_s=recovery.lost_work(a),
                iteration_start_s=t,
            )
        )
        epochs.append((since, a, live))
        live = [o for o in live if o.start > x]
        cuts = st.cut_offs(live)
        since = t = x + recovery.restart
        if duration is None:
            horizon = max(horizon, t + tail)
    epochs.append((since, horizon, live))
    halted = float(recovery.timeout * len(crashes))
    blackholed = 0.0
    for lo, hi, ol in epochs:
        halted += sum(_overlap(a, b, lo, hi) for a, b in st.cut_offs(ol, held_flows=False))
        blackholed += sum(_overlap(a, b, lo, hi) for a, b in st.cut_offs(ol, nics=False))
    # the window of the faults, and what the job achieved in it
    starts = [o.start for o in outs]
    w0 = min(starts) if starts else 0.0
    w1 = min(max((o.end for o in outs), default=0.0), horizon)
    w1 = max(w1, max((c["restart_s"] for c in crashes), default=w1))
    achieved = sum(s * _overlap(a, b, w0, w1) / (b - a) for a, b, s in rows)
    during = achieved / (w1 - w0) if w1 > w0 else rate0
    done = sum(s * _overlap(a, b, 0.0, horizon) / (b - a) for a, b, s in rows)
    lost_work = float(sum(c["lost_work_s"] for c in crashes))
    durs = np.array([b - a for a, b, _ in rows]) if rows else np.array([d0])
    loss = 1.0 - during / rate0
    lost_time = (horizon * rate0 - done) / rate0 + lost_work
    result = TimelineFigures(
        baseline_samples_per_s=rate0,
        samples_per_s_during_fault=during,
        throughput_loss=_clean(loss),
        halted_s=halted,
        blackholed_s=blackholed,
        crashed=bool(crashes),
        crashes=len(crashes),
        lost_work_s=lost_work,
        job_time_lost_s=_clean(lost_time, horizon),
        fault_window_s=[w0, w1],
        iteration_s=d0,
        slowest_iteration_s=float(durs.max()),
        iterations=len(rows),
        samples_per_iteration=it.samples,
        horizon_s=horizon,
        simulations=st.simulations,
        crash_events=crashes,
    )
    return result, _tables(rows, crashes, outs, rate0, horizon)


def _tables(rows, crashes, outs, rate0, horizon) -> dict[str, Any]:
    tt: list[float] = []
    tp: list[float] = []
    for a, b, s in rows:
        tt += [a, b]
        tp += [s / (b - a)] * 2
    for c in crashes:
        a, r = c["cut_off_s"], c["restart_s"]
        tt += [c["iteration_start_s"], a, a, r]
        tp += [rate0, rate0, 0.0, 0.0]
    order = np.argsort(tt, kind="stable")
    ev: list[tuple[float, str]] = []
    for o in outs:
        ev.append((o.start, f"down {o.label}"))
        if math.isfinite(o.end) and o.end <= horizon:
            ev.append((o.end, f"up {o.label}"))
    for c in crashes:
        ev += [(c["crash_s"], "crash"), (c["restart_s"], "restart")]
    ev.sort()
    return {
        "throughput": {"time_s": np.asarray(tt)[order], "throughput": np.asarray(tp)[order]},
        "events": {"time_s": [e[0] for e in ev], "label": [e[1] for e in ev]},
    }
