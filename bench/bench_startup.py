"""Start-up time of ``hpn --help`` and ``hpn CMD --help`` against ``python -c "import numpy"``.

Each case runs in a fresh interpreter, best of N rounds (5; a round runs every case once, so
the reference and the cases see the same load). The figures are the CPU time (user + sys of the
child, steadier than wall time on a shared machine) and the wall time, each as a ratio to the
numpy import measured in the same rounds (issue goal: within 3x of its wall time). The load
average is printed before and after: numpy's import starts threads, so under load its wall
time grows more than a single-threaded start-up's and the wall ratios read better than at idle.

    python bench/bench_startup.py              # hpn --help and a few commands
    python bench/bench_startup.py --all        # every command's --help
    python bench/bench_startup.py --rounds 9   # best of 9
    python bench/bench_startup.py --against OTHER/src   # also each case on another checkout

``--against`` runs every case a second time with ``PYTHONPATH=OTHER/src`` in the same rounds
and prints this tree's CPU time as a ratio of that one's (issue 26: ``--help`` within 1.5x of
the tree that kept a committed ``flags.json``). A first unmeasured round warms both trees' kept
flags (this tree's user cache), as every start-up after a user's first finds them.
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


def once(args: list[str], src: str = SRC) -> tuple[float, float]:
    """CPU seconds and wall seconds of one run of ``python ARGS`` (``PYTHONPATH=src``)."""
    env = {**os.environ, "PYTHONPATH": src}
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
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 5
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    runs = {"import numpy": ["-c", "import numpy"]}
    runs.update({name: ["-m", "hpn", *args] for name, args in cases.items()})
    other = sys.argv[sys.argv.index("--against") + 1] if "--against" in sys.argv else None
    cpu = {name: float("inf") for name in runs}
    wall = dict(cpu)
    theirs = dict(cpu)
    for args in runs.values():  # warm-up: kept flags written, files in the page cache
        once(args)
        if other:
            once(args, other)
    for _ in range(rounds):
        for name, args in runs.items():
            c, w = once(args)
            cpu[name], wall[name] = min(cpu[name], c), min(wall[name], w)
            if other:
                theirs[name] = min(theirs[name], once(args, other)[0])
    ref_cpu, ref_wall = cpu["import numpy"], wall["import numpy"]
    print(f"{'case':34s} {'cpu s':>6s} {'ratio':>6s}  {'wall s':>6s} {'ratio':>6s}")
    for name in runs:
        c, w = cpu[name], wall[name]
        print(f"{name:34s} {c:6.3f} {c / ref_cpu:5.2f}x  {w:6.3f} {w / ref_wall:5.2f}x")
    worst = max(runs, key=lambda n: wall[n])
    print(f"slowest: {worst}: {wall[worst] / ref_wall:.2f}x import numpy (wall; goal 3x)")
    worst = max(runs, key=lambda n: cpu[n])
    print(f"slowest by CPU: {worst}: {cpu[worst] / ref_cpu:.2f}x import numpy (best of {rounds})")
    if other:
        print(f"against {other} (CPU s, this tree / that tree):")
        for name in runs:
            c, t = cpu[name], theirs[name]
            print(f"  {name:32s} {t:6.3f} -> {c:6.3f}  {c / t:5.2f}x")
        worst = max(runs, key=lambda n: cpu[n] / theirs[n])
        print(f"largest ratio: {worst}: {cpu[worst] / theirs[worst]:.2f}x (goal: 1.5x)")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
