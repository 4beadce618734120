"""Import of AICB / SimAI workload text files (formats.md §2) as a :class:`JobPlan`.

Header: parallelism policy then ``key: value`` tokens (TP, EP, PP, VPP, GA, all_gpus,
pp_comm). Records: name, dependency, then for forward, input-gradient and weight-gradient each
a compute time (ns) and a collective (keyword, bytes), and an update time. Collectives without
a suffix run in the TP group (fields 4 and 7) or the DP group (field 10); ``_EP`` in the expert
group; ``_DP_EP`` among expert replicas (reduced here over the DP group: same bytes per GPU).
Every stage runs the file's layers (SimAI's per-rank view); weight-gradient collectives become
gradient buckets in record order; ``pp_comm`` is the bytes a GPU sends per pipeline send.
"""

from __future__ import annotations

from pathlib import Path

from hpn.errors import InputError
from hpn.registry import Registry
from hpn.workload.training.config import JobConfig
from hpn.workload.training.plan import JobPlan, StagePlan

PARALLELISM: Registry[str] = Registry("parallelism policy")
"""The policy keywords a workload file's header may start with (those SimAI accepts)."""
_OTHER = "accepted as SimAI does; hpn reads its records the same way"
for _name, _summary in (
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "what AICB writes, for training and inference"),
    ("HYBRID_TRANSFORMER", "transformer training; SimAI reads the header keys"),
    ("MICRO", "collective micro-benchmarks"),
    ("DATA", _OTHER),
    ("HYBRID_DLRM", _OTHER),
    ("HYBRID_DLRM_ENHANCED", _OTHER),
    ("MODEL", _OTHER),
    ("HYBRID_DATA_MODEL", _OTHER),
    ("HYBRID_MODEL_DATA", _OTHER),
    ("HYBRID_CUSTOMIZED", _OTHER),
    ("DISTRIBUTED_INFERENCE", _OTHER),
):
    PARALLELISM.add(_name, _name, _summary)
_OPS = (  # prefix order as SimAI tests them
    ("ALLREDUCEALLTOALL", "allreduce"),  # caught by the ALLREDUCE test in SimAI
    ("ALLREDUCE", "allreduce"),
    ("ALLTOALL", "alltoall"),
    ("ALLGATHER", "allgather"),
    ("REDUCESCATTER", "reducescatter"),
)


def parse_collective(word: str) -> tuple[str | None, str]:
    """(op or None, group suffix: '', 'EP' or 'DP_EP')."""
    group = "DP_EP" if word.endswith("_DP_EP") else "EP" if word.endswith("_EP") else ""
    for prefix, op in _OPS:
        if word.startswith(prefix):
            return op, group
    return None, group  # NONE, BROADCAST and unknown words: no communication


MAX_BYTES = 64 * 2**20  # an AICB workload file's size at most
MAX_RECORDS = 100_000  # its records (layers x phases) at most
MAX_GA = 4_096  # gradient-accumulation steps (the micro-batch bound of `train`)


def read_aicb(path: str | Path) -> tuple[dict[str, int], list[list[str]]]:
    from hpn.config import read_input

    if Path(path).is_dir() or not Path(path).exists():
        raise InputError(str(path), "no such AICB workload file")
    lines = [ln.split() for ln in read_input(path, MAX_BYTES).splitlines() if ln.strip()]
    if len(lines) < 2:
        raise InputError(str(path), "expected a header line and a record count")
    head = lines[0]
    PARALLELISM.get(head[0], f"{path}: line 1")
    keys: dict[str, int] = {}
    for name in ("model_parallel_NPU_group", "ep", "pp", "vpp", "ga", "all_gpus", "pp_comm"):
        for tok in (f"{name}:", name):
            if tok in head and head.index(tok) + 1 < len(head):
                try:
                    keys[name] = int(float(head[head.index(tok) + 1]))
                except ValueError:
                    raise InputError(f"{path}: line 1", f"{name} is not a number") from None
                break
    try:
        count = int(lines[1][0])
    except ValueError:
        raise InputError(f"{path}: line 2", "expected the number of records") from None
    recs = lines[2:]
    if count > MAX_RECORDS:
        raise InputError(f"{path}: line 2", f"{count:,} records; at most {MAX_RECORDS:,}")
    if not 1 <= keys.get("ga", 1) <= MAX_GA:
        raise InputError(f"{path}: line 1", f"ga must be in 1..{MAX_GA:,}, got {keys['ga']}")
    if len(recs) != count:
        raise InputError(f"{path}: line 2", f"says {count} records, the file has {len(recs)}")
    for i, r in enumerate(recs):
        if len(r) < 12:
            raise InputError(f"{path}: line {i + 3}", f"expected 12 fields, got {len(r)}")
    return keys, recs


def plan_from_aicb(job: JobConfig) -> JobPlan:
    if job.aicb is None:
        raise InputError("aicb", "no AICB workload file given")
    keys, recs = read_aicb(job.aicb)
    tp = keys.get("model_parallel_NPU_group", 1) or 1
    pp, ep, ga = keys.get("pp", 1) or 1, keys.get("ep", 1) or 1, keys.get("ga", 1) or 1
    gpus = keys.get("all_gpus") or job.gpus
    if not gpus or gpus % (tp * pp):
        raise InputError("aicb", f"all_gpus ({gpus}) must be a multiple of tp x pp = {tp * pp}")
    dp = gpus // (tp * pp)
    st = StagePlan(0.0, 0.0)
    try:
        for r in recs:
            f_ns, ig_ns, wg_ns = int(r[2]), int(r[5]), int(r[8])
            st.fwd_s += f_ns * 1e-9
            st.bwd_s += (ig_ns + wg_ns) * 1e-9
            for word, size, target in ((r[3], r[4], "fwd"), (r[6], r[7], "bwd")):
                op, group = parse_collective(word)
                nbytes = float(size)
                if op is None or nbytes <= 0:
                    continue
                if group == "EP" or op == "alltoall":
                    getattr(st, f"ep_{target}").append(nbytes)
                else:
                    getattr(st, f"tp_{target}").append((op, nbytes))
            op, _ = parse_collective(r[9])
            if op is not None and float(r[10]) > 0:
                st.buckets.append(float(r[10]))
    except ValueError as e:
        raise InputError(f"{job.aicb}", f"a record field is not a number ({e})") from None
    mb = job.parallel.micro_batch
    seq = job.model.seq_len if job.model else 2048
    return JobPlan(
        name=job.name,
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        micro_batches=ga,
        samples=ga * dp * mb,
        tokens=ga * dp * mb * seq,
        pp_bytes=float(keys.get("pp_comm", 0)),
        stages=[st] * pp,
        cfg=job.model_copy(update={"gpus": gpus}),
    )
