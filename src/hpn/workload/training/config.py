"""Training job configs (TOML, validated): model, parallelism, GPU, overlap, placement.

A file holds one job at the top level or several as ``[[job]]`` tables (jobs share the
fabric, each on its own hosts); an optional ``[fabric]`` table describes the fabric.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from hpn.config import Duration, FilePath, Model, Size, load_toml, one_line
from hpn.errors import InputError
from hpn.gpus import CATALOG

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


class ModelCfg(Model):
    """A decoder-only transformer (dense or MoE)."""

    name: str = "model"
    layers: int = Field(ge=1, le=4_096)
    hidden: int = Field(ge=1, le=2**17)
    heads: int = Field(ge=1, le=4_096)
    ffn: int | None = Field(None, ge=1, le=2**20, description="FFN width (default 4 x hidden)")
    gated_ffn: bool = Field(False, description="SwiGLU-style FFN (three matrices)")
    seq_len: int = Field(2048, ge=1, le=2**24)
    vocab: int = Field(50257, ge=1, le=2**24)
    experts: int = Field(0, ge=0, le=4_096, description="experts per MoE layer (0: dense)")
    top_k: int = Field(2, ge=1, description="experts per token")

    @property
    def ffn_width(self) -> int:
        return self.ffn or 4 * self.hidden

    @property
    def moe(self) -> bool:
        return self.experts > 1


class ParallelCfg(Model):
    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)
    dp: int | None = Field(None, ge=1, description="default: GPUs / (tp x pp)")
    ep: int = Field(1, ge=1, description="expert parallel (within DP)")
    vpp: int = Field(1, ge=1, le=1, description="virtual stages (only 1 is modelled)")
    micro_batch: int = Field(1, ge=1)
    global_batch: int = Field(ge=1)
    sequence_parallel: bool = False


_GPU_NAMES = [g.name for g in CATALOG.values()]  # the catalog's (hpn.gpus), as spelled there


class GpuCfg(Model):
    preset: str = Field("H800", description=f"one of {', '.join(_GPU_NAMES)}")
    peak_tflops: float | None = Field(None, gt=0, description="default: the preset's")
    efficiency: float = Field(0.5, gt=0, le=1, description="achieved / peak (MFU of kernels)")

    @model_validator(mode="after")
    def _known(self) -> GpuCfg:
        if self.preset not in _GPU_NAMES:
            raise ValueError(f"unknown GPU {self.preset!r}; choose from {list(_GPU_NAMES)}")
        return self

    @property
    def flops(self) -> float:
        return (self.peak_tflops or CATALOG[self.preset.lower()].tflops) * 1e12 * self.efficiency


class OverlapCfg(Model):
    """Which communication overlaps with compute."""

    dp: bool = Field(True, description="gradient buckets reduce during the last backward")
    tp: bool = Field(False, description="TP collectives hidden under compute")


class CommCfg(Model):
    dp_algo: str = Field("auto", description="DP AllReduce: auto (NCCL's tuner) or NCCL_ALGO")
    tp_algo: str = Field("auto", description="TP collectives: auto (NCCL's tuner) or NCCL_ALGO")
    proto: str = Field("auto", description="auto or NCCL_PROTO syntax (simple, ll, ll128)")
    model: str = Field("nccl", description="nccl (NCCL's tuner) or alpha (alpha per step)")
    nccl: str = Field("2.30.7", description="NCCL release whose tuner runs: 2.30.7 or 2.18.3")
    conns: int = Field(2, ge=1, description="connections (QPs) per GPU pair")
    channels: int | None = Field(None, ge=1, le=64, description="NCCL_MIN/MAX_NCHANNELS")
    cpu: Literal["intel", "amd"] = Field(
        "intel", description="the hosts' CPU vendor NCCL's tuner reads (as hpn collective --cpu)"
    )
    nic_path: Literal["pix", "pxb", "pxn", "phb", "sys"] = Field(
        "pxb", description="GPU-NIC PCIe path as NCCL names it (as hpn collective --nic-path)"
    )
    alpha: Duration = Field(
        "2us", le=1.0, description="software latency per step (alpha model; <= 1s)"
    )
    bucket: Size = Field("1GiB", le=2**40, description="gradient bucket size (<= 1TiB)")
    grad_reduce: Literal["auto", "fp32", "bf16", "fp16"] = Field(
        "auto",
        description=(
            "dtype the DP gradients are reduced in; auto: Megatron-LM's rule, fp32 for bf16 "
            "jobs (--accumulate-allreduce-grads-in-fp32 forced on; --grad-reduce-in-bf16 opts "
            "out), else the job's precision"
        ),
    )


class PlacementCfg(Model):
    first_host: int = Field(0, ge=0, description="first host (active hosts, fabric order)")
    per_host: int | None = Field(None, ge=1, description="GPUs used per host (default all)")
    order: Literal["tp-dp-pp", "tp-pp-dp"] = Field(
        "tp-dp-pp", description="rank order, fastest first (Megatron's default: tp-dp-pp)"
    )


class JobConfig(Model):
    name: str = "job"
    gpus: int | None = Field(None, ge=1, description="default: tp x pp x dp")
    model: ModelCfg | None = None
    aicb: FilePath | None = Field(None, description="AICB/SimAI workload file instead of a model")
    parallel: ParallelCfg = Field(default_factory=lambda: ParallelCfg(global_batch=1))
    gpu: GpuCfg = Field(default_factory=GpuCfg)
    precision: Literal["bf16", "fp16", "fp32"] = "bf16"
    overlap: OverlapCfg = Field(default_factory=OverlapCfg)
    comm: CommCfg = Field(default_factory=CommCfg)
    placement: PlacementCfg = Field(default_factory=PlacementCfg)

    @property
    def grad_bytes(self) -> int:
        """Bytes per gradient element as the DP reduction moves it (``comm.grad_reduce``).

        ``auto`` follows Megatron-LM: ``validate_args`` (``megatron/arguments.py``, 2021-2023;
        ``megatron/training/arguments.py`` since) sets ``accumulate_allreduce_grads_in_fp32``
        for bf16 ("bfloat16 requires gradient accumulation and all-reduce to be done in
        fp32"), so the gradient buffer and its all-reduce are fp32; fp16 and fp32 jobs reduce
        in their own dtype unless ``--accumulate-allreduce-grads-in-fp32`` is given."""
        g = self.comm.grad_reduce
        if g == "auto":
            g = "fp32" if self.precision == "bf16" else self.precision
        return DTYPE_BYTES[g]

    @model_validator(mode="after")
    def _consistent(self) -> JobConfig:
        if (self.model is None) == (self.aicb is None):
            raise ValueError("give exactly one of [model] or aicb")
        if self.model is None:
            return self
        p, m = self.parallel, self.model
        if p.dp is None and self.gpus is None:
            raise ValueError("give gpus or parallel.dp")
        dp = p.dp if p.dp is not None else (self.gpus or 0) // (p.tp * p.pp)
        gpus = self.gpus or p.tp * p.pp * dp
        if p.tp * p.pp * dp != gpus:
            raise ValueError(f"tp x pp x dp = {p.tp * p.pp * dp} must equal gpus = {gpus}")
        if m.layers % p.pp:
            raise ValueError(f"layers ({m.layers}) must divide evenly over pp = {p.pp}")
        if m.heads % p.tp:
            raise ValueError(f"heads ({m.heads}) must divide evenly over tp = {p.tp}")
        if p.global_batch % (dp * p.micro_batch):
            raise ValueError(
                f"global_batch ({p.global_batch}) must be a multiple of dp x micro_batch "
                f"= {dp * p.micro_batch}"
            )
        if dp % p.ep:
            raise ValueError(f"ep ({p.ep}) must divide dp ({dp})")
        if p.ep > 1 and (not m.moe or m.experts % p.ep):
            raise ValueError(f"ep = {p.ep} needs a MoE model whose experts divide by it")
        object.__setattr__(self.parallel, "dp", dp)
        object.__setattr__(self, "gpus", gpus)
        return self


def load_jobs(path: str | Path) -> tuple[list[JobConfig], dict[str, Any] | None]:
    """Jobs of a TOML file and its ``[fabric]`` table (or None)."""
    data = load_toml(path)
    fabric = data.pop("fabric", None)
    raw = data.pop("job", None)
    if raw is None:
        raw = [data]
    elif data:
        raise InputError(str(path), f"fields {sorted(data)} outside [[job]] tables")
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{path}: job", "expected [[job]] tables")
    jobs = []
    for i, item in enumerate(raw):
        prefix = "job" if len(raw) == 1 else f"job[{i}]"
        try:
            job = JobConfig(**item)
        except ValidationError as e:
            raise one_line(e, prefix) from None
        if job.aicb and not Path(job.aicb).is_absolute():
            job = job.model_copy(update={"aicb": str(Path(path).parent / job.aicb)})
        jobs.append(job)
    return jobs, fabric
