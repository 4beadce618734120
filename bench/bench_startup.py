"""Start-up time of ``hpn --help`` and ``hpn CMD --help`` against ``python -c "import numpy"``.

Each case runs in a fresh interpreter, best of 5 rounds (a round runs every case once, so the
reference and the cases see the same load). The figures are the CPU time (user + sys of the
child, steadier than wall time on a shared machine) and the wall time, each as a ratio to the
numpy import measured in the same rounds (issue goal: within 3x).

    python bench/bench_startup.py          # hpn --help and a few commands
    python bench/bench_startup.py --all    # every command's --help
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
SOME = ["traffic", "pool simulate", "fail", "train", "topo summary"]


def once(args: list[str]) -> tuple[float, float]:
    """CPU seconds and wall seconds of one run of ``python ARGS``."""
    env = {**os.environ, "PYTHONPATH": SRC}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, capture_output=True, check=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, wall


def commands() -> list[str]:
    sys.path.insert(0, SRC)
    from hpn.app import COMMANDS

    return list(COMMANDS) + ["runs list", "sweep", "plot", "dash", "demo"]


def main() -> None:
    cases = {"hpn --help": ["--help"]}
    for name in commands() if "--all" in sys.argv else SOME:
        cases[f"hpn {name} --help"] = [*name.split(), "--help"]
    runs = {"import numpy": ["-c", "import numpy"]}
    runs.update({name: ["-m", "hpn", *args] for name, args in cases.items()})
    cpu = {name: float("inf") for name in runs}
    wall = dict(cpu)
    for _ in range(5):
        for name, args in runs.items():
            c, w = once(args)
            cpu[name], wall[name] = min(cpu[name], c), min(wall[name], w)
    ref_cpu, ref_wall = cpu["import numpy"], wall["import numpy"]
    print(f"{'case':34s} {'cpu s':>6s} {'ratio':>6s}  {'wall s':>6s} {'ratio':>6s}")
    for name in runs:
        c, w = cpu[name], wall[name]
        print(f"{name:34s} {c:6.3f} {c / ref_cpu:5.2f}x  {w:6.3f} {w / ref_wall:5.2f}x")
    worst = max(runs, key=lambda n: wall[n])
    print(f"slowest: {worst}: {wall[worst] / ref_wall:.2f}x import numpy (wall; goal 3x)")


if __name__ == "__main__":
    main()
