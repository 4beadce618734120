"""The NCCL model against public nccl-tests runs (issue 24: validate off the paper's point).

Reads ``bench/data/nccl_public.toml`` (multi-node ``all_reduce_perf`` outputs from public
GitHub threads, each with its URL) and runs ``hpn collective``'s model on each record's
hardware: an HPN-preset fabric (rail-optimized, single-port NICs) with the record's GPU type,
GPUs per host and NIC GB/s per GPU, NCCL's algorithm forced where the record forced it
(NCCL_ALGO), else NCCL's tuner, and the tuner release nearest the record's NCCL (2.18.3 for
2.16-2.23, 2.30.7 for 2.24+ and where the record does not say), the record's host CPU vendor
(``cpu``; Intel where it gives none: ``hpn collective --cpu``'s default). Per size it prints the
measured time and busbw, the model's, the ratio model busbw / measured busbw (= measured
time / model time; < 1: the model is slower), NCCL's own predicted time, the pipeline fill
the time model leaves out (``pipeline.fill_us``, a check) and the ratio with it, and what
ran; per
record the median ratio below 16 MiB and above 256 MiB. Nothing is fitted to the records.

    PYTHONPATH=src .venv/bin/python bench/nccl_public.py [--nccl 2.18.3|2.30.7] [--only ID]
        [--algo tree|ring|nvlstree] [--cpu intel|amd]
"""

from __future__ import annotations

import argparse
import statistics
import time
import tomllib
from pathlib import Path

from hpn.gpus import get_gpu
from hpn.topology import build
from hpn.workload.collectives import Params, sweep
from hpn.workload.collectives import tuning as tu
from hpn.workload.collectives.pipeline import fill_us

DATA = Path(__file__).parent / "data" / "nccl_public.toml"
M = 2**20
RDMA = ("ib", "roce", "not stated")  # records whose fabric is (or may be) IB or RoCE


def release(nccl: str) -> str:
    """The tuner release nearest a record's NCCL version ("2.20.5" -> 2.18.3)."""
    parts = nccl.split(".")
    if len(parts) < 2 or not parts[1].isdigit():
        return "2.30.7"  # not stated: hpn collective's default
    return "2.18.3" if int(parts[1]) < 24 else "2.30.7"


def fabric_for(rec: dict):
    """An HPN-preset fabric for the record's hosts: one NIC per GPU at the host's NIC GB/s
    shared by its GPUs (4 x 400G on 8 GPUs: 200G each), single-port unless the record's NICs
    have two ports (``dual_port``: HPN's dual-ToR NIC)."""
    gpu = get_gpu(rec["gpu"])
    per_gpu = rec["nic_gbps"] * rec["nics_used"] / rec["host_gpus"]
    if rec["gpus_per_host"] < rec["host_gpus"]:  # a rank per host: its own NIC
        per_gpu = rec["nic_gbps"]
    return build(
        "hpn",
        gpus_per_host=rec["host_gpus"],
        nic_bandwidth=f"{per_gpu:g}G",
        nvlink_bandwidth=f"{gpu.nvlink / 1e9:g}GB/s",
        dual_tor=bool(rec.get("dual_port", False)),
    )


def comm_for(rec: dict, p: Params) -> tu.Comm:
    """The communicator NCCL's tuner sees for the record (for the pipeline-fill check)."""
    per_gpu = rec["nic_gbps"] * rec["nics_used"] / rec["host_gpus"]
    if rec["gpus_per_host"] < rec["host_gpus"]:
        per_gpu = rec["nic_gbps"]
    n = rec["hosts"] * rec["gpus_per_host"]
    return tu.Comm(n, rec["hosts"], tu.GPUS.get(p.gpu), per_gpu / 8, nccl=tu.VERSIONS.get(p.nccl))


def fmt(size: int) -> str:
    for unit, div in (("G", 2**30), ("M", M), ("K", 2**10)):
        if size >= div:
            return f"{size / div:g}{unit}"
    return f"{size}"


