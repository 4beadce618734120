"""Cluster-scale speed (issue 17): whole `hpn` processes, wall time, CPU time and peak RSS.

Cases (goals on a 2-core machine):

- ``pod-train``: GPT-3 175B on a 15,360-GPU HPN pod, ``--routing ecmp``: <= 5 s;
- ``pod-train-hpn``: the same with ``--routing hpn``: <= 6 s;
- ``8pod-perm`` / ``8pod-perm-hpn``: permutation over the 122,880 GPUs of 8 HPN pods, 2 MB,
  ECMP / HPN path selection: <= 5 s, <= 600 MB;
- ``8pod-train``: GPT-3 175B, DP 1,920 on 8 pods (9.3 M flows), ECMP: <= 60 s, <= 2 GB
  (``--full``: minutes); ``8pod-train-default``: the same with the fabric's default routing
  (HPN path selection);
- ``fixed``: a permutation over 16 GPUs of a one-segment pod: what every computing command
  pays whatever its size (imports, numba's start and kernel loading, config, the store), no
  goal of its own (``--cases fixed``).

Every case runs the shipped CLI in a fresh process (``python -m hpn ...``), so the figures
include imports and output, as a user sees them. With ``--baseline REV`` the same commands
also run on the source tree of git revision ``REV`` (extracted to a temporary directory), in
the same run, and the ratio is printed; ``--repeat N`` takes the median of N runs. Before
timing, small warm-up commands run on each tree, so numba's on-disk caches are filled and
neither side pays kernel compilation in its figures. Both trees are copied to one temporary
directory first (the working tree's ``src`` as it is, uncommitted changes included), the
working tree with its numba caches; the baseline gets them too for every package whose
sources are byte-identical in both trees (else it compiles its own, about a minute).

    .venv/bin/python bench/bench_scale.py                       # pod cases + 8-pod permutation
    .venv/bin/python bench/bench_scale.py --full                # + the 8-pod training
    .venv/bin/python bench/bench_scale.py --baseline 8928d70    # + the previous engine
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples" / "train"

PERM = ["traffic", "--preset", "hpn", "--pods", "8", "--pattern", "permutation", "--size", "2MB"]
CASES = {
    "pod-train": ["train", str(EX / "gpt3-175b-pod.toml"), "--routing", "ecmp"],
    "pod-train-hpn": ["train", str(EX / "gpt3-175b-pod.toml"), "--routing", "hpn"],
    "8pod-perm": [*PERM, "--routing", "ecmp"],
    "8pod-perm-hpn": [*PERM, "--routing", "hpn"],
    "8pod-train": ["train", str(EX / "gpt3-175b-8pods.toml"), "--routing", "ecmp"],
    "8pod-train-default": ["train", str(EX / "gpt3-175b-8pods.toml")],  # the fabric's: hpn
    "fixed": ["traffic", "--preset", "hpn", "--pods", "1", "--segments", "1", "--pattern",
              "permutation", "--size", "2MB", "--endpoints", "16"],
}  # fmt: skip
OPTIONAL = {"fixed"}  # run only when named in --cases
WARM = [
    ["traffic", "--preset", "hpn", "--pods", "2", "--segments", "1", "--pattern",
     "permutation", "--size", "1MB", "--routing", routing]
    for routing in ("hpn", "ecmp")
]  # fmt: skip

GOALS = {
    "pod-train": (5, None),
    "pod-train-hpn": (6, None),
    "8pod-perm": (5, 600),
    "8pod-perm-hpn": (5, 600),
    "8pod-train": (60, 2048),
    "8pod-train-default": (60, 2048),
    "fixed": (None, None),
}


def run(args: list[str], src: Path) -> dict:
    """One CLI process: wall s, CPU s (user + sys) and peak RSS in MB."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "hpn", *args, "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode() if p.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"hpn {' '.join(args)} failed: {err.strip()[-500:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss / 1024}


def median(rows: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def extract(rev: str, into: Path) -> Path:
    """The ``src`` tree of git revision ``rev``, extracted under ``into``."""
    into.mkdir(parents=True)
    arch = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=arch, check=True)
    return into / "src"


def share_caches(new: Path, base: Path) -> list[str]:
    """Copy ``new``'s numba caches into ``base`` for each package whose ``.py`` files are
    byte-identical in both (numba checks a source's size and mtime, so ``base``'s sources get
    ``new``'s mtimes); the packages shared. A package with any difference keeps none: a
    kernel's cache does not notice a changed callee in another file."""
    shared = []
    for cache in sorted(new.rglob("__pycache__")):
        blobs = sorted(cache.glob("*.nb[ic]"))
        pkg, other = cache.parent, base / cache.parent.relative_to(new)
        sources = sorted(pkg.glob("*.py"))
        if not blobs or not other.is_dir():
            continue
        if sorted(p.name for p in other.glob("*.py")) != [p.name for p in sources] or any(
            p.read_bytes() != (other / p.name).read_bytes() for p in sources
        ):
            continue
        for p in sources:
            st = p.stat()
            os.utime(other / p.name, ns=(st.st_atime_ns, st.st_mtime_ns))
        (other / "__pycache__").mkdir(exist_ok=True)
        for b in blobs:
            shutil.copy2(b, other / "__pycache__" / b.name)
        shared.append(str(pkg.relative_to(new)))
    return shared


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="also the 8-pod training (minutes)")
    ap.add_argument("--baseline", metavar="REV", help="git revision to compare against")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (median)")
    ap.add_argument("--cases", nargs="*", choices=list(CASES), help="a subset of the cases")
    a = ap.parse_args()
    names = a.cases or [
        n for n in CASES if n not in OPTIONAL and (a.full or not n.startswith("8pod-train"))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        # both trees in one temporary directory: where a tree lies (its file system, its
        # numba cache) changes the figures by up to a third on a shared machine
        src = Path(tmp) / "new" / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("*.pyc"))
        base = extract(a.baseline, Path(tmp) / "base") if a.baseline else None
        if base is not None:
            shared = share_caches(src, base)
            print(f"numba caches shared with the baseline: {', '.join(shared) or 'none'}")
        for tree in [src] + ([base] if base else []):
            # byte-compiled as an installed package is: with PYTHONDONTWRITEBYTECODE set (as in
            # some shells) every run would compile hpn's ~65 modules from source, 0.15-0.2 s
            compileall.compile_dir(str(tree), quiet=1)
            for args in WARM:
                run(args, tree)
        print(
            f"{'case':15} {'wall s':>7} {'cpu s':>7} {'RSS MB':>7}"
            + (f" {'base wall':>9} {'base cpu':>8} {'base MB':>7} {'cpu ratio':>9}" if base else "")
            + "  goal"
        )
        for name in names:
            new = median([run(CASES[name], src) for _ in range(a.repeat)])
            line = f"{name:15} {new['wall']:7.2f} {new['cpu']:7.2f} {new['rss']:7.0f}"
            if base is not None:
                old = median([run(CASES[name], base) for _ in range(a.repeat)])
                line += (
                    f" {old['wall']:9.2f} {old['cpu']:8.2f} {old['rss']:7.0f}"
                    f" {old['cpu'] / new['cpu']:8.1f}x"
                )
            secs, mb = GOALS[name]
            if secs is None:
                print(f"{line}  (no goal)", flush=True)
                continue
            ok = new["wall"] <= secs and (mb is None or new["rss"] <= mb)
            goal = f"<= {secs} s" + (f", <= {mb} MB" if mb else "")
            print(f"{line}  {goal}: {'met' if ok else 'MISSED'}", flush=True)


if __name__ == "__main__":
    main()
