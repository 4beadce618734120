"""Training iterations: configs, plans, 1F1B, DAG shape, AICB import, CLI."""

from __future__ import annotations

import numpy as np
import pytest

from hpn.errors import InputError
from hpn.topology import build
from hpn.workload.collectives import Ctx
from hpn.workload.training import JobConfig, load_jobs, make_plan, one_f_one_b, train
from hpn.workload.training.aicb import parse_collective, plan_from_aicb
from hpn.workload.training.dag import add_job
from tests.conftest import assert_input_error, run_cli

GPT3 = {"layers": 96, "hidden": 12288, "heads": 96, "seq_len": 2048, "vocab": 51200}
SMALL = {"layers": 8, "hidden": 1024, "heads": 8, "seq_len": 1024, "vocab": 8}


def job(**kw):
    base = {"model": SMALL, "parallel": {"tp": 8, "pp": 2, "dp": 2, "global_batch": 8}}
    base.update(kw)
    return JobConfig(**base)


def test_table3_volumes():
    """GPT-3 175B, TP 8, PP 8, gradients reduced in bf16: DP ~5.5 GB per GPU, PP sends ~6 MB
    (P Tab 3)."""
    par = {"tp": 8, "pp": 8, "dp": 4, "global_batch": 32}
    j = JobConfig(model=GPT3, parallel=par, comm={"grad_reduce": "bf16"})
    p = make_plan(j)
    grads = sum(p.stages[3].buckets)
    assert grads == pytest.approx(175e9 / 64 * 2, rel=0.05)
    assert p.pp_bytes == pytest.approx(6.29e6, rel=0.01)
    assert p.micro_batches == 8 and p.tokens == 32 * 2048


@pytest.mark.parametrize(
    "precision,grad_reduce,nbytes",
    [
        ("bf16", "auto", 4),  # Megatron-LM: bf16 gradients accumulate and all-reduce in fp32
        ("bf16", "bf16", 2),  # --grad-reduce-in-bf16
        ("fp16", "auto", 2),  # fp16: its own dtype by default
        ("fp16", "fp32", 4),  # --accumulate-allreduce-grads-in-fp32
        ("fp32", "auto", 4),
    ],
)
def test_gradient_reduction_dtype(precision, grad_reduce, nbytes):
    """DP bytes = parameters x the reduction dtype's bytes, Megatron-LM's default rule."""
    par = {"tp": 8, "pp": 8, "dp": 4, "global_batch": 32}
    j = JobConfig(model=GPT3, parallel=par, precision=precision, comm={"grad_reduce": grad_reduce})
    assert j.grad_bytes == nbytes
    h, L = GPT3["hidden"], GPT3["layers"] // 8
    assert sum(make_plan(j).stages[3].buckets) == pytest.approx(L * 12 * h * h / 8 * nbytes)


def test_gradient_reduction_dtype_refused(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        "[model]\nlayers = 8\nhidden = 1024\nheads = 8\n[parallel]\ntp = 8\n"
        'dp = 1\nglobal_batch = 8\n[comm]\ngrad_reduce = "int8"\n'
    )
    assert_input_error(run_cli("train", str(bad)), "job.comm.grad_reduce", "fp32")


def test_compute_model_closed_form():
    j = job(gpu={"preset": "A100", "efficiency": 0.5})
    p = make_plan(j)
    b, s, h = 1, 1024, 1024
    flops = 4 * (8 * b * s * h * h + 4 * b * s * s * h + 2 * 2 * b * s * h * 4 * h) / 8
    assert p.stages[0].fwd_s == pytest.approx(flops / 156e12)
    assert p.stages[0].bwd_s == pytest.approx(2 * p.stages[0].fwd_s)
    assert len(p.stages[0].tp_fwd) == 4 * 2


def test_one_f_one_b():
    assert one_f_one_b(0, 4, 4) == [
        ("F", 0),
        ("F", 1),
        ("F", 2),
        ("F", 3),
        ("B", 0),
        ("B", 1),
        ("B", 2),
        ("B", 3),
    ]
    assert one_f_one_b(3, 4, 3) == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2)]
    for st in range(4):
        order = one_f_one_b(st, 4, 6)
        assert sorted(order) == sorted([(k, i) for k in "FB" for i in range(6)])


