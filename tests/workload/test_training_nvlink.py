"""Training's in-host collectives run where ``hpn collective`` runs them: NVLink at NCCL's data
rate (NCCL's per-link figure, topo.h), so a TP AllReduce in an iteration takes what the
collective takes on the same group at the same size."""

from __future__ import annotations

import numpy as np
import pytest

from hpn.engine import simulate
from hpn.failures.workload import training_iteration
from hpn.routing import router_for
from hpn.topology import build
from hpn.topology.fabric import LinkTier
from hpn.workload.collectives import Params, collective_dag, sweep
from hpn.workload.training import JobConfig, train

# one TP 8 group on one host; one AllReduce moves b s h x 2 B = 128 MiB (bandwidth-bound)
MODEL = {"layers": 2, "hidden": 8192, "heads": 8, "seq_len": 8192, "vocab": 8}
ACT = 8192 * 8192 * 2


@pytest.fixture(scope="module")
def seg():
    return build("hpn", segments=1, dual_tor=False, link_latency=0, nvlink_latency=0)


def _job(nccl: str, first_host: int = 0, **kw) -> JobConfig:
    return JobConfig(
        model=MODEL,
        parallel={"tp": 8, "pp": 1, "dp": 1, "global_batch": 2},
        comm={"nccl": nccl, **kw},
        placement={"first_host": first_host},
    )


@pytest.mark.parametrize("nccl,per_link", [("2.18.3", 20.0), ("2.30.7", 20.6)])
def test_tp_allreduce_equals_hpn_collective(seg, nccl, per_link):
    """tp_s = micro-batches x 2 passes x 2 AllReduces x layers, each the time ``hpn collective``
    gives 8 GPUs of one host at 128 MiB; bandwidth-bound there (NVLS), so about 200 / (8 x
    NCCL's per-link figure) above the same DAG on the raw 200 GB/s NVLink (the old figure)."""
    res, _ = train(seg, [_job(nccl)])
    calls = 2 * 2 * 2 * MODEL["layers"]  # micro-batches x (F, B) x 2 per layer x layers
    one = res.breakdown["tp_s"] / calls
    p = Params(nccl=nccl)
    r = sweep(seg, "allreduce", [ACT], 8, params=p).results[0]
    assert one == pytest.approx(r["time_s"], rel=1e-9)
    ctx, marks, _ = collective_dag(seg, "allreduce", ACT, 8, params=p)
    raw = simulate(seg, ctx.dag, router_for(seg, None))
    (s, e) = marks[0]
    old = raw.task_finish[e] - raw.task_start[s]
    assert 1.15 < one / old <= 200 / (8 * per_link) * (1 + 1e-9)


def test_alpha_model_keeps_the_fabric(seg):
    """``model = "alpha"`` is the old model: the fabric's own NVLink, as ``hpn collective``."""
    res, _ = train(seg, [_job("2.30.7", model="alpha", tp_algo="ring")])
    one = res.breakdown["tp_s"] / (2 * 2 * 2 * MODEL["layers"])
    r = sweep(seg, "allreduce", [ACT], 8, params=Params(model="alpha")).results[0]
    assert one == pytest.approx(r["time_s"], rel=1e-9)


def test_each_job_gets_its_own_rate_and_fail_uses_it(seg):
    """Two jobs of different NCCL releases on one fabric: each job's NVLinks at its release's
    figure; ``hpn fail``'s iteration runs on the same capped fabric."""
    from hpn.workload.collectives import Ctx
    from hpn.workload.training import make_plan
    from hpn.workload.training.dag import add_job, data_fabric

    a, b = _job("2.18.3"), _job("2.30.7", first_host=1)
    ctx = Ctx(seg)
    marks = [add_job(ctx, make_plan(j), None) for j in (a, b)]
    f = data_fabric(seg, marks)
    lk = f.links
    nvl = lk.tier == LinkTier.NVLINK
    for m, per_link in zip(marks, (20.0, 20.6), strict=True):
        mine = nvl & (np.isin(lk.src, m.gpus) | np.isin(lk.dst, m.gpus))
        assert mine.sum() == 2 * 8
        assert np.allclose(lk.capacity[mine], 8 * per_link * 8e9)
    rest = nvl & ~np.isin(lk.src, np.concatenate([m.gpus for m in marks]))
    rest &= ~np.isin(lk.dst, np.concatenate([m.gpus for m in marks]))
    assert np.array_equal(lk.capacity[rest], seg.links.capacity[rest])
    it = training_iteration(seg, a, router_for(seg, None))
    assert it.fabric is not None
    mine = nvl & np.isin(lk.src, it.gpus)
    assert np.allclose(it.fabric.links.capacity[mine], 8 * 20.0 * 8e9)