def run(
    rec: dict, nccl: str | None, force: str | None = None, cpu: str | None = None
) -> float | None:
    rel = nccl or release(rec["nccl"])
    algo = force or (None if rec["algo"] == "auto" else rec["algo"])
    cpu = cpu or rec.get("cpu", "intel")
    p = Params(gpu=rec["gpu"], nccl=rel, proto=rec.get("proto", "auto"), cpu=cpu)
    gpus = rec["hosts"] * rec["gpus_per_host"]
    sizes = [int(r[0]) for r in rec["rows"]]
    out = sweep(fabric_for(rec), "allreduce", sizes, gpus, rec["gpus_per_host"], algo, seed=1,
                params=p)  # fmt: skip
    print(
        f"\n## {rec['id']}: {rec['hosts']} x {rec['gpus_per_host']} {rec['gpu']}, "
        f"{rec['nics_used']} x {rec['nic_gbps']}G {rec['network']}, NCCL {rec['nccl']} "
        f"(tuner {rel}, {cpu} CPU), NCCL_ALGO {rec['algo']}{f' (run: {force})' if force else ''}"
        f"\n   {rec['url']}"
    )
    print(f"{'size':>6} | {'meas us':>8} {'model us':>8} {'excess':>7} {'nccl us':>8} | "
          f"{'meas bus':>8} {'model bus':>9} {'ratio':>6} | {'fill':>5} {'+fill':>5} "
          "| ran")  # fmt: skip
    c = comm_for(rec, p)
    ratios = []
    for (size, t_meas, bus_meas), r in zip(rec["rows"], out.results, strict=True):
        t_model = r["time_s"] * 1e6
        ratio = t_meas / t_model
        ratios.append((int(size), ratio))
        pred = r.get("predicted_s", 0.0) * 1e6
        fill = fill_us(c, "allreduce", r["algo"], r["proto"], float(size), r["channels"])
        print(
            f"{fmt(int(size)):>6} | {t_meas:8.1f} {t_model:8.1f} {t_meas - t_model:7.1f} "
            f"{pred:8.1f} | {bus_meas:8.2f} "
            f"{r['busbw_GBps']:9.2f} {ratio:6.2f} | {fill:5.1f} {t_meas / (t_model + fill):5.2f} "
            f"| {r['algo']}/{r['proto']}/{r['channels']}ch"
        )
    small = [x for s, x in ratios if s < 16 * M]
    large = [x for s, x in ratios if s > 256 * M]
    med = {k: f"{statistics.median(v):.2f} ({len(v)})" if v else "-"
           for k, v in (("small", small), ("large", large))}  # fmt: skip
    print(f"median ratio: < 16 MiB {med['small']}, > 256 MiB {med['large']}")
    return statistics.median(small) if small else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nccl", default=None, help="tuner release for every record")
    ap.add_argument("--only", default=None, help="one record id")
    ap.add_argument("--algo", default=None, help="NCCL_ALGO for every record (default: its own)")
    ap.add_argument("--cpu", default=None, help="host CPU for every record (default: its own)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    records = tomllib.loads(DATA.read_text())["record"]
    per: dict[str, list[tuple[str, float]]] = {"rdma": [], "other": []}
    for rec in records:
        if a.only and rec["id"] != a.only:
            continue
        med = run(rec, a.nccl, a.algo, a.cpu)
        if med is not None:
            per["rdma" if rec["network"] in RDMA else "other"].append((rec["id"], med))
    for kind, rows in per.items():
        if rows:
            meds = ", ".join(f"{i} {m:.2f}" for i, m in rows)
            above = sum(m > 1 for _, m in rows)
            print(f"\n{kind} records, median ratio < 16 MiB per record: {meds}; "
                  f"model faster on {above} of {len(rows)}")  # fmt: skip
    print(f"wall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
