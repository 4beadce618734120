"""The simulator's state besides the flows' (:mod:`hpn.engine.flows`): tasks, paths, the
event queue and its completion lane, the sampler and the counters.

Every structure holds arrays indexed by task, flow or link id; the event loop in
:mod:`hpn.engine.sim` reads and updates them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from hpn.engine import kernels, steps
from hpn.engine.dag import ID_MAX
from hpn.engine.maxmin import gather_rows
from hpn.routing.base import Paths

START, DONE, CAPACITY = 2, 1, 0  # heap order at equal times: capacity, completions, starts


@dataclass(eq=False)
class TaskState:
    """Per task: start and finish times; dependencies as CSR with predecessor counts left."""

    start: np.ndarray
    finish: np.ndarray
    succ: np.ndarray  # successors, grouped by predecessor
    succ_off: np.ndarray
    indeg: np.ndarray  # predecessors not finished yet
    done: int = 0
    compiled = steps.HAVE_NUMBA  # complete() in one compiled call (the same result)

    @classmethod
    def of(
        cls, n: int, before: np.ndarray, after: np.ndarray, off: np.ndarray | None = None
    ) -> TaskState:
        """The state of ``n`` tasks with edges ``before[i] -> after[i]``, none started.
        Task ids and counts are int32 (:data:`hpn.engine.dag.ID`); the
        successors are grouped by a stable counting sort (compiled: no int64 permutation
        of the edges is built). ``off``: the edges are already so grouped, with these CSR
        offsets (:attr:`hpn.engine.dag.Tasks.dep_off`): ``after`` is shared, not copied."""
        succ, off = (after, off) if off is not None else kernels.successors(before, after, n)
        return cls(
            start=np.full(n, np.nan),
            finish=np.full(n, np.nan),
            succ=succ,
            succ_off=off,
            indeg=kernels.counts(after, n),
        )

    def roots(self) -> np.ndarray:
        """Tasks with no predecessor."""
        return np.flatnonzero(self.indeg == 0)

    def complete(self, tasks: np.ndarray, now: float) -> np.ndarray:
        """Record ``tasks`` finished at ``now``; the successors that became ready."""
        self.done += len(tasks)
        if self.compiled:
            return steps.complete(self, tasks, now)
        self.finish[tasks] = now
        off = self.succ_off
        cnt = off[tasks + 1] - off[tasks]
        if not cnt.sum():
            return np.zeros(0, np.int64)
        _, pos = gather_rows(off[tasks], cnt)
        succ, local = np.unique(self.succ[pos], return_inverse=True)  # sorted
        self.indeg[succ] -= np.bincount(local, minlength=len(succ))
        return succ[self.indeg[succ] == 0].astype(np.int64)


@dataclass(eq=False)
class PathTable:
    """Each flow's path as a row ``links[start : start + length]`` of a shared link array:
    flows of one connection share a row, and a re-route appends new rows."""

    start: np.ndarray
    length: np.ndarray
    links: np.ndarray
    latency: np.ndarray  # s per flow: the sum of its links' latencies
    routed: int = 0  # paths the router computed (fewer than flows: connections shared)

    def entries(self, flows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``flows``, link id) for every hop of those flows."""
        rep, pos = gather_rows(self.start[flows], self.length[flows])
        return rep, self.links[pos]

    def replace(self, flows: np.ndarray, new: Paths, link_latency: np.ndarray) -> None:
        """Give ``flows`` the paths ``new`` (appended to the link rows) and their latency."""
        if self.start.dtype != np.int64 and len(self.links) + len(new.links) > ID_MAX:
            self.start = self.start.astype(np.int64)  # row starts beyond int32
        self.start[flows] = len(self.links) + new.offsets[:-1]
        self.length[flows] = new.lengths
        self.links = np.concatenate([self.links, new.links.astype(self.links.dtype)])
        self.latency[flows] = new.per_flow_sum(link_latency)

    def paths(self) -> Paths:
        """Every flow's path as one CSR."""
        n = len(self.start)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(self.length, out=offsets[1:])
        _, pos = gather_rows(self.start, self.length)
        return Paths(offsets, self.links[pos])


