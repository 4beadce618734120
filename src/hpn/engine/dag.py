"""``FlowDAG``: the engine's input: network flows and compute tasks with dependencies.

Flows and compute tasks share one id space (task ids, in the order they were added). A task
starts ``delay`` seconds after its last dependency finishes (or after t = 0 if it has none).
A flow finishes when its last byte has been sent and has crossed its path (the sum of its
links' latencies); a compute task finishes ``duration`` seconds after it starts. Flows added
in one ``add_flows(..., coupled=True)`` call form a coupled group: at every instant all its
active members get the same rate, the group's bottleneck rate (a pipelined collective).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from hpn.errors import InputError
from hpn.routing.base import Paths

FLOW, COMPUTE = 0, 1
ID = np.int32
"""The dtype of stored task ids (dependency edges, flow and compute indices): 4 bytes, half of
int64, on DAGs of millions of flows; a DAG of more than ``2**31 - 1`` tasks is refused."""
ID_MAX = _ID_MAX = int(np.iinfo(ID).max)
"""The largest :data:`ID`."""


def _ids(x: np.ndarray) -> np.ndarray:
    """``x`` as :data:`ID`; an id out of its range is kept out of range (-1), so
    :meth:`FlowDAG.validate` names it as an unknown task instead of a wrapped one."""
    if x.dtype == ID:
        return x
    if len(x) and (int(x.min()) < -1 or int(x.max()) > _ID_MAX):
        x = np.where((x < 0) | (x > _ID_MAX), -1, x)
    return x.astype(ID)


def _arr(x, n: int | None, dtype, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=dtype)
    if a.ndim == 0 and n is not None:
        a = np.full(n, a, dtype)
    if a.ndim != 1 or (n is not None and len(a) != n):
        raise InputError(name, f"expected {n} values, got shape {a.shape}")
    return a


@dataclass(frozen=True, eq=False)
class Tasks:
    """The DAG as arrays (see :attr:`FlowDAG.tasks`)."""

    kind: np.ndarray  # FLOW / COMPUTE per task
    local: np.ndarray  # index among flows or among compute tasks
    delay: np.ndarray  # s
    flow_task: np.ndarray  # task id per flow
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray  # bytes per flow
    group: np.ndarray  # coupled group per flow (ID), -1 = none
    keys: np.ndarray  # routing key per flow
    has_path: np.ndarray  # bool per flow: an explicit path was given
    paths: Paths  # explicit paths of the flows with has_path, in flow order
    compute_task: np.ndarray
    node: np.ndarray  # GPU per compute task
    duration: np.ndarray  # s per compute task
    dep_before: np.ndarray  # ID (int32), as every stored task id; sorted (stably) when valid
    dep_after: np.ndarray
    dep_off: np.ndarray | None = None  # CSR offsets of the sorted edges (None: not sorted)


class FlowDAG:
    """Build a DAG of flows and compute tasks; every ``add_*`` returns the new task ids."""

    def __init__(self) -> None:
        self._flows: list[tuple] = []
        self._compute: list[tuple] = []
        self._deps: list[tuple[np.ndarray, np.ndarray]] = []
        self._kinds: list[np.ndarray] = []
        self._delays: list[np.ndarray] = []
        self.num_tasks = 0
        self.num_flows = 0
        self.num_compute = 0
        self._groups = 0

    def _new_ids(self, n: int, kind: int, delay) -> np.ndarray:
        if self.num_tasks + n > _ID_MAX:
            raise InputError("dag", f"at most {_ID_MAX:,} tasks, got {self.num_tasks + n:,}")
        ids = np.arange(self.num_tasks, self.num_tasks + n, dtype=np.int64)
        self.num_tasks += n
        self._kinds.append(np.full(n, kind, np.int8))
        d = np.asarray(delay, np.float64)
        # a scalar delay stays one value (a zero-stride view), not n copies
        self._delays.append(np.broadcast_to(d, (n,)) if d.ndim == 0 else _arr(d, n, None, "delay"))
        self.__dict__.pop("tasks", None)
        return ids

    def add_flows(
        self,
        src: npt.ArrayLike,
        dst: npt.ArrayLike,
        size: npt.ArrayLike,
        *,
        delay: npt.ArrayLike = 0.0,
        paths: Paths | None = None,
        coupled: bool = False,
        keys: npt.ArrayLike | None = None,
        groups: npt.ArrayLike | None = None,
    ) -> np.ndarray:
        """Flows ``src[i] -> dst[i]`` of ``size`` bytes (scalars broadcast).

        ``paths``: explicit link-id paths (else the router chooses); ``coupled``: the flows are
        one coupled group; ``keys``: routing keys (default: the task ids); ``groups``: several
        coupled groups at once, a label per flow in 0..k-1 (every label used), the same as k
        calls with ``coupled=True``, one per label in label order, when the labels do not
        decrease.
        """
        src = np.atleast_1d(np.asarray(src, np.int64))
        n = len(src)
        dst = _arr(dst, n, np.int64, "dst")
        size = _arr(size, n, np.float64, "size")
        if paths is not None and len(paths) != n:
            raise InputError("paths", f"{len(paths)} paths for {n} flows")
        ids = self._new_ids(n, FLOW, delay)
        keys = ids if keys is None else _arr(keys, n, np.int64, "keys")
        group = np.full(n, -1, ID)
        if groups is not None:
            labels = _arr(groups, n, np.int64, "groups")
            k = int(labels.max()) + 1 if n else 0
            if n and (labels.min() < 0 or len(np.bincount(labels).nonzero()[0]) != k):
                raise InputError("groups", "labels must be 0..k-1, every one used")
            group[:] = self._groups + labels
            self._groups += k
        elif coupled and n:
            group[:] = self._groups
            self._groups += 1
        self._flows.append((src, dst, size, group, keys, paths))
        self.num_flows += n
        return ids

    def add_compute(
        self, node: npt.ArrayLike, duration: npt.ArrayLike, *, delay: npt.ArrayLike = 0.0
    ) -> np.ndarray:
        """Compute tasks of ``duration`` seconds on GPU ``node``."""
        node = np.atleast_1d(np.asarray(node, np.int64))
        duration = _arr(duration, len(node), np.float64, "duration")
        ids = self._new_ids(len(node), COMPUTE, delay)
        self._compute.append((node, duration))
        self.num_compute += len(node)
        return ids

    def add_deps(self, before: npt.ArrayLike, after: npt.ArrayLike) -> None:
        """Task ``after[i]`` starts only once ``before[i]`` has finished (scalars broadcast)."""
        b, a = np.asarray(before, np.int64), np.asarray(after, np.int64)
        if b.ndim <= 1 and a.ndim <= 1 and (b.size == a.size or 1 in (b.size, a.size)):
            n = a.size if b.size == 1 else b.size  # what np.broadcast_arrays gives, faster
            b = _ids(b.ravel()) if b.size == n else np.full(n, _ids(b.ravel())[0])
            a = _ids(a.ravel()) if a.size == n else np.full(n, _ids(a.ravel())[0])
        else:
            b, a = (_ids(x.ravel()) for x in np.broadcast_arrays(b, a))
        self._deps.append((b, a))
        self.__dict__.pop("tasks", None)

    def chain(self, tasks: npt.ArrayLike) -> None:
        """Run ``tasks`` one after another."""
        t = np.asarray(tasks, np.int64)
        self.add_deps(t[:-1], t[1:])

    @cached_property
    def tasks(self) -> Tasks:
        kind = np.concatenate(self._kinds) if self._kinds else np.zeros(0, np.int8)
        local = np.zeros(len(kind), ID)
        is_flow = kind == FLOW
        local[is_flow] = np.arange(int(is_flow.sum()))
        local[~is_flow] = np.arange(int((~is_flow).sum()))
        cols: list[Any] = list(zip(*self._flows, strict=True)) if self._flows else [[]] * 6
        cat = [np.concatenate(c) if len(c) else np.zeros(0, np.int64) for c in cols[:5]]
        if any(f[5] is not None for f in self._flows):
            has_path = np.concatenate([np.full(len(f[0]), f[5] is not None) for f in self._flows])
        else:  # no explicit path: one False for all
            has_path = np.broadcast_to(np.False_, (len(cat[0]),))
        comp: list[Any] = list(zip(*self._compute, strict=True)) if self._compute else [[], []]
        deps: list[Any] = list(zip(*self._deps, strict=True)) if self._deps else [[], []]
        before = np.concatenate(deps[0]) if deps[0] else np.zeros(0, ID)
        after = np.concatenate(deps[1]) if deps[1] else np.zeros(0, ID)
        self._deps, deps = [(before, after)], []  # the parts go before the sort
        before, after, off = _sorted_edges(before, after, self.num_tasks)
        t = Tasks(
            kind=kind,
            local=local,
            delay=_joined_delays(self._delays),
            flow_task=np.flatnonzero(is_flow).astype(ID),
            src=cat[0].astype(np.int64, copy=False),
            dst=cat[1].astype(np.int64, copy=False),
            size=cat[2].astype(np.float64, copy=False),
            group=cat[3].astype(ID, copy=False),
            keys=cat[4].astype(np.int64, copy=False),
            has_path=has_path,
            paths=Paths.concat([f[5] for f in self._flows if f[5] is not None]),
            compute_task=np.flatnonzero(~is_flow),
            node=np.concatenate(comp[0]) if comp[0] else np.zeros(0, np.int64),
            duration=np.concatenate(comp[1]) if comp[1] else np.zeros(0),
            dep_before=before,
            dep_after=after,
            dep_off=off,
        )
        self._collapse(t)
        return t

    def _collapse(self, t: Tasks) -> None:
        """Keep the parts as the concatenated arrays (shared with ``t``, not copied twice)."""
        self._kinds, self._delays = [t.kind], [t.delay]
        self._deps = [(t.dep_before, t.dep_after)]
        if self._compute:
            self._compute = [(t.node, t.duration)]
        if self._flows and all(f[5] is None for f in self._flows):
            self._flows = [(t.src, t.dst, t.size, t.group, t.keys, None)]

    def validate(self, num_nodes: int, cycles: bool = True) -> None:
        """InputError for negative sizes or times, unknown nodes or tasks, or (``cycles``) a
        cycle. The simulator checks for cycles only when tasks can never start: tasks on a
        cycle never do, and the check costs a strongly-connected-components pass."""
        t = self.tasks
        for name, a in (("size", t.size), ("delay", t.delay), ("duration", t.duration)):
            bad = ~np.isfinite(a) | (a < 0)
            if bad.any():
                raise InputError(name, f"must be finite and >= 0, got {a[bad][0]!r}")
        for name, a in (("src", t.src), ("dst", t.dst), ("compute node", t.node)):
            bad = (a < 0) | (a >= num_nodes)
            if bad.any():
                raise InputError(name, f"unknown node {int(a[bad][0])} (nodes 0..{num_nodes - 1})")
        for name, a in (("dependency", t.dep_before), ("dependency", t.dep_after)):
            bad = (a < 0) | (a >= self.num_tasks)
            if bad.any():
                raise InputError(name, f"unknown task {int(a[bad][0])}")
        if cycles:
            self.check_cycles()

    def check_cycles(self) -> None:
        """InputError naming some tasks on a dependency cycle, if there is one."""
        t = self.tasks
        cyc = find_cycle(self.num_tasks, t.dep_before, t.dep_after)
        if cyc is not None:
            raise InputError("dependencies", f"cycle through tasks {cyc}")


def _joined_delays(parts: list[np.ndarray]) -> np.ndarray:
    """The tasks' delays: one zero-stride view when every part is the same one value (most
    DAGs: all 0), else the parts concatenated."""
    if not parts:
        return np.zeros(0)
    n = sum(len(p) for p in parts)
    one = all(p.strides == (0,) or len(p) == 0 for p in parts)
    values = {float(p[0]) for p in parts if len(p)}
    if one and len(values) <= 1:
        return np.broadcast_to(np.float64(values.pop() if values else 0.0), (n,))
    return np.concatenate(parts)


def _sorted_edges(
    before: np.ndarray, after: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The edges sorted stably by predecessor, with their CSR offsets (the successor lists
    :class:`hpn.engine.state.TaskState` reads, shared instead of copied); edges naming an
    unknown task are left as given (None), for :meth:`FlowDAG.validate` to name."""
    if not len(before) or int(before.min()) < 0 or int(before.max()) >= n:
        return before, after, None
    if int(after.min()) < 0 or int(after.max()) >= n:
        return before, after, None
    from hpn.engine.kernels import successors

    succ, off = successors(before, after, n)
    return np.repeat(np.arange(n, dtype=ID), np.diff(off)), succ, off


def find_cycle(n: int, before: np.ndarray, after: np.ndarray) -> list[int] | None:
    """Some tasks on a dependency cycle (strongly connected), or None if acyclic.

    Parameters
    ----------
    n
        Number of tasks.
    before, after
        Dependency edges: ``after[i]`` waits for ``before[i]``.

    Returns
    -------
    list of int or None
        Task ids of one cycle's component.
    """
    if not len(before):
        return None
    self_loop = before == after
    if self_loop.any():
        return [int(before[self_loop][0])]
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    g = sp.csr_matrix((np.ones(len(before), bool), (before, after)), shape=(n, n))
    k, labels = connected_components(g, directed=True, connection="strong")
    if k == n:
        return None
    sizes = np.bincount(labels)
    members = np.flatnonzero(labels == np.flatnonzero(sizes > 1)[0])
    return [int(x) for x in members[:5]]
