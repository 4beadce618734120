"""LLM training iterations on a fabric: job configs, per-stage plans (model or AICB file),
the 1F1B DAG of one iteration, and its simulation."""

from hpn.workload.training.config import JobConfig, load_jobs
from hpn.workload.training.gpus import GPU_PEAK_TFLOPS
from hpn.workload.training.plan import JobPlan, StagePlan
from hpn.workload.training.planner import make_plan
from hpn.workload.training.run import train
from hpn.workload.training.schedule import one_f_one_b

__all__ = [
    "GPU_PEAK_TFLOPS",
    "JobConfig",
    "JobPlan",
    "StagePlan",
    "load_jobs",
    "make_plan",
    "one_f_one_b",
    "train",
]
