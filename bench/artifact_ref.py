"""Write REFDIR for `hpn pool validate --requests`: the Aegaeon authors' simulator's
per-request output, one workload file at a time.

The authors' simulator (``aegaeon/sim`` of MachineLearningSystem/25SOSP-Aegaeon) needs SimPy
4.1.2, scikit-learn, aenum, numpy, pandas and matplotlib; run this script with the Python of
a virtual environment that has them (it does not import ``hpn``). For each workload file
``F.csv`` it starts one child process (the simulator extends its model enum per workload, so
files must not share a process) that runs ``main(args, POLICY, silent=True)`` of
``aegaeon/sim/simulate.py`` with ``args = parse_args([])`` (16 H100, seed 0) and
``args.workload`` the file, and writes ``OUT/F.requests.csv`` (``--policy
serverless-artifact``: ``SeLLMPolicy()``) or ``OUT/F.aegaeon.requests.csv`` (``--policy
aegaeon``: ``MixServePolicy(num_prefill_workers=P)``, P = 6 of 16 as ``hpn.pool.simulate.
split_gpus`` gives, ``--prefill-workers``), one row per request: ``req_id, model,
arrival_ms, input_len, output_len, state, first_token_ms, last_token_ms, tokens, token_ms``
(``hpn.pool.validate_requests``).

Usage: python bench/artifact_ref.py --artifact ARTIFACT --out REFDIR [--policy aegaeon]
       [--prefill-workers 6] [--jobs 1] FILE.csv [FILE.csv ...]

(ARTIFACT: a work tree of the authors' repository; run it under ``nice`` on a shared machine.)
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

SUFFIX = {"serverless-artifact": ".requests.csv", "aegaeon": ".aegaeon.requests.csv"}
COLUMNS = (
    "req_id",
    "model",
    "arrival_ms",
    "input_len",
    "output_len",
    "state",
    "first_token_ms",
    "last_token_ms",
    "tokens",
    "token_ms",
)


def out_path(out: Path, workload: Path, policy: str) -> Path:
    """Where the output for `workload` under `policy` goes."""
    return out / (workload.name.removesuffix(".csv") + SUFFIX[policy])


def run_one(artifact: Path, workload: Path, out: Path, policy: str, prefill: int) -> None:
    """Run the simulator on one file in this process and write its rows."""
    sys.path.insert(0, str(artifact.resolve()))
    from aegaeon.sim import simulate as sim  # type: ignore[import-not-found]

    args = sim.parse_args([])
    args.workload = str(workload.resolve())
    pol = (
        sim.SeLLMPolicy()
        if policy == "serverless-artifact"
        else sim.MixServePolicy(num_prefill_workers=prefill)
    )
    reqs = sim.main(args, pol, silent=True)
    path = out_path(out, workload, policy)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in reqs:
            tok = list(r.metrics["time_each_token_ms"])
            w.writerow(
                [
                    r.req_id,
                    str(r.model),
                    r.metrics["time_arrival_ms"],
                    r.input_len,
                    r.output_len,
                    "FAILED" if r.is_failed else ("FINISHED" if r.is_finished else "UNFINISHED"),
                    tok[0] if tok else "",
                    tok[-1] if tok else "",
                    len(tok),
                    " ".join(str(t) for t in tok),
                ]
            )
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", type=Path, required=True, help="work tree of the artifact")
    ap.add_argument("--out", type=Path, required=True, help="REFDIR to write")
    ap.add_argument("--policy", choices=sorted(SUFFIX), default="serverless-artifact")
    ap.add_argument("--prefill-workers", type=int, default=6, help="MixServe prefill workers")
    ap.add_argument("--jobs", type=int, default=1, help="files run at once")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("files", nargs="+", type=Path)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    if a.one:
        run_one(a.artifact, a.files[0], a.out, a.policy, a.prefill_workers)
        return 0
    base = [sys.executable, __file__, "--one", "--artifact", str(a.artifact), "--out", str(a.out)]
    base += ["--policy", a.policy, "--prefill-workers", str(a.prefill_workers)]
    todo, running, rc = list(a.files), [], 0
    while todo or running:
        while todo and len(running) < a.jobs:
            f = todo.pop(0)
            running.append((f, time.perf_counter(), subprocess.Popen([*base, str(f)])))
        time.sleep(0.2)
        for item in list(running):
            f, t0, p = item
            if p.poll() is not None:
                running.remove(item)
                rc = rc or p.returncode
                print(f"{f.name}: rc {p.returncode}, {time.perf_counter() - t0:.0f} s", flush=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
