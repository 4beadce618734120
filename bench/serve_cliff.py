"""How sensitive the simulated check is to the device's speed and the autoscaler's phase.

`bench/serve_vs_sim.py` compares the engine with the simulator on one machine whose speed
drifts (a VM: the same commit's profile fit moved 2.8x between two quiet runs). This runs
only the simulator (`hpn.serve.compare.predict`) on the same trace the check replays, with
a saved profile (serve_vs_sim --timeline DIR writes ``POLICY-profile.json``) scaled as a
uniformly slower or faster device (every prefill, decode and cold load x `factor`, the
profile's ``replay_scale``), and with the trace shifted against the policies' 1 s ticks
(`--phases`). A check that moves tens of points for a 20 % speed change sits on a capacity
cliff: agreement there says little about the model and disagreement little more.

Usage: python bench/serve_cliff.py PROFILE.json [--policy serverless] [--rates 0.1,0.2,0.3]
       [--factors 0.8,1,1.2,1.5] [--phases 0,0.25,0.5,0.75] [--seeds 1] [--count 8]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from hpn.pool.policies.base import Slo
from hpn.pool.traces import market
from hpn.pool.traces.base import Trace
from hpn.serve.compare import engine_trace, predict
from hpn.serve.device import DeviceSpec
from hpn.serve.engine import cluster_for, load_hosts
from hpn.serve.store import make_models


def scaled(profile: dict, factor: float) -> dict:
    """`profile` on a device `factor` times slower (every computed operation)."""
    return {**profile, "replay_scale": {"prefill": factor, "decode": factor, "load": factor}}


def shifted(tr: Trace, dt: float) -> Trace:
    """`tr` with every arrival `dt` seconds later (the ticks' phase against the trace)."""
    return Trace.build(
        np.asarray(tr.arrival) + dt, tr.model, tr.input_len, tr.output_len, tr.names, tr.kinds
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("profile", help="a saved engine profile (serve_vs_sim --timeline)")
    ap.add_argument("--policy", default="serverless")
    ap.add_argument("--rates", default="0.3", help="req/s per model, comma-separated")
    ap.add_argument("--factors", default="0.8,0.9,1,1.1,1.2,1.35,1.5")
    ap.add_argument("--phases", default="0", help="trace shifts in seconds, comma-separated")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--count", type=int, default=8, help="served models (profile's first N)")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--duration", type=float, default=120.0)
    ap.add_argument("--ttft", type=float, default=5.0)
    ap.add_argument("--tbt", type=float, default=0.2)
    ap.add_argument("--out", help="write the rows as JSON")
    a = ap.parse_args()
    prof = json.loads(Path(a.profile).read_text())
    prof.pop("replay_scale", None)
    served = sorted(prof["fits"])[: a.count]
    dev = prof["device"]
    spec = DeviceSpec(
        kind=dev["kind"],
        memory_bytes=int(dev["memory_bytes"]),
        link_bps=dev.get("link_bps"),
        dtype=dev.get("dtype", "float32"),
    )
    with tempfile.TemporaryDirectory(prefix="hpn-serve-cliff-") as tmp:
        # KV bytes per token from the architectures the profile names (sizes as generated)
        make_models(tmp, len(prof["fits"]), ["4m"], seed=0, max_len=1024)
        hosts = load_hosts(tmp, spec)
        kvb = {m: hosts[m].info.kv_bytes_per_token(spec.elem_bytes) for m in served}
    cl = cluster_for(a.policy, 1, 2, a.workers)
    slo = Slo(a.ttft, a.tbt)
    factors = [float(x) for x in a.factors.split(",")]
    phases = [float(x) for x in a.phases.split(",")]
    rows = []
    print(
        f"{a.policy}, {len(served)} models, {a.workers} instances; "
        "attainment %, TBT p99 s (switches)"
    )
    print(f"{'rate':>5} {'seed':>4} {'shift':>5}  " + "  ".join(f"x{f:<15g}" for f in factors))
    for rate in (float(x) for x in a.rates.split(",")):
        for seed in (int(x) for x in a.seeds.split(",")):
            tr = market(len(served), rate, a.duration, seed=seed, in_scale=0.25, out_scale=0.25)
            etr = engine_trace(tr, served, 256, 64)
            for dt in phases:
                cells = []
                for f in factors:
                    r = predict(shifted(etr, dt), a.policy, cl, scaled(prof, f), kvb, slo)
                    rows.append(
                        {
                            "rate": rate,
                            "seed": seed,
                            "shift_s": dt,
                            "factor": f,
                            "attainment": r.slo_attainment,
                            "switches": r.switches,
                            "ttft_p50_s": r.ttft_p50_s,
                            "tbt_p99_s": r.tbt_p99_s,
                        }
                    )
                    cells.append(
                        f"{100 * r.slo_attainment:5.1f} {r.tbt_p99_s:5.2f} ({r.switches:3d})"
                    )
                print(f"{rate:5.2f} {seed:4d} {dt:5.2f}  " + "  ".join(cells))
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
