"""sim@replay again from a `serve_vs_sim.py --timeline DIR` run, over seeds of its draws.

Usage: python bench/serve_redraw.py DIR [--draws 5] [--times F,...]

Reads DIR/serverless-{profile,sim,engine}.json (the trace from the simulator's log, the
device from the engine's: `compare.replay_scale`, 10 s windows) and predicts the replay
with the code on the path, once per draw seed (`predict(draw=k)`), on the replay's device
times each F (1: as measured; 0.4: every operation 2.5x faster), and with the spread
dropped ("no spread": every operation at its window's scale). With the calibration
replay's engine log (DIR/serverless-calibration-engine.json, written since 2026-12-03) it
also redoes the prediction ("sim": that log read without windows). Serverless only: it
moves no KV, so the models' KV bytes per token (not in the logs) do not enter.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from hpn.pool.policies.base import Slo
from hpn.pool.traces.base import Trace
from hpn.serve.compare import predict, replay_scale, slower
from hpn.serve.engine import cluster_for

POLICY = "serverless"
WINDOW_S = 10.0  # serve_vs_sim's default --window


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--times", default="1")
    ap.add_argument("--ttft", type=float, default=5.0)
    ap.add_argument("--tbt", type=float, default=0.2)
    ap.add_argument("--workers", type=int, default=3)
    a = ap.parse_args()
    d = Path(a.dir)
    if not (d / f"{POLICY}-engine.json").exists():
        print(f"dir: no {POLICY}-engine.json in {d}", file=sys.stderr)
        return 2
    if a.draws < 1:
        print("draws: at least 1", file=sys.stderr)
        return 2
    prof = json.loads((d / f"{POLICY}-profile.json").read_text())
    sim = json.loads((d / f"{POLICY}-sim.json").read_text())
    eng = json.loads((d / f"{POLICY}-engine.json").read_text())
    names = sorted(prof["fits"])
    rq = sorted(sim["requests"], key=lambda r: (r["arrival"], r["rid"]))
    tr = Trace.build(
        np.array([r["arrival"] for r in rq]),
        np.array([names.index(r["model"]) for r in rq], dtype=np.int32),
        np.array([r["input_len"] for r in rq]),
        np.array([r["output_len"] for r in rq]),
        names,
        ["engine"] * len(names),
    )
    kvb = {m: 1.0 for m in names}
    cl = cluster_for(POLICY, 0, 0, a.workers)
    slo = Slo(a.ttft, a.tbt)
    cal = d / f"{POLICY}-calibration-engine.json"
    if cal.exists():
        serving = replay_scale(json.loads(cal.read_text()), prof, kvb, True, 0.0)
        res = [
            predict(tr, POLICY, cl, {**prof, "replay_scale": serving}, kvb, slo, draw=k)
            for k in range(a.draws)
        ]
        att = [100 * r.slo_attainment for r in res]
        print(
            f"sim (calibrated) attainment {statistics.mean(att):5.1f} % "
            f"({min(att):.1f}-{max(att):.1f}), scale-ups "
            f"{statistics.mean(r.switches for r in res):.1f}"
        )
    scale = replay_scale(eng, prof, kvb, True, 0.0, arrivals=tr.arrival, window=WINDOW_S)
    for f in (float(x) for x in a.times.split(",")):
        for label, sp in (("spread", scale["spread"]), ("no spread", {})):
            rs = {**slower(scale, f), "spread": sp}
            res = [
                predict(tr, POLICY, cl, {**prof, "replay_scale": rs}, kvb, slo, draw=k)
                for k in range(a.draws if sp else 1)
            ]
            att = [100 * r.slo_attainment for r in res]
            ups = [r.switches for r in res]
            tbt = [r.tbt_p99_s for r in res]
            print(
                f"x{f:g} {label:<9} attainment {statistics.mean(att):5.1f} % "
                f"({min(att):.1f}-{max(att):.1f}), scale-ups {statistics.mean(ups):.1f} "
                f"({min(ups)}-{max(ups)}), TBT p99 {min(tbt):.3f}-{max(tbt):.3f} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