def test_compute_only_iteration_is_the_1f1b_closed_form():
    f = build("hpn", segments=1)
    j = job(parallel={"tp": 8, "pp": 4, "dp": 1, "global_batch": 6})
    plan = make_plan(j)
    ctx = Ctx(f)
    m = add_job(ctx, plan, None, comm=False)
    ctx.dag.validate(f.num_nodes)
    from hpn.engine import simulate

    res = simulate(f, ctx.dag, "ecmp")
    st = plan.stages[0]
    assert res.task_finish[m.lo : m.hi].max() == pytest.approx(
        (6 + 4 - 1) * (st.fwd_s + st.bwd_s), rel=1e-3
    )


def test_iteration_dag_and_breakdown():
    f = build("hpn", segments=1)
    r, tables = train(f, [job()], "ecmp", seed=1)
    b = r.breakdown
    assert r.gpus == 32 and r.iteration_s > b["compute_s"] > 0
    assert b["exposed_comm_s"] == pytest.approx(r.iteration_s - b["compute_s"])
    assert b["tp_s"] > 0 and b["pp_s"] > 0 and b["dp_s"] > 0 and b["ep_s"] == 0
    assert r.samples_per_s == pytest.approx(8 / r.iteration_s)
    assert set(tables["timeline"]["group"]) >= {"F", "B", "PP", "DP"}
    r2, _ = train(f, [job()], "ecmp", seed=1)
    assert r2.iteration_s == r.iteration_s  # reproducible


