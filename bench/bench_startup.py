"""Start-up time of ``hpn --help``, ``hpn CMD --help`` and a small run, against
``python -c "import numpy"``.

Each case runs in a fresh interpreter, N rounds (5; a round runs every case once, so the
reference and the cases see the same load). The figures are the CPU time (user + sys of the
child, steadier than wall time on a shared machine) and the wall time, best and median of the
rounds, each as a ratio to the numpy import measured in the same rounds (issue goal: within 3x
of its wall time). The load average is printed before and after: numpy's import starts
threads, so under load its wall time grows more than a single-threaded start-up's and the
wall ratios read better than at idle.

The small run is the 1,024-host fat-tree permutation (``hpn traffic --preset fat-tree --k 16
--speed 100G --pattern permutation --json``, its run stored in a temporary folder), whose
numpy twins import neither numba nor scipy (issue 26: at most 0.7 s of CPU, whole process).
The same command with ``HPN_KERNELS=numba`` (the compiled kernels, as before) runs in the same
rounds as its reference, and the two ``--json`` outputs must agree field by field (wall time
and peak memory aside).

    python bench/bench_startup.py              # hpn --help, a few commands, the small run
    python bench/bench_startup.py --all        # every command's --help
    python bench/bench_startup.py --rounds 9   # 9 rounds
    python bench/bench_startup.py --against OTHER/src   # also each case on another checkout
    python bench/bench_startup.py --small --rounds 9 --against OTHER/src  # the small run only

``--against`` runs every case a second time with ``PYTHONPATH=OTHER/src``, alternating with
this tree's in the same rounds, and prints this tree's CPU time as a ratio of that one's,
best and median (issue 26: ``--help`` within 1.5x of the tree that kept a committed
``flags.json``); the small run's output must equal that tree's too. ``--small`` runs the small
run alone (with ``import numpy`` as the reference), for its median over more rounds. A first
unmeasured round warms both trees' kept flags (this tree's user cache) and kernel caches, as
every start-up after a user's first finds them.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
SOME = ["traffic", "pool simulate", "fail", "train", "topo summary"]
SMALL_RUN = "traffic --preset fat-tree --k 16 --speed 100G --pattern permutation --json"
SMALL = "hpn traffic fat-tree k=16 (1,024 hosts)"
COMPILED = f"{SMALL}, HPN_KERNELS=numba"
VARYING = ("wall_s", "peak_rss_mb")  # fields that differ from run to run


def once(args: list[str], src: str = SRC, env: dict[str, str] | None = None) -> tuple:
    """CPU seconds, wall seconds and stdout of one run of ``python ARGS``
    (``PYTHONPATH=src``)."""
    env = {**os.environ, "PYTHONPATH": src, **(env or {})}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *args], env=env, capture_output=True, check=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, wall, p.stdout


def commands() -> list[str]:
    sys.path.insert(0, SRC)
    from hpn.app import COMMANDS

    return list(COMMANDS) + ["runs list", "sweep", "plot", "dash", "demo"]


def differences(a: bytes, b: bytes) -> list[str]:
    """The fields of two ``--json`` outputs that differ (``VARYING`` aside)."""
    x, y = json.loads(a), json.loads(b)
    keys = sorted((set(x) | set(y)) - set(VARYING))
    return [k for k in keys if x.get(k) != y.get(k)]


def main() -> None:
    small_only = "--small" in sys.argv
    cases = {} if small_only else {"hpn --help": ["--help"]}
    for name in [] if small_only else commands() if "--all" in sys.argv else SOME:
        cases[f"hpn {name} --help"] = [*name.split(), "--help"]
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 5
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    store = tempfile.mkdtemp(prefix="hpn-bench-runs-")
    runs = {"import numpy": (["-c", "import numpy"], {})}
    runs.update({name: (["-m", "hpn", *args], {}) for name, args in cases.items()})
    small = ["-m", "hpn", *SMALL_RUN.split()]
    runs[SMALL] = (small, {"HPN_RUNS_DIR": store})
    if not small_only:
        runs[COMPILED] = (small, {"HPN_RUNS_DIR": store, "HPN_KERNELS": "numba"})
    other = sys.argv[sys.argv.index("--against") + 1] if "--against" in sys.argv else None
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    theirs: dict[str, list[float]] = {name: [] for name in runs}
    outs: dict[str, bytes] = {}
    for name, (args, env) in runs.items():  # warm-up: kept flags, kernels, the page cache
        outs[name] = once(args, env=env)[2]
        if other:
            outs[f"theirs {name}"] = once(args, other, env)[2]
    for _ in range(rounds):
        for name, (args, env) in runs.items():
            c, w, _out = once(args, env=env)
            cpu[name].append(c)
            wall[name].append(w)
            if other:
                theirs[name].append(once(args, other, env)[0])
    best = {n: min(v) for n, v in cpu.items()}
    mid = {n: statistics.median(v) for n, v in cpu.items()}
    ref_cpu = best["import numpy"]
    ref_wall = min(wall["import numpy"])
    print(f"{'case':44s} {'cpu s':>6s} {'ratio':>6s} {'median':>6s}  {'wall s':>6s} {'ratio':>6s}")
    for name in runs:
        c, m, w = best[name], mid[name], min(wall[name])
        print(f"{name:44s} {c:6.3f} {c / ref_cpu:5.2f}x {m:6.3f}  {w:6.3f} {w / ref_wall:5.2f}x")
    helps = [n for n in runs if n.endswith("--help")]
    if helps:
        worst = max(helps, key=lambda n: min(wall[n]))
        ratio = min(wall[worst]) / ref_wall
        print(f"slowest --help: {worst}: {ratio:.2f}x import numpy (wall; goal 3x)")
        worst = max(helps, key=lambda n: best[n])
        ratio = best[worst] / ref_cpu
        print(f"slowest by CPU: {worst}: {ratio:.2f}x import numpy ({rounds} rounds)")
    spread = ", ".join(f"{c:.3f}" for c in sorted(cpu[SMALL]))
    print(
        f"small run: {best[SMALL]:.3f} s CPU best, {mid[SMALL]:.3f} median (goal 0.7 s); {spread}"
    )
    if COMPILED in runs:
        print(
            f"compiled kernels {best[COMPILED]:.3f} / {mid[COMPILED]:.3f}: "
            f"{mid[SMALL] / mid[COMPILED]:.2f}x (medians)"
        )
        diff = differences(outs[SMALL], outs[COMPILED])
        print(f"small run, numpy twins vs compiled: {diff or 'identical'}")
    if other:
        print(f"against {other} (CPU s, that tree -> this tree, best; median; ratio of medians):")
        for name in runs:
            t, c, tm, m = min(theirs[name]), best[name], statistics.median(theirs[name]), mid[name]
            print(f"  {name:42s} {t:6.3f} -> {c:6.3f}; {tm:6.3f} -> {m:6.3f}  {m / tm:5.2f}x")
        if helps:
            worst = max(helps, key=lambda n: mid[n] / statistics.median(theirs[n]))
            ratio = mid[worst] / statistics.median(theirs[worst])
            print(f"largest --help ratio: {worst}: {ratio:.2f}x (medians; goal: 1.5x)")
        diff = differences(outs[SMALL], outs[f"theirs {SMALL}"])
        print(f"small run, this tree vs that tree: {diff or 'identical'}")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
