"""Line up the engine's and the simulator's event logs of one replay (serve_vs_sim --timeline).

Usage: python bench/timeline_diff.py DIR POLICY [--requests N]

Prints, for both sides (and the simulator at the replay's measured speed, POLICY-rep.json,
when the run wrote one): scale-ups per instance and their durations, each operation's
measured duration against the profile's prediction (the simulator's ground truth), the
engine's durations against the profile at the concurrency it ran at (`replay_scale`), and
per-request arrival / first token / finish, the engine's on the client's clock; each
request's queue / prefill / decode time and the scale-ups by model against sim@rep (the
rules' effects, apart from the device's speed); and each side's token gaps over --gap s
by kind (the first decode token, across two decode turns, inside one) with what the
instance did between the turns; how each side's decodes share the device (the curve from
decodes at one count, the others against its processor-sharing and time-weighted
predictions); for serverless, each side's scale-ups and the hops of
its held engines' balancer (1 s or 3 s, by whether a request's service ends within 1 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from hpn.serve.compare import EngineCost, op_seconds, replay_scale
from hpn.serve.timeline import operations


def summary(name: str, log: dict, cost: EngineCost) -> None:
    reqs = {r["rid"]: r for r in log["requests"]}
    by_kind: dict[str, list[tuple[float, float]]] = {}
    loads: dict[int, int] = {}
    for op in operations(log):
        if "end" not in op:
            continue
        p = op_seconds(op, cost, reqs)
        if p is None:
            continue
        by_kind.setdefault(op["ev"], []).append((op["end"] - op["t"], p))
        if op["ev"] == "load":
            loads[op["iid"]] = loads.get(op["iid"], 0) + 1
    print(f"== {name}: scale-ups per instance {dict(sorted(loads.items()))}")
    for k, v in sorted(by_kind.items()):
        meas = sum(x for x, _ in v)
        pred = sum(y for _, y in v)
        ratios = [x / y for x, y in v if y > 0]
        med = statistics.median(ratios) if ratios else float("nan")
        print(
            f"   {k:<8} n={len(v):4d} measured {meas:8.2f} s  profile {pred:8.2f} s  "
            f"ratio {meas / pred if pred else float('nan'):.2f} (median per op {med:.2f})"
        )


def _stages(log: dict) -> dict[int, tuple[float, float, float]]:
    """Each finished request's (queue: arrival to its prefill's start, prefill: to the
    first token, decode: first to last token) seconds."""
    start: dict[int, float] = {}
    for e in log["events"]:
        if e["ev"] == "prefill":
            for rid in e["rids"]:
                start.setdefault(rid, e["t"])
    out = {}
    for r in log["requests"]:
        if r["first_t"] >= 0 and r["done_t"] >= 0 and r["rid"] in start:
            s = start[r["rid"]]
            out[r["rid"]] = (s - r["arrival"], r["first_t"] - s, r["done_t"] - r["first_t"])
    return out


def stages(eng: dict, other: dict, name: str) -> None:
    """Where each request's time went on both sides, and the scale-ups by model: the rules'
    effects (queueing, scale-up counts) against the device's (prefill, decode)."""
    e, o = _stages(eng), _stages(other)
    both = sorted(set(e) & set(o))
    if not both:
        return
    for i, part in enumerate(("queue", "prefill", "decode")):
        de = [e[r][i] for r in both]
        do = [o[r][i] for r in both]
        print(
            f"   {part:<8} mean engine {statistics.mean(de):6.2f} s {name} "
            f"{statistics.mean(do):6.2f} s; p90 {sorted(de)[len(de) * 9 // 10]:6.2f} / "
            f"{sorted(do)[len(do) * 9 // 10]:6.2f} s"
        )
    models = {r["rid"]: r["model"] for r in eng["requests"]}

    def ups(log: dict) -> dict[str, int]:
        n: dict[str, int] = {}
        for ev in log["events"]:
            if ev["ev"] == "load" and not ev.get("pre"):
                n[ev["model"]] = n.get(ev["model"], 0) + 1
        return n

    ue, uo = ups(eng), ups(other)
    print(
        f"   scale-ups by model engine/{name}: "
        + ", ".join(f"{m[:3]} {ue.get(m, 0)}/{uo.get(m, 0)}" for m in sorted(set(ue) | set(uo)))
    )
    worse = sum(e[r][0] > o[r][0] + 1.0 for r in both)
    better = sum(e[r][0] < o[r][0] - 1.0 for r in both)
    print(
        f"   queue: engine > {name} + 1 s for {worse} of {len(both)} requests, "
        f"< - 1 s for {better}; by model (mean engine - {name} s): "
        + ", ".join(
            f"{m[:3]} {statistics.mean(e[r][0] - o[r][0] for r in both if models[r] == m):+.1f}"
            for m in sorted(set(models.values()))
            if any(models[r] == m for r in both)
        )
    )


