"""How far this machine's speed moves over minutes: the same decode step, fresh processes.

The engine check (bench/serve_vs_sim.py) predicts a replay from a serving calibration run
minutes before it; a prediction can be no better than the device's drift between the two.
This times one thing that does not change, a 4m Llama decode step (batch 1, context 64, one
thread, as an instance computes), in `--processes` fresh processes one after another,
`--seconds` each, and prints each one's median step (and its spread over 2 s buckets) with
its ratio to the first process: the reference run of the same command. A ratio far from 1
on a machine with nothing else running is the machine (a VM's host, its CPU frequency or
credits), not the engine: each process starts from nothing.

Usage: python bench/device_drift.py [--processes 8] [--seconds 12]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import statistics, sys, time
import numpy as np, torch
from hpn.serve.device import DeviceSpec, Link
from hpn.serve.engine import load_hosts
from hpn.serve.kv import blocks_for
from hpn.serve.paged import kv_pool
from hpn.serve.runner import DecodeBatch, Seq, prefill
from hpn.serve.weights import DeviceModel

torch.set_num_threads(1)
spec = DeviceSpec(kind="cpu", memory_bytes=256 << 20, link_bps=None, dtype="float32")
host = next(iter(load_hosts(sys.argv[1], spec).values()))
dm = DeviceModel(host, spec)
dm.load(Link(spec))
rng = np.random.default_rng(0)
end = time.perf_counter() + float(sys.argv[2])
t_bucket, bucket, medians = time.perf_counter(), [], []
while time.perf_counter() < end:
    seqs = [Seq(0, host.info.name, rng.integers(10, host.info.vocab, 64).tolist(), 10**6)]
    kv = kv_pool(dm.module.config, blocks_for(64 + 12), spec.torch_device, spec.torch_dtype)
    for s, tok in zip(seqs, prefill(dm.module, seqs, kv)):
        s.take(*tok)
    batch = DecodeBatch(dm.module, seqs, kv)
    for _ in range(10):
        t0 = time.perf_counter()
        for s, tok in zip(batch.seqs, batch.step()):
            s.take(*tok)
        bucket.append(time.perf_counter() - t0)
    if time.perf_counter() - t_bucket > 2.0:
        medians.append(statistics.median(bucket))
        bucket, t_bucket = [], time.perf_counter()
print(" ".join(repr(m) for m in medians))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=8, help="fresh processes, 2..100")
    ap.add_argument("--seconds", type=float, default=12.0, help="per process, 4..600")
    a = ap.parse_args()
    if not 2 <= a.processes <= 100:
        print(f"processes: 2..100, got {a.processes}", file=sys.stderr)
        return 2
    if not 4 <= a.seconds <= 600:
        print(f"seconds: 4..600, got {a.seconds}", file=sys.stderr)
        return 2
    from hpn.serve.store import make_models

    first = None
    with tempfile.TemporaryDirectory(prefix="hpn-drift-") as d:
        make_models(d, 1, ["4m"], seed=0, max_len=1024)
        t0 = time.perf_counter()
        print("process  start (s)  step ms  (2 s buckets)  vs first")
        for i in range(a.processes):
            start = time.perf_counter() - t0
            r = subprocess.run(
                [sys.executable, "-c", CHILD, d, str(a.seconds)], capture_output=True, text=True
            )
            if r.returncode != 0:
                print(f"process {i} failed: {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                return 1
            ms = [1e3 * float(x) for x in r.stdout.split()]
            med = statistics.median(ms)
            first = first or med
            print(
                f"{i:>7}  {start:9.0f}  {med:7.2f}  {min(ms):6.2f}-{max(ms):<6.2f}  "
                f"{med / first:7.2f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
