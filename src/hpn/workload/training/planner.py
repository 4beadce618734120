"""``make_plan``: a job's plan from its model (:mod:`.plan`) or its AICB workload (:mod:`.aicb`)."""

from __future__ import annotations

from hpn.workload.training.aicb import plan_from_aicb
from hpn.workload.training.config import JobConfig
from hpn.workload.training.plan import JobPlan, plan_from_model


def make_plan(job: JobConfig) -> JobPlan:
    """The plan of ``job``: from its AICB file when it names one, else from its model."""
    return plan_from_aicb(job) if job.aicb else plan_from_model(job)
