"""The 8-pod GPT-3 example (issue 17's design point) loads into the job and fabric it names."""

from pathlib import Path

from hpn.topology import build, spec_from_table
from hpn.workload.training import load_jobs
from hpn.workload.training.planner import make_plan

EX = Path(__file__).parents[2] / "examples" / "train"


def test_eight_pod_example_is_the_pod_example_scaled_to_eight_pods():
    (job,), table = load_jobs(EX / "gpt3-175b-8pods.toml")
    (pod,), none = load_jobs(EX / "gpt3-175b-pod.toml")
    assert none is None and table == {"preset": "hpn", "pods": 8}
    plan, pod_plan = make_plan(job), make_plan(pod)
    assert (plan.tp, plan.pp, plan.dp) == (8, 8, 1920)
    assert plan.micro_batches == pod_plan.micro_batches == 8
    assert job.model == pod.model and job.gpu == pod.gpu
    fabric = build(spec_from_table(table))
    gpus = int((fabric.nodes.kind == 0).sum())
    assert plan.tp * plan.pp * plan.dp == 122_880 <= gpus
