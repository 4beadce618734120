"""One training iteration of one or more jobs as a FlowDAG.

What is explicit and what is aggregated (and why):

- Compute: one task per (stage, micro-batch, forward/backward), on a representative GPU of the
  stage. DP replicas and TP ranks run identical kernels, so one task stands for all of them;
  replicas are lock-stepped: a stage starts a micro-batch when the activations of *every*
  replica have arrived (exact when the network treats replicas alike, otherwise pessimistic by
  at most the spread of one transfer per step). Layers of a stage are one block per micro-batch.
- TP collectives stay inside a host (NVLink), so they never meet other traffic: each distinct
  one is simulated once on the job's first TP group and its time added to the blocks (or hidden
  under compute with ``overlap.tp``). Like every flow of the iteration, it runs on NVLink at
  NCCL's data rate (:func:`~hpn.workload.collectives.context.nvlink_data_fabric`), so it takes
  what ``hpn collective`` gives the same group at the same size.
- Network traffic is explicit for every GPU: PP sends (one flow per TP rank and replica, per
  connection), DP gradient buckets (an AllReduce per TP rank across replicas, bucket after
  bucket, each starting when its share of the last backward is done), EP all-to-alls per block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hpn.topology.fabric import Fabric
from hpn.workload.collectives import Ctx, Params, add_collective
from hpn.workload.collectives.context import nvlink_data_fabric
from hpn.workload.training.layout import by_host, job_grid
from hpn.workload.training.plan import JobPlan
from hpn.workload.training.schedule import one_f_one_b


@dataclass
class JobMarks:
    plan: JobPlan
    lo: int = 0  # task id range of the job
    hi: int = 0
    kinds: dict[tuple[str, int], list[tuple[int, int]]] = field(default_factory=dict)
    timeline: list[tuple[str, str, int, int]] = field(default_factory=list)  # row, group, ids
    tp_s: float = 0.0
    gpus: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # the job's GPUs


def job_params(cfg) -> Params:
    """The collective knobs of a job config (:class:`~.config.JobConfig`)."""
    cc = cfg.comm
    return Params(
        channels=cc.channels,
        conns=cc.conns,
        alpha=cc.alpha,
        model=cc.model,
        proto=cc.proto,
        gpu=cfg.gpu.preset,
        nccl=cc.nccl,
        cpu=cc.cpu,
        nic_path=cc.nic_path,
        flow_channels=1,  # one flow group per NIC: the flow budget of cluster-scale jobs
    )


def data_fabric(fabric: Fabric, marks: list[JobMarks]) -> Fabric:
    """``fabric`` with each job's NVLinks at NCCL's data rate for that job's GPU type and
    NCCL release (:func:`~hpn.workload.collectives.context.nvlink_data_fabric`)."""
    for m in marks:
        fabric = nvlink_data_fabric(fabric, job_params(m.plan.cfg), m.gpus)
    return fabric


class TpTimer:
    """Time of each distinct in-host TP collective, simulated once on the fabric alone, its
    NVLink at NCCL's data rate (as ``hpn collective`` runs it)."""

    def __init__(self, fabric: Fabric, router):
        self.fabric, self.router = fabric, router
        self.cache: dict[tuple, float] = {}
        self._data: dict[tuple, Fabric] = {}

    def _fabric(self, p: Params) -> Fabric:
        key = (p.model, p.gpu, p.nccl)
        if key not in self._data:
            self._data[key] = nvlink_data_fabric(self.fabric, p)
        return self._data[key]

    def __call__(self, ops, ranks: np.ndarray, algo: str, p: Params) -> float:
        from hpn.engine import simulate

        total = 0.0
        for op, nbytes in ops:
            key = (op, nbytes, ranks.tobytes(), algo, p)
            if key not in self.cache:
                ctx = Ctx(self.fabric)
                s, e = add_collective(ctx, op, ranks, nbytes, algo, p)
                res = simulate(self._fabric(p), ctx.dag, self.router)
                self.cache[key] = float(res.task_finish[e] - res.task_start[s])
            total += self.cache[key]
        return total


def _span(ctx: Ctx, marks: JobMarks, kind: str, stage: int, lo: int) -> None:
    """Task ids ``lo..`` (up to now) are ``kind`` traffic sent by ``stage``."""
    marks.kinds.setdefault((kind, stage), []).append((lo, ctx.dag.num_tasks))