def held_engine(name: str, log: dict, interval: float = 1.0) -> None:
    """serverless: each instance's scale-ups (start phase on the autoscaler's tick, build
    and copy) and the requests a held engine serves one after another: its balancer
    admits the next one `interval` after the last, or, finding the engine still busy,
    2 x `interval` later, so each request's service (its prefill's start to its decode's
    end) against `interval` sets the hop (1 s or 3 s) and the scale-ups that follow."""
    ops = [o for o in operations(log) if "end" in o]
    phase, loads, hops, serv = [], [], [], []
    last: dict[int, float | None] = {}
    for o in ops:
        if o["ev"] == "load" and not o.get("pre"):
            phase.append(o["t"] % interval)
            loads.append(o["end"] - o["t"])
            last[o["iid"]] = None
        elif o["ev"] == "prefill":
            prev = last.get(o["iid"])
            if prev is not None:
                hops.append(o["t"] - prev)
            last[o["iid"]] = o["t"]
        elif o["ev"] == "decode" and last.get(o["iid"]) is not None:
            serv.append(o["end"] - last[o["iid"]])
    if not loads or not serv:
        return
    short = sum(h < 1.5 * interval for h in hops)
    long_ = sum(1.5 * interval <= h < 3.5 * interval for h in hops)
    print(
        f"   {name:<8} scale-ups {len(loads)}: tick phase mean {statistics.mean(phase) * 1e3:.0f} "
        f"ms, load mean {statistics.mean(loads):.3f} s; held-engine hops {len(hops)}: "
        f"~{interval:g} s {short}, ~{3 * interval:g} s {long_}, longer {len(hops) - short - long_}"
        f" (mean {statistics.mean(hops):.3f} s); service mean {statistics.mean(serv):.3f} s, "
        f"median {statistics.median(serv):.3f} s, over {interval:g} s "
        f"{sum(x > interval for x in serv) / len(serv):.0%}"
    )


def token_gaps(name: str, log: dict, toks: dict[int, list[float]], thr: float) -> None:
    """Token gaps over `thr` s of one side: the TBT p99, how many, and of what kind (first:
    the prefill's token to the first decode token; turn: across two decode operations of
    the request; in-op: inside one); for turn gaps the mean time between the two
    operations, the new operation's start to its first token, and what the instance did
    between them (other models' turns, loads, KV moves in)."""
    decs: dict[int, list[tuple[int, int, dict]]] = {}
    by_iid: dict[int, list[dict]] = {}
    for o in operations(log):
        if o["ev"] != "decode" or "end" not in o:
            continue
        by_iid.setdefault(o["iid"], []).append(o)
        for b, g0, g1 in zip(o["rids"], o["gen0"], o.get("gen1", o["gen0"]), strict=True):
            for rid, a, z in zip(b, g0, g1, strict=True):
                decs.setdefault(rid, []).append((a, z, o))
        for (_i, rid, g, _t), g1 in zip(o["joins"], o.get("joins_gen1", []), strict=False):
            decs.setdefault(rid, []).append((g, g1, o))
    allg, kinds, between, to_tok, other = [], {"first": 0, "turn": 0, "in-op": 0}, [], [], []
    for rid, ts in toks.items():
        ops = decs.get(rid, [])

        def op_of(j: int, ops=ops) -> dict | None:
            return next((o for a, z, o in ops if a <= j < z), None)

        for k in range(1, len(ts)):
            g = ts[k] - ts[k - 1]
            allg.append(g)
            if g <= thr:
                continue
            oa, ob = op_of(k - 1), op_of(k)
            if k == 1 or oa is None or ob is None:
                kinds["first"] += 1
            elif oa is ob:
                kinds["in-op"] += 1
            else:
                kinds["turn"] += 1
                between.append(ob["t"] - oa["end"])
                to_tok.append(ts[k] - ob["t"])
                other.append(
                    sum(
                        min(o["end"], ob["t"]) - max(o["t"], oa["end"])
                        for o in by_iid.get(ob["iid"], [])
                        if o["t"] < ob["t"] and o["end"] > oa["end"]
                    )
                )
    if not allg:
        return
    allg.sort()
    p99 = allg[int(0.99 * (len(allg) - 1))]
    n = sum(kinds.values())
    line = f"   {name:<8} TBT p99 {p99:.3f} s; {n} of {len(allg)} gaps > {thr} s: " + ", ".join(
        f"{k} {v}" for k, v in kinds.items()
    )
    if between:
        line += (
            f"; turn gaps: ops apart {statistics.mean(between):.3f} s (other turns "
            f"{statistics.mean(other):.3f} s), op start -> token "
            f"{statistics.mean(to_tok) * 1e3:.1f} ms"
        )
    print(line)


