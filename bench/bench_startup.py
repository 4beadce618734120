"""Start-up time of ``hpn --help`` and ``hpn CMD --help`` against ``python -c "import numpy"``.

Each case runs in a fresh interpreter, best of 5; the figure is the ratio to the numpy import
measured in the same run (issue goal: within 3x).

    python bench/bench_startup.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
CASES = {
    "import numpy": ["-c", "import numpy"],
    "hpn --help": ["-m", "hpn", "--help"],
    "hpn traffic --help": ["-m", "hpn", "traffic", "--help"],
    "hpn pool simulate --help": ["-m", "hpn", "pool", "simulate", "--help"],
}


def best(args: list[str], n: int = 5) -> float:
    env = {**os.environ, "PYTHONPATH": SRC}
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ref = best(CASES["import numpy"])
    print(f"{'import numpy':28s} {ref:6.3f} s  (reference)")
    for name, args in CASES.items():
        if name == "import numpy":
            continue
        t = best(args)
        print(f"{name:28s} {t:6.3f} s  {t / ref:5.2f}x numpy")


if __name__ == "__main__":
    main()
