"""LLM training iterations on a fabric: job configs, per-stage plans (model or AICB file),
the 1F1B DAG of one iteration, and its simulation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpn.lazy import lazy_getattr

if TYPE_CHECKING:
    from hpn.workload.training.config import JobConfig, load_jobs
    from hpn.workload.training.plan import JobPlan, StagePlan
    from hpn.workload.training.planner import make_plan
    from hpn.workload.training.run import train
    from hpn.workload.training.schedule import one_f_one_b

__all__ = [
    "JobConfig",
    "JobPlan",
    "StagePlan",
    "load_jobs",
    "make_plan",
    "one_f_one_b",
    "train",
]
_HOME = {
    "JobConfig": "hpn.workload.training.config",
    "load_jobs": "hpn.workload.training.config",
    "JobPlan": "hpn.workload.training.plan",
    "StagePlan": "hpn.workload.training.plan",
    "make_plan": "hpn.workload.training.planner",
    "train": "hpn.workload.training.run",
    "one_f_one_b": "hpn.workload.training.schedule",
}


__getattr__ = lazy_getattr(__name__, _HOME)  # on first use: importing the package stays cheap
