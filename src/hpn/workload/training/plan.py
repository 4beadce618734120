"""A job as per-stage work: compute time per micro-batch, TP collectives (in the host), EP
all-to-all bytes, PP activation bytes, gradient buckets. Built from a model config (FLOPs /
(peak x efficiency)) or from an AICB workload file (:mod:`.aicb`), then turned into a DAG.

FLOPs per layer and micro-batch (b sequences of s tokens, hidden h, FFN f), forward:
attention projections ``8 b s h^2``, scores ``4 b s^2 h``, FFN ``4 b s h f`` (``6`` gated;
times top-k for MoE); the logits ``2 b s h V`` on the last stage; backward is twice the
forward. All of it divided by TP. Parameters per layer: ``4 h^2`` + FFN (``experts / ep``
copies for MoE); the embedding on the first stage and the LM head on the last. Gradients
are reduced in ``JobConfig.grad_bytes`` per parameter (Megatron-LM: fp32 for bf16 jobs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hpn.workload.training.config import DTYPE_BYTES, JobConfig


@dataclass
class StagePlan:
    fwd_s: float  # compute per micro-batch, forward
    bwd_s: float  # compute per micro-batch, backward
    tp_fwd: list[tuple[str, float]] = field(default_factory=list)  # (op, bytes) per micro-batch
    tp_bwd: list[tuple[str, float]] = field(default_factory=list)
    ep_fwd: list[float] = field(default_factory=list)  # all-to-all bytes per GPU, in order
    ep_bwd: list[float] = field(default_factory=list)
    buckets: list[float] = field(default_factory=list)  # gradient bytes per GPU, in order


@dataclass
class JobPlan:
    name: str
    tp: int
    pp: int
    dp: int
    ep: int
    micro_batches: int
    samples: int  # per iteration
    tokens: int  # per iteration
    pp_bytes: float  # per GPU per send
    stages: list[StagePlan]
    cfg: JobConfig


def buckets(total: float, size: float) -> list[float]:
    """``total`` bytes in buckets of at most ``size`` (the last one smaller)."""
    if total <= 0:
        return []
    n = max(int(-(-total // size)), 1)
    return [total / n] * n


def plan_from_model(job: JobConfig) -> JobPlan:
    m, p = job.model, job.parallel
    assert m is not None and p.dp is not None
    b, s, h, f, V = p.micro_batch, m.seq_len, m.hidden, m.ffn_width, m.vocab
    bw = DTYPE_BYTES[job.precision]
    mats = 3 if m.gated_ffn else 2
    k = m.top_k if m.moe else 1
    layer_flops = (8 * b * s * h * h + 4 * b * s * s * h + 2 * mats * b * s * h * f * k) / p.tp
    ffn_params = mats * h * f * (m.experts // p.ep if m.moe else 1) + (
        h * m.experts if m.moe else 0
    )
    layer_params = (4 * h * h + ffn_params) / p.tp
    per = m.layers // p.pp
    act = b * s * h * bw  # one activation tensor of a micro-batch
    tp_ops: list[tuple[str, float]]
    if p.sequence_parallel:
        tp_ops = [("allgather", act), ("reducescatter", act)] * 2
    else:
        tp_ops = [("allreduce", act)] * 2
    stages = []
    for st in range(p.pp):
        flops = per * layer_flops + (2 * b * s * h * V / p.tp if st == p.pp - 1 else 0)
        params = per * layer_params + (V * h / p.tp if st in (0, p.pp - 1) else 0)
        fwd = flops / job.gpu.flops
        a2a = [b * s * h * m.top_k * bw / p.tp] * (2 * per) if p.ep > 1 else []
        stages.append(
            StagePlan(
                fwd_s=fwd,
                bwd_s=2 * fwd,
                tp_fwd=tp_ops * per if p.tp > 1 else [],
                tp_bwd=tp_ops * per if p.tp > 1 else [],
                ep_fwd=a2a,
                ep_bwd=list(a2a),
                buckets=buckets(params * job.grad_bytes, job.comm.bucket),
            )
        )
    mb = p.global_batch // (p.dp * p.micro_batch)
    return JobPlan(
        name=job.name,
        tp=p.tp,
        pp=p.pp,
        dp=p.dp,
        ep=p.ep,
        micro_batches=mb,
        samples=p.global_batch,
        tokens=p.global_batch * s,
        pp_bytes=act / p.tp,
        stages=stages,
        cfg=job,
    )
