"""The main job on built-in defaults: HPN against DCN+, end to end, in about a minute.

Every step runs a registered command in-process and records its run in the store, so the
dashboard (``hpn dash``) shows them; the demo ends with one offline HTML report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# LLaMa-13B on 448 GPUs (56 hosts), the paper's Fig 16 set-up; the parallelism is our choice.
LLAMA_13B = {
    "name": "llama-13b",
    "model": {
        "name": "LLaMa-13B",
        "layers": 40,
        "hidden": 5120,
        "heads": 40,
        "ffn": 13824,
        "gated_ffn": True,
        "seq_len": 4096,
        "vocab": 32000,
    },
    "parallel": {"tp": 8, "pp": 1, "dp": 56, "micro_batch": 1, "global_batch": 448},
    "gpu": {"preset": "H800", "efficiency": 0.5},
}
# LLaMa-7B on 256 GPUs (32 hosts), the paper's Fig 18 reliability set-up; pure data parallel.
LLAMA_7B = {
    "name": "llama-7b",
    "model": {
        "name": "LLaMa-7B",
        "layers": 32,
        "hidden": 4096,
        "heads": 32,
        "ffn": 11008,
        "gated_ffn": True,
        "seq_len": 4096,
        "vocab": 32000,
    },
    "parallel": {"tp": 1, "pp": 1, "dp": 256, "micro_batch": 1, "global_batch": 1024},
    "gpu": {"preset": "H800", "efficiency": 0.5},
}
FAULT = "link:host=12,nic=3,port=0,at=30s,repair=90s"
SIZES = "1M,4M,16M,64M,256M,1G,4G"
FABRICS = (("hpn", "hpn"), ("dcn-plus", "ecmp"))  # (preset, routing each cluster uses)


@dataclass
class Demo:
    """What the demo ran: run folders and the figures it prints."""

    runs: list[Path] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)
    report: Path | None = None
    claims: list[str] = field(default_factory=list)  # the reproduce subset's table
    wall_s: float = 0.0


def _record(demo: Demo, command: str, config: dict[str, Any], label: str):
    from hpn.app import run
    from hpn.store.record import record_outcome

    outcome = run(command, config)
    result = outcome.result.to_json()
    folder = record_outcome(command, outcome, config, label=label)
    demo.runs.append(folder)
    return result, folder


def run_demo(out: Path, say: Callable[[str], None] = print) -> Demo:
    """Run every step; ``say`` reports progress."""
    from hpn.plots.kinds import busbw, fault_throughput, slo_load
    from hpn.report import write_html
    from hpn.store.run import open_run

    t0 = time.perf_counter()
    demo = Demo()
    out.mkdir(parents=True, exist_ok=True)

    say("fabrics: the HPN pod and a DCN+ pod")
    for preset, _ in FABRICS:
        s, _ = _record(demo, "topo summary", {"fabric": {"preset": preset}}, f"{preset} pod")
        demo.figures.append(
            (
                f"{preset}: GPUs per pod / segment",
                f"{s['gpus']:,} / {s['gpus'] // max(s['segments'], 1):,}",
            )
        )

    say("collective: AllReduce on 448 GPUs, 1M..4G, each fabric with its routing")
    coll, pool_runs = [], []
    for preset, routing in FABRICS:
        cfg = {
            "fabric": {"preset": preset},
            "collective": {
                "op": "allreduce",
                "gpus": 448,
                "sizes": SIZES,
                "routing": routing,
                "seed": 1,
            },
        }
        r, folder = _record(demo, "collective", cfg, f"allreduce 448 GPUs {preset}")
        coll.append(folder)
        top = r["results"][-1]
        demo.figures.append(
            (f"{preset}: AllReduce busbw at 4 GiB", f"{top['busbw_GBps']:.0f} GB/s")
        )

    say("collective: Multi-AllReduce (one AllReduce per rail, all traffic between hosts)")
    for preset, routing in FABRICS:
        cfg = {
            "fabric": {"preset": preset},
            "collective": {
                "op": "multi-allreduce",
                "gpus": 448,
                "sizes": "256M,1G",
                "routing": routing,
                "seed": 1,
            },
        }
        r, _ = _record(demo, "collective", cfg, f"multi-allreduce 448 GPUs {preset}")
        top = r["results"][-1]
        demo.figures.append(
            (f"{preset}: Multi-AllReduce busbw at 1 GiB", f"{top['busbw_GBps']:.0f} GB/s")
        )

    say("routing: hash polarization on a plain Clos against dual-plane (P Fig 13)")
    for single in (True, False):
        cfg = {
            "fabric": {"preset": "hpn", "segments": 2, "dual_plane": not single},
            "polarization": {"routing": "ecmp", "seed": 1, "bond_hash": "rr"},
        }
        name = "single-plane" if single else "dual-plane"
        r, _ = _record(demo, "route polarization", cfg, f"polarization {name}")
        ratio = r["tor_port_load_ratio"]
        demo.figures.append(
            (
                f"{name}: ToR-port load ratio toward a NIC",
                "inf" if ratio is None else f"{ratio:.2f}",
            )
        )

    say("training: one LLaMa-13B iteration on 448 GPUs on each fabric")
    for preset, routing in FABRICS:
        cfg = {
            "fabric": {"preset": preset},
            "train": {"routing": routing, "seed": 1},
            "job": [LLAMA_13B],
        }
        r, _ = _record(demo, "train", cfg, f"llama-13b 448 GPUs {preset}")
        demo.figures.append((f"{preset}: LLaMa-13B samples/s", f"{r['samples_per_s']:.1f}"))

    say("failure: one NIC-ToR link down for 90 s under LLaMa-7B on 256 GPUs")
    fail_runs = []
    for design, fabric in (
        ("dual-ToR", {"preset": "hpn"}),
        ("single-ToR", {"preset": "hpn", "dual_tor": False}),
    ):
        cfg = {"fabric": fabric, "job": LLAMA_7B, "fail": {"faults": [FAULT], "routing": "hpn"}}
        r, folder = _record(demo, "fail", cfg, f"link failure {design}")
        fail_runs.append(folder)
        crashed = ", crashed" if r["crashed"] else ""
        demo.figures.append(
            (
                f"{design}: throughput lost during the fault",
                f"{r['throughput_loss']:.1%} (halted {r['halted_s']:.0f} s{crashed})",
            )
        )

    say("serving: Aegaeon against request-level autoscaling, 16 H800")
    for policy, gpus in (
        ("aegaeon", {"prefill_gpus": 6, "decode_gpus": 10}),
        ("serverless", {"gpus": 16}),
        ("serverless-artifact", {"gpus": 16}),
    ):
        cfg = {
            "pool": {
                "policy": policy,
                "rate": 0.1,
                "duration": "300s",
                "gpu": "h800",
                "seed": 1,
                **gpus,
            }
        }
        r, folder = _record(demo, "pool goodput", cfg, f"goodput {policy}")
        pool_runs.append(folder)
        demo.figures.append(
            (f"serving, {policy}: most models at >= 90 % SLO", f"{r['max_models']}")
        )
    for policy, gpus in (
        ("aegaeon", {"prefill_gpus": 6, "decode_gpus": 10}),
        ("serverless", {"gpus": 16}),
        ("serverless-artifact", {"gpus": 16}),
        ("dedicated", {"gpus": 16}),
    ):
        cfg = {
            "pool": {
                "policy": policy,
                "models": 40,
                "rate": 0.1,
                "duration": "300s",
                "gpu": "h800",
                "seed": 1,
                **gpus,
            }
        }
        r, _ = _record(demo, "pool simulate", cfg, f"pool {policy} 40 models")
        demo.figures.append((f"serving, {policy}: SLO attainment", f"{r['slo_attainment']:.1%}"))

    say("report")
    from hpn.topology import build
    from hpn.topology.draw import draw_segment

    draw_segment(build("hpn"), out / "hpn-segment.png")
    charts = [
        busbw([open_run(f) for f in coll]),
        fault_throughput([open_run(f) for f in fail_runs]),
        slo_load([open_run(f) for f in pool_runs]),
    ]
    demo.report = write_html(
        demo.runs,
        out / "report.html",
        title="hpn demo: HPN against DCN+",
        charts=charts,
        intro="Built-in defaults: the paper's pod, a 448-GPU AllReduce sweep and a LLaMa-13B "
        "iteration on HPN and DCN+, a link failure under dual-ToR and single-ToR, and a "
        "serving-pool comparison.",
    )
    say("reproduce: a few claims of both papers beside the model (hpn reproduce --quick: more)")
    from hpn.reproduce import select
    from hpn.reproduce.runner import run_and_record, table_lines

    claims = [c for c in select("all") if c.demo]
    meta = {"paper": "all", "quick": False, "demo": True, "only": None}
    from hpn.app import run

    _, res = run_and_record(claims, (out / "reproduce").absolute(), meta, run)
    counts = ", ".join(f"{n} {k}" for k, n in res["counts"].items())
    demo.claims = [*table_lines(res["claims"]), f"{counts}; report: {res['report']}"]
    demo.wall_s = time.perf_counter() - t0
    return demo