def add_job(ctx: Ctx, plan: JobPlan, tp_timer: TpTimer | None, comm: bool = True) -> JobMarks:
    """Add one iteration of ``plan``; ``comm=False`` leaves out all communication (the
    compute-only reference the breakdown subtracts)."""
    cfg, fab = plan.cfg, ctx.fabric
    grid = job_grid(fab, plan.tp * plan.pp * plan.dp, plan.tp, plan.pp, plan.dp, cfg.placement)
    P, D, T = grid.shape
    M = plan.micro_batches
    cc = cfg.comm
    p = job_params(cfg)
    pp_lat = _p2p_latency(ctx, grid, p)
    marks = JobMarks(plan, lo=ctx.dag.num_tasks, gpus=grid.ravel())
    rep = grid[:, 0, 0]
    start, done = {}, {}
    for st, sp in enumerate(plan.stages):
        tp = {"F": 0.0, "B": 0.0}
        if comm and tp_timer is not None and T > 1:
            tg = by_host(fab, grid[st, 0, :])
            tp = {
                "F": tp_timer(sp.tp_fwd, tg, cc.tp_algo, p),
                "B": tp_timer(sp.tp_bwd, tg, cc.tp_algo, p),
            }
        marks.tp_s = max(marks.tp_s, M * (tp["F"] + tp["B"]))
        for kind, mb in one_f_one_b(st, P, M):
            comp = sp.fwd_s if kind == "F" else sp.bwd_s
            dur = max(comp, tp[kind]) if cfg.overlap.tp else comp + tp[kind]
            last_b = kind == "B" and mb == M - 1 and comm and sp.buckets and D > 1
            parts = [dur] if not last_b else list(dur * np.asarray(sp.buckets) / sum(sp.buckets))
            ids = ctx.dag.add_compute(np.full(len(parts), rep[st]), parts)
            ctx.dag.chain(ids)
            start[st, kind, mb] = int(ids[0])
            end = int(ids[-1])
            marks.timeline.append((f"stage {st}", kind, int(ids[0]), end))
            a2a = sp.ep_fwd if kind == "F" else sp.ep_bwd
            if comm and plan.ep > 1 and a2a:
                lo = ctx.dag.num_tasks
                end = _ep(ctx, grid[st], plan.ep, float(sum(a2a)), len(a2a), p, end)
                _span(ctx, marks, "ep", st, lo)
                marks.timeline.append((f"stage {st}", "EP", lo, end))
            done[st, kind, mb] = end
            if last_b:
                _dp(ctx, marks, grid[st], sp.buckets, ids, cfg.overlap.dp, p, cc.dp_algo, st)
        order = one_f_one_b(st, P, M)
        for a, b in zip(order[:-1], order[1:], strict=True):
            ctx.dag.add_deps(done[(st, *a)], start[(st, *b)])
    for st in range(P):
        for mb in range(M):
            for kind, nxt in (("F", st + 1), ("B", st - 1)):
                if not 0 <= nxt < P:
                    continue
                after = done[st, kind, mb]
                if comm and plan.pp_bytes > 0:
                    lo = ctx.dag.num_tasks
                    src, dst = grid[st].ravel(), grid[nxt].ravel()
                    ids = np.concatenate(
                        [
                            ctx.flows(src, dst, plan.pp_bytes / p.conns, q, after=after)
                            for q in range(p.conns)
                        ]
                    )
                    after = ctx.barrier(int(rep[nxt]), pp_lat, ids)
                    _span(ctx, marks, "pp", st, lo)
                    marks.timeline.append((f"stage {min(st, nxt)}-{max(st, nxt)}", "PP", lo, after))
                ctx.dag.add_deps(after, start[nxt, kind, mb])
    marks.hi = ctx.dag.num_tasks
    return marks


def _p2p_latency(ctx: Ctx, grid: np.ndarray, p: Params) -> float:
    """One PP send's latency: NCCL's p2p step (nccl model) or ``alpha``."""
    if p.model != "nccl":
        return p.alpha
    from hpn.workload.collectives.algorithms import nccl_choice

    pair = by_host(ctx.fabric, np.array([grid[0, 0, 0], grid[-1, 0, 0]]))
    if pair.size < 2:
        return p.alpha
    return nccl_choice(ctx, "sendrecv", pair, 0.0, None, p).lat_us * 1e-6


def _ep(ctx: Ctx, g: np.ndarray, ep: int, nbytes: float, calls: int, p: Params, after: int):
    """All EP groups of a stage do their all-to-alls (summed over the block's MoE layers)."""
    D, T = g.shape
    ends = []
    for e in range(D // ep):
        for t in range(T):
            ranks = by_host(ctx.fabric, g[e * ep : (e + 1) * ep, t])
            ends.append(add_collective(ctx, "alltoall", ranks, nbytes, "direct", p, after)[1])
    return ctx.barrier(int(g[0, 0]), (calls - 1) * p.alpha, np.asarray(ends))


def _dp(ctx, marks, g, buckets, chunk_ids, overlap, p, algo, st) -> None:
    """Gradient buckets, one after another, each an AllReduce per TP rank over replicas."""
    prev = None
    for k, nbytes in enumerate(buckets):
        ready = int(chunk_ids[k] if overlap else chunk_ids[-1])
        after = np.array([ready] if prev is None else [ready, prev])
        lo = ctx.dag.num_tasks
        ends = [
            add_collective(ctx, "allreduce", by_host(ctx.fabric, g[:, t]), nbytes, algo, p, after)[
                1
            ]
            for t in range(g.shape[1])
        ]
        prev = ctx.barrier(int(g[0, 0]), 0.0, np.asarray(ends))
        _span(ctx, marks, "dp", st, lo)
        marks.timeline.append((f"stage {st}", "DP", lo, prev))