@dataclass(eq=False)
class Lane:
    """Completions that the compiled loop (:func:`hpn.engine.steps.run_quiet`) queued
    beside the heap: entry ``i`` (of ``n``) is the batch ``ids[lo[i] : hi[i]]`` of tasks
    done at ``t[i]``, pushed with sequence number ``seq[i]``; ``ids[:used]`` are taken.
    ``first`` is the earliest ``t`` (inf: none)."""

    t: np.ndarray
    seq: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ids: np.ndarray
    n: int = 0
    used: int = 0
    first: float = np.inf

    @classmethod
    def of(cls, entries: int) -> Lane:
        """An empty lane with room for ``entries`` entries and ids."""
        i64 = np.int64
        z = np.zeros
        return cls(z(entries), z(entries, i64), z(entries, i64), z(entries, i64), z(entries, i64))

    def grow(self, need: int) -> None:
        """Room for ``need`` more entries and ids (the entries kept)."""
        size = max(2 * len(self.t), self.n + need + 64, self.used + need + 64)
        for name in ("t", "seq", "lo", "hi", "ids"):
            old = getattr(self, name)
            new = np.zeros(size, old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def head(self) -> tuple[float, int, int]:
        """(time, sequence number, index) of the earliest entry (by time, then sequence)."""
        n = self.n
        i = int(np.lexsort((self.seq[:n], self.t[:n]))[0])
        return float(self.t[i]), int(self.seq[i]), i

    def take(self, i: int) -> np.ndarray:
        """Remove entry ``i``; its ids."""
        ids = self.ids[self.lo[i] : self.hi[i]].copy()
        n = self.n = self.n - 1  # the last entry takes its place
        for a in (self.t, self.seq, self.lo, self.hi):
            a[i] = a[n]
        if not n:
            self.used = 0
        self.first = float(self.t[:n].min()) if n else np.inf
        return ids


@dataclass(eq=False)
class EventQueue:
    """Batches of ids on a heap: one entry per distinct (time, kind); with a ``lane``, also
    the completions queued there (:class:`Lane`), in the same order."""

    heap: list = field(default_factory=list)
    seq: int = 0
    popped: int = 0  # ids popped so far
    lane: Lane | None = None

    def push(self, times: np.ndarray, kind: int, ids: np.ndarray) -> None:
        """Queue ``ids`` at their ``times``, one batch per distinct time."""
        if not len(ids):
            return
        if len(ids) == 1:
            heapq.heappush(self.heap, (float(times[0]), kind, self.seq, ids))
            self.seq += 1
            return
        order = np.lexsort((ids, times))
        times, ids = times[order], ids[order]
        cut = np.flatnonzero(times[1:] != times[:-1]) + 1
        if not len(cut):
            heapq.heappush(self.heap, (float(times[0]), kind, self.seq, ids))
            self.seq += 1
            return
        self.push_sorted(times, kind, ids, np.concatenate(([0], cut, [len(ids)])))

    def push_sorted(
        self, times: np.ndarray, kind: int, ids: np.ndarray, bounds: np.ndarray
    ) -> None:
        """:meth:`push` of ids already sorted by (time, id); ``bounds``: where each distinct
        time begins, and the end."""
        b = bounds.tolist()
        at = times[bounds[:-1]].tolist()
        for t, lo, hi in zip(at, b[:-1], b[1:], strict=True):
            heapq.heappush(self.heap, (t, kind, self.seq, ids[lo:hi]))
            self.seq += 1

    def next_time(self) -> float:
        """Time of the next batch (inf when empty)."""
        t = self.heap[0][0] if self.heap else np.inf
        return min(t, self.lane.first) if self.lane is not None else t

    def pop_due(self, now: float) -> Iterator[tuple[int, np.ndarray]]:
        """Yield (kind, ids) of every batch due at ``now``, in heap order."""
        lim, heap, lane = now * (1 + 1e-15), self.heap, self.lane
        while True:
            due = heap and heap[0][0] <= lim
            if lane is not None and lane.n and lane.first <= lim:
                t, seq, i = lane.head()
                if not due or (t, DONE, seq) < heap[0][:3]:
                    ids = lane.take(i)
                    self.popped += len(ids)
                    yield DONE, ids
                    continue
            if not due:
                return
            _, kind, _, ids = heapq.heappop(heap)
            self.popped += len(ids)
            yield kind, ids


@dataclass(eq=False)
class Sampler:
    """Utilization per tier and of chosen links, every ``interval`` seconds."""

    interval: float | None
    links: np.ndarray
    next_tick: float = np.inf
    time: list = field(default_factory=list)
    tier: list = field(default_factory=list)
    link: list = field(default_factory=list)
    _tier_cap: np.ndarray | None = None  # capacity per tier, until a capacity changes

    def __post_init__(self) -> None:
        self.next_tick = 0.0 if self.interval else np.inf

    def sample(
        self,
        now: float,
        tiers: np.ndarray,
        cap: np.ndarray,
        load: np.ndarray,
        tier_load: np.ndarray,
    ) -> None:
        """One sample: ``tier_load`` holds the load summed per tier
        (:func:`hpn.engine.kernels.tier_sums`)."""
        if self._tier_cap is None:
            self._tier_cap = np.bincount(tiers, weights=cap, minlength=len(tier_load))
        tier_cap = self._tier_cap
        ntier = len(tier_cap)
        self.time.append(now)
        self.tier.append(np.divide(tier_load, tier_cap, where=tier_cap > 0, out=np.zeros(ntier)))
        c, ld = cap[self.links], load[self.links]
        self.link.append(np.divide(ld, c, where=c > 0, out=np.zeros(len(c))))

    def capacity_changed(self) -> None:
        """Forget the cached per-tier capacity."""
        self._tier_cap = None


@dataclass
class Counters:
    events: int = 0
    batches: int = 0
    rate_computations: int = 0
    full_refills: int = 0  # rate computations that re-filled every sending flow