def test_moe_and_several_jobs():
    f = build("hpn", segments=1)
    moe = job(
        model={**SMALL, "experts": 4, "top_k": 2},
        parallel={"tp": 8, "pp": 1, "dp": 4, "ep": 4, "global_batch": 8},
    )
    other = job(name="b", placement={"first_host": 4})
    r, _ = train(f, [moe, other], "ecmp", seed=1)
    assert [j["name"] for j in r.jobs] == ["job", "b"]
    assert r.jobs[0]["breakdown"]["ep_s"] > 0
    with pytest.raises(InputError, match="first_host: 32 GPUs at 8 per host need hosts 127..130"):
        train(f, [job(placement={"first_host": 127})], "ecmp")


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"parallel": {"tp": 8, "pp": 3, "dp": 2, "global_batch": 8}}, "layers"),
        ({"parallel": {"tp": 3, "pp": 2, "dp": 2, "global_batch": 8}}, "heads"),
        ({"parallel": {"tp": 8, "pp": 2, "dp": 2, "global_batch": 7}}, "global_batch"),
        ({"parallel": {"tp": 8, "pp": 2, "dp": 2, "ep": 2, "global_batch": 8}}, "MoE"),
        ({"gpus": 30}, "gpus"),
        ({"gpu": {"preset": "V100"}}, "unknown GPU"),
        ({"gpu": {"efficiency": 1.5}}, "efficiency"),
        ({"aicb": "x.txt"}, "exactly one"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_config_refusals(kw, match):
    with pytest.raises(Exception, match=match):
        job(**kw)


AICB = """HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 2 vpp: 2 ga: 4 \
all_gpus: 32 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 1048576.0
3
embedding_layer\t-1\t410000\tALLREDUCE\t16777216\t1\tNONE\t0\t1\tNONE\t0\t100
attention_layer\t-1\t820000\tALLREDUCE\t16777216\t820000\tALLREDUCE\t16777216\t820000\tALLREDUCE\t268435456\t100
mlp_layer\t-1\t950000\tALLTOALL_EP\t4194304\t950000\tBROADCAST\t16777216\t950000\tALLREDUCE_DP_EP\t536870912\t100
"""


def test_aicb_import(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text(AICB)
    p = plan_from_aicb(JobConfig(aicb=str(path)))
    assert (p.tp, p.pp, p.dp, p.micro_batches, p.pp_bytes) == (8, 2, 2, 4, 1048576.0)
    st = p.stages[0]
    assert st.fwd_s == pytest.approx(2.18e-3)
    assert st.bwd_s == pytest.approx((1 + 1 + 820000 * 2 + 950000 * 2) * 1e-9)
    assert st.tp_fwd == [("allreduce", 16777216.0)] * 2 and st.ep_fwd == [4194304.0]
    assert st.tp_bwd == [("allreduce", 16777216.0)]  # BROADCAST: no communication
    assert st.buckets == [268435456.0, 536870912.0]
    assert parse_collective("ALLREDUCEALLTOALL") == ("allreduce", "")
    toml = tmp_path / "job.toml"
    toml.write_text('name = "sim"\naicb = "w.txt"\n')
    jobs, fabric = load_jobs(toml)
    r, _ = train(build("hpn", segments=1), jobs, "ecmp")
    assert r.gpus == 32 and r.iteration_s > 0 and fabric is None
    path.write_text(AICB.replace("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "NOPE"))
    wording = r"line 1: unknown parallelism policy 'NOPE'; choose from: HYBRID_TRANSFORMER_FWD_IN"
    with pytest.raises(InputError, match=wording):
        plan_from_aicb(JobConfig(aicb=str(path)))
    path.write_text(AICB.replace("\n3\n", "\n4\n"))
    with pytest.raises(InputError, match="records"):
        plan_from_aicb(JobConfig(aicb=str(path)))


def test_train_cli(tmp_path):
    cfg = tmp_path / "j.toml"
    cfg.write_text(
        "[fabric]\npreset = 'hpn'\nsegments = 1\n[model]\nlayers = 8\nhidden = 1024\n"
        "heads = 8\n[parallel]\ntp = 8\npp = 2\ndp = 2\nglobal_batch = 8\n"
    )
    r = run_cli("train", str(cfg), "--json")
    assert r.code == 0, r.err
    out = r.json()
    for key in ("iteration_s", "samples_per_s", "tokens_per_s", "gpus", "breakdown", "jobs"):
        assert key in out
    assert set(out["breakdown"]) == {"compute_s", "tp_s", "pp_s", "dp_s", "ep_s", "exposed_comm_s"}
    r = run_cli("train", str(cfg))
    assert r.code == 0 and "samples/s" in r.out
    bad = tmp_path / "bad.toml"
    bad.write_text(
        "[model]\nlayers = 8\nhidden = 1024\nheads = 8\n[parallel]\ntp = 8\n"
        "pp = 3\ndp = 2\nglobal_batch = 8\n"
    )
    assert_input_error(run_cli("train", str(bad)), "job", "layers")
    assert_input_error(run_cli("train", str(tmp_path / "none.toml")), "no such file")


def test_examples_load():
    from pathlib import Path

    for f in sorted(Path(__file__).parents[2].joinpath("examples/train").glob("*.toml")):
        jobs, _ = load_jobs(f)
        assert all(make_plan(j).micro_batches >= 1 for j in jobs), f
    assert np.isfinite(1.0)


def test_comm_cpu_and_nic_path_reach_nccls_tuner(tmp_path):
    """A job's ``[comm] cpu`` and ``nic_path`` are the knobs of ``hpn collective``: on AMD
    hosts NCCL charges each in-host step of a multi-host ring at least 2 us (Intel 1 us), so a
    DP ring of 4 GPUs on each of 2 hosts takes longer."""
    from hpn.workload.training.dag import job_params

    par = {"tp": 2, "pp": 1, "dp": 8, "global_batch": 8}
    amd = job(parallel=par, comm={"cpu": "amd", "nic_path": "pix", "dp_algo": "ring"})
    p = job_params(amd)
    assert (p.cpu, p.nic_path) == ("amd", "pix")
    f = build("hpn", segments=1)
    intel, _ = train(f, [job(parallel=par, comm={"dp_algo": "ring"})], "ecmp", seed=1)
    slow, _ = train(f, [amd], "ecmp", seed=1)
    assert slow.iteration_s > intel.iteration_s  # the DP ring's latency: its flows alike
    assert slow.breakdown["dp_s"] == intel.breakdown["dp_s"]
    bad = tmp_path / "bad.toml"
    bad.write_text(
        "[model]\nlayers = 8\nhidden = 1024\nheads = 8\n[parallel]\ntp = 8\npp = 2\ndp = 2\n"
        'global_batch = 8\n[comm]\ncpu = "arm"\n'
    )
    assert_input_error(run_cli("train", str(bad)), "job.comm.cpu", "amd")


def test_comm_knobs_allow_what_nccls_tables_have():
    """The job file's choices are the tuner's own tables (one list each, in versions.py)."""
    from typing import get_args

    from hpn.workload.collectives.versions import CPUS, NIC_PATHS
    from hpn.workload.training.config import CommCfg

    fields = CommCfg.model_fields
    assert get_args(fields["cpu"].annotation) == CPUS
    assert get_args(fields["nic_path"].annotation) == NIC_PATHS
