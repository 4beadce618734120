"""Training iteration speed: GPT-3 175B (TP 8, PP 8, DP 240) on a full 15,360-GPU HPN pod.

Target (issue 5): <= 30 s for one iteration. The reference measured in the same run is the
same model on 448 GPUs (56 hosts); the ratio of wall time per flow shows how the simulation
scales from 56 to 1,920 hosts.

    .venv/bin/python bench/bench_train.py
"""

from __future__ import annotations

import time
from pathlib import Path

from hpn.topology import build
from hpn.workload.training import load_jobs, train

EX = Path(__file__).parents[1] / "examples" / "train"


def one(cfg: str, preset: str, routing: str):
    jobs, _ = load_jobs(EX / cfg)
    f = build(preset)
    t0 = time.perf_counter()
    out, _ = train(f, jobs, routing, seed=1)
    return time.perf_counter() - t0, out


def main() -> None:
    ref_wall, ref = one("gpt3-175b-448.toml", "hpn", "ecmp")
    print(
        f"reference: GPT-3 175B on 448 GPUs: {ref_wall:.2f} s, {ref.flows:,} flows, "
        f"iteration {ref.iteration_s:.3f} s"
    )
    worst = 0.0
    for routing in ("ecmp", "hpn"):
        wall, out = one("gpt3-175b-pod.toml", "hpn", routing)
        worst = max(worst, wall)
        print(
            f"GPT-3 175B on 15,360 GPUs, routing {routing}: {wall:.2f} s "
            f"({out.flows:,} flows, {out.tasks:,} tasks; iteration "
            f"{out.iteration_s:.3f} s, {out.samples_per_s:.0f} samples/s)"
        )
        print(
            f"  wall per flow vs the 448-GPU reference: "
            f"{(wall / out.flows) / (ref_wall / ref.flows):.2f}"
        )
    print(f"target <= 30 s: {'met' if worst <= 30 else 'MISSED'} (worst {worst:.2f} s)")


if __name__ == "__main__":
    main()
