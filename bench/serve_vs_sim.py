"""The simulator checked against the engine (issue 15 §4), end to end.

1. Generate a scaled-down market of checkpoints (or use --models DIR).
2. Profile this device (`hpn.serve.profile.measure`, fitted by `pool.calibration`).
3. For each policy: start `hpn serve` in a subprocess, replay a synthetic market trace
   against it (`hpn.serve.replay`, time 0 on a whole second of the server's clock, as the
   simulator's clock starts with the trace), and predict the same replay with the
   simulator (`hpn.serve.compare.predict`) fed the profile alone ("bare") and the profile
   with the serving calibration ("sim", the prediction): first a `--calibrate` s replay
   of another trace (seed + `CALIBRATION_SEED`) against a fresh server, read by
   `replay_scale` (speed, contention curve and spread of each kind of operation, no
   windows). The bare profile times the forward passes alone; a server also decodes its
   tokens, streams them, accounts and schedules on the same cores and interpreter, and its
   instances overlap as the policy makes them: that is what the calibration measures,
   before the replay and on other requests. "drift d/p": the replay's decodes and
   prefills timed against the calibration's device (`compare.drift`; 1.20: the device ran
   20 % slower in the replay than in the calibration minutes before), the distance no
   prediction made before the replay can see (bench/device_drift.py: this VM's speed).
4. Predict it again with the device as the replay found it: the profile scaled by the
   engine's measured operation times against the profile at the concurrency they ran at
   (`hpn.serve.compare.replay_scale`, read from the engine's event log). The policy,
   scheduler, batching and accounting stay the simulator's; only the device speed is read
   from the replay (a profile taken before cannot see load that changes during it).
5. Print the attainments side by side (and write them as JSON with --out), with sim@rep on
   a device 10 % slower and 10 % faster ("+-10%"): at 0.3 req/s serverless sits on a
   capacity cliff (bench/serve_cliff.py) where that moves it tens of points, so a seed's
   agreement is only as good as the measured speed; and sim@rep over `DRAWS` seeds of
   its per-operation draws from the replay's spread ("draws": mean and range; the sim@rep
   column is draw 0), the prediction's own noise on that cliff; "sim draws" the same for
   the prediction. With --timeline DIR each policy's engine, sim (the calibrated
   prediction; the bare one without --calibrate), sim@rep (POLICY-rep.json) logs, profile,
   calibration (its scale, and its replay's engine log: POLICY-calibration-engine.json),
   scale and client token times are written for bench/timeline_diff.py and
   bench/serve_redraw.py.

Usage: python bench/serve_vs_sim.py [--models DIR] [--duration 120] [--seeds 0,1,2]
       [--calibrate 40] [--repeats 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from hpn.pool.policies import get_policy
from hpn.pool.policies.base import Slo
from hpn.pool.traces import market
from hpn.serve import profile as profiles
from hpn.serve.compare import drift, engine_trace, predict, replay_scale, slower
from hpn.serve.device import DeviceSpec
from hpn.serve.engine import cluster_for, cold_start, load_hosts, startup_s
from hpn.serve.replay import replay
from hpn.serve.store import make_models

CALIBRATION_SEED = 1000  # the calibration trace's seed: the replay's + this
DRAWS = 5  # sim@rep predictions, each with its own seed of the spread's draws
SERVER = (
    "import sys, json; from hpn.serve.server import serve_models; from hpn.pool.policies.base "
    "import Slo; a = json.loads(sys.argv[1]); a['slo'] = Slo(*a.pop('slo')); serve_models(**a)"
)


def start_server(args: dict, port: int, env: dict) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", SERVER, json.dumps(args)], env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if p.poll() is not None:
            raise SystemExit(f"server exited with {p.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return p
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    p.kill()
    raise SystemExit("server did not come up")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", help="checkpoint folder (default: generate into a temp dir)")
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--sizes", default="4m")
    ap.add_argument("--policies", default="aegaeon,serverless")
    ap.add_argument("--prefill", type=int, default=1)
    ap.add_argument("--decode", type=int, default=2)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--rate", type=float, default=0.1, help="req/s per model")
    ap.add_argument("--duration", type=float, default=120.0, help="trace seconds")
    ap.add_argument("--max-input", type=int, default=256)
    ap.add_argument("--max-output", type=int, default=64)
    ap.add_argument("--len-scale", type=float, default=0.25, help="ShareGPT lengths x this")
    ap.add_argument("--link", type=float, default=1e8, help="host link bytes/s")
    ap.add_argument("--memory", type=int, default=256 << 20, help="instance budget bytes")
    ap.add_argument("--ttft", type=float, default=5.0)
    ap.add_argument("--tbt", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", help="comma-separated seeds, one run each (overrides --seed)")
    ap.add_argument("--port", type=int, default=18431)
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--startup",
        type=float,
        default=None,
        help="serverless: engine start-up per scale-up on both sides (default: the build)",
    )
    ap.add_argument(
        "--window",
        type=float,
        default=10.0,
        help="seconds per window of the replay's measured device speed (0: one for all)",
    )
    ap.add_argument(
        "--calibrate",
        type=float,
        default=40.0,
        help="seconds of another trace replayed first to read the device as the server "
        "runs it (0: predict from the profile alone)",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="replays of each trace on the engine (fresh servers): its own spread",
    )
    ap.add_argument("--out")
    ap.add_argument(
        "--timeline", help="folder: write each side's event log (hpn.serve.timeline) there"
    )
    ap.add_argument(
        "--profile-each", action="store_true", help="profile again before each policy's replay"
    )
    ap.add_argument(
        "--single",
        dest="concurrent",
        action="store_false",
        help="profile one instance alone (default: all instances busy at once)",
    )
    a = ap.parse_args()
    if not 1 <= a.repeats <= 10:
        print(f"repeats: 1..10, got {a.repeats}", file=sys.stderr)
        return 2
    if not 0 <= a.calibrate <= a.duration:
        print(f"calibrate: 0..--duration s, got {a.calibrate}", file=sys.stderr)
        return 2
    seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else [a.seed]
    rows, timeline, out = [], a.timeline, a.out
    for seed in seeds:
        a.seed = seed
        if timeline and len(seeds) > 1:
            a.timeline = str(Path(timeline, f"seed{seed}"))
        a.out = None
        with tempfile.TemporaryDirectory(prefix="hpn-serve-check-") as tmp:
            rows += run(a, tmp)
    a.timeline, a.out = timeline, out
    table(rows)
    if a.out:
        Path(a.out).write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1) + "\n")
    return 0


def table(rows: list[dict]) -> None:
    """Engine; simulator on the profile alone (bare), on the profile and the serving
    calibration (sim: a prediction, with its draws), and on the device as the replay found
    it (sim@rep: a diagnosis), side by side."""
    print(
        f"{'seed':>4} {'policy':<11} {'engine':>7} {'engine repeats':>17} {'bare':>6} "
        f"{'sim':>6} {'diff':>6} "
        f"{'sim draws':>17} {'drift d/p':>9} {'sim@rep':>7} {'diff':>6} {'+-10%':>9} "
        f"{'draws':>17}  "
        f"{'TBT p99 e/b/s/s@rep (s)':<28} {'switches e/b/s/s@rep':<19} load"
    )

    def span(xs: list[float]) -> str:
        d = [100 * x for x in xs]
        return f"{sum(d) / len(d):.1f} ({min(d):.0f}-{max(d):.0f}%)"

    for r in rows:
        e, b, s, c = (
            100 * r[k]
            for k in ("engine_attainment", "bare_attainment", "sim_attainment", "cal_attainment")
        )
        tbt = "/".join(
            f"{r[k]:.3f}"
            for k in ("engine_tbt_p99_s", "bare_tbt_p99_s", "sim_tbt_p99_s", "cal_tbt_p99_s")
        )
        sw = "/".join(f"{r[k + '_switches']:.0f}" for k in ("engine", "bare", "sim", "cal"))
        near = f"{100 * r['cal_attainment_slower']:.0f}..{100 * r['cal_attainment_faster']:.0f}%"
        load = f"{r['load_avg_1m'][0]:.1f}-{r['load_avg_1m'][1]:.1f}"
        mv = r.get("calibration_drift") or {}
        moved = "/".join(f"{mv[k]:.2f}" if k in mv else "-" for k in ("decode", "prefill"))
        print(
            f"{r['seed']:>4} {r['policy']:<11} {e:6.1f}% "
            f"{span(r['engine_repeats_attainment']):>17} {b:5.1f}% {s:5.1f}% {e - s:+6.1f} "
            f"{span(r['sim_draws_attainment']):>17} {moved:>9} {c:6.1f}% {e - c:+6.1f} "
            f"{near:>9} "
            f"{span(r['cal_draws_attainment']):>17}  {tbt:<28} {sw:<19} {load}"
        )


def serve_and_replay(a, pol, models, prof_path, trace, slo, elog, opts, env):
    """Start the engine's server for `pol`, replay `trace` against it (its event log to
    `elog`); returns (the replay's result, the requests sent, switches counted by the
    server's metrics, the load average at the start)."""
    args = dict(
        models=models,
        policy=pol,
        prefill=a.prefill,
        decode=a.decode,
        workers=a.workers,
        port=a.port,
        profile=str(prof_path),
        device=a.device,
        memory=a.memory,
        link_bps=a.link if a.device == "cpu" else None,
        threads=1,
        slo=[slo.ttft, slo.tbt],
        startup=opts.get("startup"),
        timeline=str(Path(elog).resolve()),
    )
    proc = start_server(args, a.port, env)
    load_before = os.getloadavg()[0]
    try:
        eng, sent = replay(
            trace,
            f"http://127.0.0.1:{a.port}",
            slo=slo,
            max_input=a.max_input,
            max_output=a.max_output,
            align=1.0,
        )
        m = httpx.get(f"http://127.0.0.1:{a.port}/metrics", timeout=10).text
        switches = sum(
            float(line.split()[-1])
            for line in m.splitlines()
            if line.startswith("hpn_switches_total{")
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    return eng, sent, switches, load_before


def run(a, tmp: str) -> list[dict]:
    """The check, with generated models and profiles in `tmp` (removed afterwards)."""
    models = a.models
    if models is None:
        models = os.path.join(tmp, "models")
        make_models(models, a.count, a.sizes.split(","), seed=a.seed, max_len=1024)
    spec = DeviceSpec(
        kind=a.device,
        memory_bytes=a.memory,
        link_bps=a.link if a.device == "cpu" else None,
        dtype="float32" if a.device == "cpu" else "bfloat16",
    )
    hosts = load_hosts(models, spec)
    n_inst = max(a.prefill + a.decode, a.workers)

    def measure_profile(tag: str) -> tuple[dict, Path]:
        t0 = time.perf_counter()
        prof = profiles.measure(hosts, spec, concurrent=n_inst if a.concurrent else 1)
        path = Path(tmp) / f"profile-{tag}.json"
        profiles.save(prof, path)
        print(f"profiled {len(hosts)} models in {time.perf_counter() - t0:.0f} s -> {path}")
        return prof, path

    prof, prof_path = measure_profile("first")
    kvb = {m: h.info.kv_bytes_per_token(spec.elem_bytes) for m, h in hosts.items()}
    served = sorted(hosts)

    slo = Slo(a.ttft, a.tbt)
    tr = market(
        len(served),
        a.rate,
        a.duration,
        seed=a.seed,
        in_scale=a.len_scale,
        out_scale=a.len_scale,
    )
    etr = engine_trace(tr, served, a.max_input, a.max_output)
    env = dict(os.environ)
    rows = []
    for k, pol in enumerate(a.policies.split(",")):
        if a.profile_each and k:  # the machine's load drifts: profile next to each replay
            prof, prof_path = measure_profile(pol)
        cl = cluster_for(pol, a.prefill, a.decode, a.workers)
        logs: list = []
        opts = {"startup": a.startup} if a.startup is not None and pol == "serverless" else {}
        sim = bare = predict(
            etr, pol, cl, prof, kvb, slo, timeline=logs if a.timeline else None, options=opts
        )
        if a.timeline:
            Path(a.timeline).mkdir(parents=True, exist_ok=True)
            Path(a.timeline, f"{pol}-sim.json").write_text(json.dumps(logs[0]) + "\n")
            Path(a.timeline, f"{pol}-profile.json").write_text(json.dumps(prof) + "\n")
        if a.calibrate > 0:  # the device as the server runs it, on another trace
            ctr = engine_trace(
                market(
                    len(served),
                    a.rate,
                    a.calibrate,
                    seed=a.seed + CALIBRATION_SEED,
                    in_scale=a.len_scale,
                    out_scale=a.len_scale,
                ),
                served,
                a.max_input,
                a.max_output,
            )
            clog = Path(a.timeline or tmp, f"{pol}-calibration-engine.json")
            serve_and_replay(a, pol, models, prof_path, ctr, slo, clog, opts, env)
            serving = replay_scale(
                json.loads(clog.read_text()),
                prof,
                kvb,
                cold_start(get_policy(pol), opts),
                startup_s(get_policy(pol), opts),
            )
            served_prof = {**prof, "replay_scale": serving}
            logs = []
            sim = predict(
                etr,
                pol,
                cl,
                served_prof,
                kvb,
                slo,
                timeline=logs if a.timeline else None,
                options=opts,
            )
            sim_draws = [sim] + [
                predict(etr, pol, cl, served_prof, kvb, slo, options=opts, draw=k)
                for k in range(1, DRAWS)
            ]
            if a.timeline:
                Path(a.timeline, f"{pol}-sim.json").write_text(json.dumps(logs[0]) + "\n")
                Path(a.timeline, f"{pol}-calibration.json").write_text(json.dumps(serving) + "\n")
        else:
            serving, sim_draws = None, [sim]
        elog = Path(a.timeline or tmp, f"{pol}-engine.json").resolve()
        eng, sent, switches, load_before = serve_and_replay(
            a, pol, models, prof_path, etr, slo, elog, opts, env
        )
        # the engine against itself: the same trace again on fresh servers
        again = [
            serve_and_replay(
                a,
                pol,
                models,
                prof_path,
                etr,
                slo,
                Path(a.timeline or tmp, f"{pol}-engine{i}.json"),
                opts,
                env,
            )[0].slo_attainment
            for i in range(1, a.repeats)
        ]
        cls = get_policy(pol)
        cold, startup = cold_start(cls, opts), startup_s(cls, opts)
        elog_doc = json.loads(elog.read_text())
        # how far the device moved between the calibration and the replay
        moved = drift(elog_doc, prof, kvb, serving, cold, startup) if serving else {}
        scale = replay_scale(
            elog_doc,
            prof,
            kvb,
            cold,
            startup,
            arrivals=etr.arrival,
            window=a.window or None,
        )
        logs = []
        cal = predict(
            etr,
            pol,
            cl,
            {**prof, "replay_scale": scale},
            kvb,
            slo,
            timeline=logs if a.timeline else None,
            options=opts,
        )
        # sim@rep is one sample of the replay's per-operation noise: other draws of it
        draws = [cal] + [
            predict(etr, pol, cl, {**prof, "replay_scale": scale}, kvb, slo, options=opts, draw=k)
            for k in range(1, DRAWS)
        ]
        # the cliff: sim@rep on a device 10 % faster and 10 % slower than the replay's
        near = [
            predict(
                etr, pol, cl, {**prof, "replay_scale": slower(scale, f)}, kvb, slo, options=opts
            ).slo_attainment
            for f in (1 / 1.1, 1.1)
        ]
        if a.timeline:
            Path(a.timeline, f"{pol}-scale.json").write_text(json.dumps(scale) + "\n")
            Path(a.timeline, f"{pol}-rep.json").write_text(json.dumps(logs[0]) + "\n")
            Path(a.timeline, f"{pol}-client.json").write_text(
                json.dumps([vars(r) for r in sent]) + "\n"
            )
        bad = [
            (r.rid, r.error, len(r.tokens or []), r.output_len)
            for r in sent
            if r.error or len(r.tokens or []) < r.output_len
        ]
        if bad:
            print(f"{pol}: {len(bad)} requests unfinished, e.g. {bad[:3]}")
        row = {
            "seed": a.seed,
            "policy": pol,
            "requests": len(etr),
            "engine_attainment": eng.slo_attainment,
            "sim_attainment": sim.slo_attainment,
            "engine_attainment_artifact": eng.slo_attainment_artifact,
            "engine_repeats_attainment": [eng.slo_attainment, *again],
            "sim_attainment_artifact": sim.slo_attainment_artifact,
            "engine_ttft_p50_s": eng.ttft_p50_s,
            "sim_ttft_p50_s": sim.ttft_p50_s,
            "engine_tbt_p99_s": eng.tbt_p99_s,
            "sim_tbt_p99_s": sim.tbt_p99_s,
            "engine_switches": switches,
            "sim_switches": sim.switches,
            "engine_finished": eng.finished,
            "sim_finished": sim.finished,
            "sim_draws_attainment": [d.slo_attainment for d in sim_draws],
            "bare_attainment": bare.slo_attainment,
            "bare_tbt_p99_s": bare.tbt_p99_s,
            "bare_switches": bare.switches,
            "serving_scale": serving,
            "calibration_drift": moved,
            "replay_scale": scale,
            "cal_attainment": cal.slo_attainment,
            "cal_attainment_artifact": cal.slo_attainment_artifact,
            "cal_ttft_p50_s": cal.ttft_p50_s,
            "cal_tbt_p99_s": cal.tbt_p99_s,
            "cal_switches": cal.switches,
            "cal_draws_attainment": [d.slo_attainment for d in draws],
            "cal_draws_switches": [d.switches for d in draws],
            "cal_attainment_faster": near[0],
            "cal_attainment_slower": near[1],
            "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        }
        rows.append(row)
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