def sharing(name: str, log: dict, cost: EngineCost, cold: bool) -> None:
    """How a side's decodes share the device: the time per profile second at k computing
    from the decodes that ran at one count all along, then the decodes during which the
    count changed, measured against that curve's processor-sharing prediction (their
    work at each count, `compare.work_shares`: how the simulator charges them) and the
    time-weighted one (how `replay_scale` weighed them before)."""
    import numpy as np

    from hpn.serve.compare import Concurrency, work_shares

    reqs = {r["rid"]: r for r in log["requests"]}
    ops = [o for o in operations(log) if "end" in o]
    n = int(cost.active) or 1  # the profile's instances
    shares = Concurrency(ops, cold, n).shares
    rows = []
    for o in ops:
        p = op_seconds(o, cost, reqs) if o["ev"] == "decode" else None
        if p:
            rows.append((o["end"] - o["t"], p, shares("decode", o["t"], o["end"])))
    curve = np.full(n, np.nan)
    for j in range(n):
        one = [(m, p) for m, p, w in rows if w[j] > 0.999]
        if one:
            curve[j] = sum(m for m, _ in one) / sum(p for _, p in one)
    mixed = [(m, p, w) for m, p, w in rows if w.max() <= 0.999]
    if np.isnan(curve).any() or not mixed:
        print(f"   {name}: too few decodes at one count to fit the curve")
        return
    meas = sum(m for m, _, _ in mixed)
    ps = sum(p * float(work_shares(w, curve) @ curve) for _, p, w in mixed)
    tw = sum(p * float(w @ curve) for _, p, w in mixed)
    print(
        f"   {name}: curve {' / '.join(f'{c:.2f}' for c in curve)} at 1..{n} computing; "
        f"{len(mixed)} decodes that changed count: measured / processor-sharing "
        f"{meas / ps:.3f}, / time-weighted {meas / tw:.3f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("policy")
    ap.add_argument("--requests", type=int, default=0, help="print the first N requests")
    ap.add_argument("--gap", type=float, default=0.2, help="token gaps over this, s")
    a = ap.parse_args()
    d = Path(a.dir)
    eng = json.loads((d / f"{a.policy}-engine.json").read_text())
    sim = json.loads((d / f"{a.policy}-sim.json").read_text())
    rp = d / f"{a.policy}-rep.json"
    rep = json.loads(rp.read_text()) if rp.exists() else None
    client = json.loads((d / f"{a.policy}-client.json").read_text())
    prof = json.loads((d / f"{a.policy}-profile.json").read_text())
    from hpn.pool.policies import get_policy
    from hpn.serve.engine import cold_start

    cold = cold_start(get_policy(a.policy), {})
    kvb = {m: 0.0 for m in prof["fits"]}
    cost = EngineCost(prof, kvb, cold)
    summary("simulator", sim, cost)
    summary("engine", eng, cost)
    scale = replay_scale(eng, prof, kvb, cold)
    print(
        "engine measured / profile at its own concurrency (replay_scale): "
        + ", ".join(f"{k} {v:.2f}" for k, v in scale.items() if isinstance(v, float))
    )
    print("decodes sharing the device (one count: the curve; the rest against it):")
    for name, lg in (("engine", eng), ("sim@rep", rep)):
        if lg is not None:
            sharing(name, lg, cost, cold)
    if rep is not None:
        summary("simulator at the replay's speed (sim@rep)", rep, cost)
        stages(eng, rep, "sim@rep")
    else:
        stages(eng, sim, "sim")
    # the engine's requests on the client's clock: per model, in arrival order
    ereqs: dict[str, list[dict]] = {}
    for r in sorted(eng["requests"], key=lambda q: q["arrival"]):
        ereqs.setdefault(r["model"], []).append(r)
    creqs: dict[str, list[dict]] = {}
    for r in sorted(client, key=lambda q: q["arrival"]):
        creqs.setdefault(r["model"], []).append(r)
    offs = [
        e["arrival"] - c["sent"]
        for m in creqs
        for e, c in zip(ereqs.get(m, []), creqs[m], strict=False)
    ]
    off = min(offs)
    lag = [o - off for o in offs]
    print(
        f"engine clock - client clock {off:.2f} s; arrival lag (HTTP to the scheduler) "
        f"p50 {statistics.median(lag) * 1e3:.0f} ms max {max(lag) * 1e3:.0f} ms"
    )
    if a.policy == "serverless":
        print("scale-ups and held engines (the balancer's 1 s / 3 s hops):")
        for nm, lg in (("engine", eng), ("sim", sim), ("sim@rep", rep)):
            if lg is not None:
                held_engine(nm, lg)
    print("token gaps (engine: its own clock, then the client's; sims: their logs' tokens):")
    for nm, lg in (("engine", eng), ("sim", sim), ("sim@rep", rep)):
        if lg is not None and any(r.get("tokens") for r in lg["requests"]):
            token_gaps(nm, lg, {r["rid"]: r["tokens"] for r in lg["requests"]}, a.gap)
    c2e = {
        c["rid"]: e["rid"] for m in creqs for e, c in zip(ereqs.get(m, []), creqs[m], strict=False)
    }
    token_gaps(
        "client",
        eng,
        {c2e[c["rid"]]: [t + off for t in c["tokens"] or []] for c in client if c["rid"] in c2e},
        a.gap,
    )
    srq = {r["rid"]: r for r in sim["requests"]}
    rows = []
    for m, cs in creqs.items():
        for e, c in zip(ereqs.get(m, []), cs, strict=False):
            s = srq[c["rid"]]
            toks = c["tokens"] or []
            rows.append(
                (
                    c["arrival"],
                    c["rid"],
                    m,
                    c["input_len"],
                    c["output_len"],
                    (toks[0] - c["arrival"]) if toks else float("nan"),
                    s["first_t"] - s["arrival"] if s["first_t"] >= 0 else float("nan"),
                    (toks[-1] - toks[0]) if toks else float("nan"),
                    s["done_t"] - s["first_t"] if s["done_t"] >= 0 else float("nan"),
                    e["arrival"] - off - c["arrival"],
                )
            )
    rows.sort()
    ttft_e = [r[5] for r in rows if r[5] == r[5]]
    ttft_s = [r[6] for r in rows if r[6] == r[6]]
    dec_e = [r[7] for r in rows if r[7] == r[7]]
    dec_s = [r[8] for r in rows if r[8] == r[8]]
    print(
        f"TTFT mean engine {statistics.mean(ttft_e):.2f} s sim {statistics.mean(ttft_s):.2f} s; "
        f"first->last token mean engine {statistics.mean(dec_e):.2f} s "
        f"sim {statistics.mean(dec_s):.2f} s"
    )
    if a.requests:
        print(" arrival  rid model     in  out  ttft_e ttft_s  dec_e  dec_s  lag")
        for r in rows[: a.requests]:
            print(
                f"{r[0]:8.2f} {r[1]:4d} {r[2][-8:]:>8} {r[3]:4d} {r[4]:4d} "
                f"{r[5]:7.2f} {r[6]:6.2f} {r[7]:6.2f} {r[8]:6.2f} {r[9]:5.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
