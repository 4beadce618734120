"""The simulator checked against the engine: the same trace, policy, cluster and profile.

`EngineCost` is the simulator's ground truth built from an engine profile (fitted prefill
and decode coefficients, measured switch times, the instance's link and budget), so
`predict` runs the simulator's backend and policies on this device's numbers. A
pre-loaded model becomes resident on the engine without a copy, so its device copy time is
0 here too.

The engine's instances share one device (CPU: threads on the same cores and interpreter;
CUDA: one GPU), unlike the simulator's GPUs, which compute independently. With a profile
that measured this (`profile.contention`), `SharedDeviceBackend` charges every prefill and
decode step at the profiled time for the number of instances computing at that moment
(processor sharing at step granularity: a running decode is re-planned at its next step
boundary whenever that number changes).

A profile measured before a replay cannot see what else the machine runs during it (other
processes, and the engine's own server and scheduler threads, which share the
interpreter with the instances). `replay_scale` reads that from the engine's event log of
the replay: each operation's measured seconds against the profile's prediction at the
number of instances computing around it, per kind; `predict` with a profile carrying
``replay_scale`` charges every operation of that kind that much more, at the replay's own
contention curve (the device as the replay found it: the policy, scheduler and accounting
stay the simulator's own). `drift` times one log against a scale read from another (the
serving calibration's): how far the device moved between the two.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable

import numpy as np
from scipy.optimize import nnls

from hpn.gpus import GPU
from hpn.pool.backend import Cluster
from hpn.pool.costs import CostModel
from hpn.pool.metrics import Recorder, summarize
from hpn.pool.models import LLM
from hpn.pool.policies import get_policy
from hpn.pool.policies.base import PolicyContext, Slo
from hpn.pool.requests import Request
from hpn.pool.result import PoolResult
from hpn.pool.simulated import SimulatedBackend
from hpn.pool.traces.base import Trace
from hpn.serve.backend import BLOCK_TOKENS, KV_FLOOR_BLOCKS
from hpn.serve.profile import predictor, switch_seconds


class EngineCost(CostModel):
    """Ground truth for the simulator from an engine profile.

    Parameters
    ----------
    profile
        A profile (`hpn.serve.profile.measure`): fits, switch_s, weights, device.
    kv_bytes_per_token
        KV bytes per token of each model in the engine's dtype.
    cold
        Scale-ups start the model afresh (a policy whose system starts an engine per
        scale-up, as the engine then does: `engine.cold_start`).
    startup
        Such a start-up lasts at least this long before the weights' copy (the policy's
        configured ``startup``, which the engine waits out: `engine.startup_s`).
    """

    def __init__(
        self,
        profile: dict,
        kv_bytes_per_token: dict[str, float],
        cold: bool = False,
        startup: float = 0.0,
    ):
        dev = profile["device"]
        link = dev.get("link_bps") or 1e12  # unthrottled (CUDA): KV moves ~free
        budget = float(dev["memory_bytes"])
        gpu = GPU(f"engine-{dev['kind']}", budget, 1e15, 0.0, link, 0.0)
        super().__init__(gpu, eta=1.0)
        self.budget = budget
        self.profile = profile
        self.cold = cold
        self.startup = startup
        self.kvb = dict(kv_bytes_per_token)
        self.active = int(profile["device"].get("concurrent", 1))  # instances computing
        self.shared = profile.get("contention")
        fitted = (profile.get("replay_scale") or {}).get("contention")
        if self.shared and fitted:  # the replay's own contention (`replay_scale`)
            self.shared = {**self.shared, **fitted}
        self.clock: Callable[[], float] | None = None  # the simulator's (windowed scales)
        self.jitter = 1.0  # this operation's draw from replay_scale's spread
        self.pre = _Scaled(self, "prefill")
        self.dec = _Scaled(self, "decode")
        for name in profile["fits"]:
            if name in self.kvb:
                self.add_engine(name)

    def factor(self, kind: str) -> float:
        """Time of a `kind` ("prefill"/"decode") operation with `active` instances
        computing, relative to the profile's grid (1 without contention data)."""
        c = self.shared
        scale = self.replay_scale(kind) * self.jitter
        if not c or kind not in c:
            return scale
        k = min(max(self.active, 1), len(c[kind]))
        return float(c[kind][k - 1]) * scale

    def replay_scale(self, kind: str) -> float:
        """The profile's ``replay_scale`` of `kind` now (its window at `clock()`, if it
        has windows), 1 without one."""
        rs = self.profile.get("replay_scale")
        if not rs:
            return 1.0
        w = rs.get("windows")
        if w and self.clock is not None:
            i = int(self.clock() // rs["window_s"])
            if 0 <= i < len(w[kind]):
                return float(w[kind][i])
        return float(rs.get(kind, 1.0))

    def add_engine(self, name: str) -> None:
        f = self.profile["fits"][name]
        self.pre[name] = tuple(f["prefill"])
        self.dec[name] = tuple(f["decode"])
        w = float(self.profile["weights"][name])
        # an LLM record for the catalog-shaped bookkeeping; bytes come from the profile
        self.models[name] = LLM(name, w / 2, 1, 1, 1)

    def memory_budget(self, tp: int) -> float:
        return self.budget * tp

    def weights(self, name: str | None) -> float:
        return float(self.profile["weights"][name]) if name is not None else 0.0

    def kv_floor(self, model) -> float:
        name = model if isinstance(model, str) else model.name
        return KV_FLOOR_BLOCKS * BLOCK_TOKENS * self.kvb[name]

    def kv_bytes(self, model: str, tokens: float) -> float:
        return tokens * self.kvb[model]

    def kv_transfer_time(self, model: str, tokens: float) -> float:
        """The engine copies whole blocks; with a measured `kv_copy` (profile) a copy
        costs its base plus its bytes at the measured rate, else bytes / link."""
        nbytes = -(-int(tokens) // BLOCK_TOKENS) * BLOCK_TOKENS * self.kvb[model]
        kc = self.profile.get("kv_copy")
        if kc:
            return float(kc["base_s"]) + nbytes * float(kc["s_per_byte"])
        return nbytes / self.gpu.host_link

    def decode_warmup(self, model: str) -> float:
        """The profile's decode warm-up after a scale-up, at the replay's decode scale; not
        scaled by contention (on the engine the first steps after a switch cost ~4.3 ms
        more with no other instance computing and ~4.9 ms with one: a fixed cost, not a
        share of the step)."""
        w = (self.profile.get("decode_warmup_s") or {}).get(model, 0.0)
        return float(w) * self.replay_scale("decode") if w else 0.0

    def switch_time(self, model: str) -> float:
        if not self.cold:
            return switch_seconds(self.profile, model)
        return switch_seconds(self.profile, model, True, self.startup, self.factor("load"))

    def prefetch_time(self, model: str) -> float:
        return float(self.profile["switch_s"][model])

    def device_copy_time(self, model: str) -> float:
        return 0.0


class _Scaled(dict):
    """Coefficients by model, scaled by the cost's contention factor when read (the
    latency formulas are linear in them)."""

    def __init__(self, cost: EngineCost, kind: str):
        super().__init__()
        self.cost, self.kind = cost, kind

    def __getitem__(self, model: str) -> tuple[float, float, float]:
        f = self.cost.factor(self.kind)
        a, b, c = super().__getitem__(model)
        return (a * f, b * f, c * f)


class SharedDeviceBackend(SimulatedBackend):
    """`SimulatedBackend` whose instances share one device: the cost's `active` count is
    the number of instances in a prefill, a decode or a cold scale-up (a model built
    afresh: CPU work), and each change re-plans the running decodes from their next step
    boundary. Weight copies of a warm scale-up and KV copies are paced by the link, not
    counted."""

    def __init__(self, cost: EngineCost, cluster: Cluster, sink):
        super().__init__(cost, cluster, sink)
        self.engine_cost = cost
        self.computing: set[int] = set()
        cost.active = 0
        self._spread = (cost.profile.get("replay_scale") or {}).get("spread") or {}
        self._rng = np.random.default_rng(0)
        self._jit: dict[int, float] = {}  # each running decode's draw

    def reseed(self, draw: int) -> None:
        """Seed the spread's draws (`predict`'s ``draw``; 0 at construction)."""
        self._rng = np.random.default_rng(draw)

    def _draw(self, kind: str) -> float:
        """One operation's speed relative to its window's scale: one of the replay's
        equal-count groups of single operations (`replay_scale`'s ``spread``), drawn
        uniformly, so the draws' mean is the replay's (1 without a spread)."""
        g = self._spread.get(kind)
        if not g:
            return 1.0
        return float(g[int(self._rng.integers(len(g)))])

    def _plan(self, op):
        self.engine_cost.jitter = self._jit.get(op.inst.iid, 1.0)
        try:
            return super()._plan(op)
        finally:
            self.engine_cost.jitter = 1.0

    def _computing(self, iid: int, on: bool) -> None:
        if on == (iid in self.computing):
            return
        (self.computing.add if on else self.computing.discard)(iid)
        self.engine_cost.active = len(self.computing)
        for inst in self.instances:
            if inst.iid != iid and self._slots[inst.iid].op is not None:
                SimulatedBackend.join(self, inst, [], 0)  # re-plan at its next boundary

    def load(self, inst, model, on_done) -> None:
        if not (self.engine_cost.cold and model not in (inst.resident, inst.prefetched)):
            super().load(inst, model, on_done)
            return
        cost = self.engine_cost
        self._computing(inst.iid, True)
        if cost.startup > 0:  # the build computes; the rest of the start-up waits
            p = cost.profile
            build = (float(p["cold_switch_s"][model]) - float(p["switch_s"][model])) * (
                cost.factor("load")
            )
            self.call_at(self.now() + max(0.0, build), self._computing, inst.iid, False)

        def done(d):
            self._computing(d.inst.iid, False)
            on_done(d)

        cost.jitter = self._draw("load")  # the cold scale-up's own speed (`switch_time`)
        try:
            super().load(inst, model, done)
        finally:
            cost.jitter = 1.0

    def prefill(self, inst, reqs, on_done) -> None:
        self._computing(inst.iid, True)

        def done(d):
            self._computing(d.inst.iid, False)
            on_done(d)

        self.engine_cost.jitter = self._draw("prefill")
        try:
            super().prefill(inst, reqs, done)
        finally:
            self.engine_cost.jitter = 1.0

    def decode(self, inst, batches, budget, on_done, stop_on_finish=False) -> None:
        self._computing(inst.iid, True)

        def done(d):
            self._computing(d.inst.iid, False)
            on_done(d)

        self._jit[inst.iid] = self._draw("decode")  # kept through the operation's re-plans
        super().decode(inst, batches, budget, done, stop_on_finish)


CALIBRATED = ("prefill", "decode", "load")
MIN_OPS = 5  # operations of a kind needed to read its scale from a replay
MIN_SHARE = 0.05  # share of a kind's predicted seconds at k computing needed to fit k
SPREAD_GROUPS = 20  # equal-count groups kept of the single operations' spread
FIT_ROUNDS = 20  # rounds of a decode curve's fit (its work shares move with it)


def op_seconds(op: dict, cost: EngineCost, reqs: dict[int, dict]) -> float | None:
    """An operation's duration by the profile (grid concurrency, no `replay_scale`) for
    what it did (requests, lengths and steps taken); None when it cannot be predicted (a
    decode that never finished). `op`: an `timeline.operations` record."""
    if op["ev"] == "load":
        return 0.0 if op.get("pre") else cost.switch_time(op["model"])
    if op["ev"] == "prefill":
        return cost.prefill_time(reqs[op["rids"][0]]["model"], op["lens"])
    if "gen1" not in op:
        return None
    # (rid, tokens before, steps taken, first step) of every request each batch decoded;
    # one that joined the running decode at a fraction f of its wall time starts at step
    # f x (the op's steps): steps of even length, solved for the op's step count
    first = [
        [(rid, a, b - a, 0.0) for rid, a, b in zip(rids, g0, g1, strict=True)]
        for rids, g0, g1 in zip(op["rids"], op["gen0"], op["gen1"], strict=True)
    ]
    # a fresh decode warms up before its first step (`CostModel.decode_warmup`): its
    # steps, and the joiners' fractions, start after that
    lead = next((b[0] for b in op["rids"] if b), None)
    warm = cost.decode_warmup(reqs[lead]["model"]) if op.get("fresh") and lead is not None else 0.0
    t0 = op["t"] + warm
    wall = max(op["end"] - t0, 1e-12)
    joined = [
        (i, rid, g, g1 - g, min(max((t - t0) / wall, 0.0), 0.99))
        for (i, rid, g, t), g1 in zip(op.get("joins", []), op.get("joins_gen1", []), strict=False)
    ]
    span = max((s for b in first for *_, s, _ in b), default=0)
    for _ in range(20):
        new = max([span] + [math.ceil(f * span) + s for *_, s, f in joined])
        if new == span:
            break
        span = new
    batches = [list(b) for b in first]
    for i, rid, g, s, f in joined:
        while len(batches) <= i:
            batches.append([])
        batches[i].append((rid, g, s, float(min(math.ceil(f * span), span - s))))
    total = warm
    for seqs in batches:
        if not seqs:
            continue
        m = reqs[seqs[0][0]]["model"]
        for k in range(span):
            live = [q for q in seqs if q[3] <= k < q[3] + q[2]]
            if live:
                ctx = sum(reqs[rid]["input_len"] + g + k - k0 for rid, g, _, k0 in live)
                total += cost.decode_step(m, len(live), ctx)
    return total


def replay_scale(
    log: dict,
    profile: dict,
    kv_bytes_per_token: dict[str, float],
    cold: bool = False,
    startup: float = 0.0,
    arrivals=None,
    window: float | None = None,
) -> dict:
    """Measured / predicted seconds of each kind of operation in an engine replay's event
    log (`Traced.dump`), the prediction at the instances computing around each operation
    (the profile's contention factors: at its start for a prefill or a load; over a
    decode, whose steps the simulator re-plans as the count changes, weighted by the
    work it did at each count, `work_shares`).

    Kinds: prefill, decode, and (a policy that starts engines, no configured start-up)
    cold loads; warm loads are paced by the link, not the processor, and are left out.
    A kind with fewer than `MIN_OPS` predicted operations keeps scale 1. With `window`
    seconds, also the scale of each window of the trace's clock (the engine's clock less
    the lag of its first arrival behind the trace's, `arrivals`), under ``"windows"``; a
    window with fewer than `MIN_OPS` operations of a kind takes the whole replay's.

    The contention curve is the replay's own (``"contention"``, per kind, in the profile's
    units: the time at k instances computing is curve[k-1] x the kind's scale): each
    operation's seconds against its grid prediction times its share of work at each k,
    fitted by non-negative least squares; a k with under `MIN_SHARE` of the predicted
    seconds or `MIN_OPS` operations keeps the profile's factor (a profile measured under
    other processes' load can have a curve the replay never ran: 10x between 1 and 3
    instances)."""
    rows, prof_curves, offset = _timed(log, profile, kv_bytes_per_token, cold, startup, arrivals)
    # the replay's own contention: seconds of each kind at k instances computing against
    # the profile's grid prediction (non-negative least squares over the operations); a k
    # too thin to fit keeps the profile's factor times the kind's fitted speed. A decode's
    # shares are of its work, as the simulator charges it (`work_shares`), which depend on
    # the curve: fitted again until they hold still.
    curve: dict[str, list[float]] = {}
    for kind, rs in rows.items():
        prof_f = prof_curves[kind]
        m = np.array([o["end"] - o["t"] for o, _, _ in rs])
        P = np.array([p for _, p, _ in rs])[:, None]
        W = np.array([w for _, _, w in rs])
        f = prof_f
        for _ in range(FIT_ROUNDS if kind == "decode" else 1):
            new = _fit_curve(P * (work_shares(W, f) if kind == "decode" else W), m, prof_f)
            done = bool(np.allclose(new, f, rtol=1e-6, atol=0.0))
            f = new
            if done:
                break
        curve[kind] = f.tolist()
    sums: dict[tuple[str, int], list[float]] = {}  # (kind, window or -1): [meas, pred, n]
    per_op: dict[str, list[tuple[float, float, int]]] = {}  # (measured, predicted, window)
    for kind, rs in rows.items():
        for (o, _, _), q in zip(rs, _at_curve(kind, rs, np.array(curve[kind])), strict=True):
            keys = [(kind, -1)]
            win = max(0, int((o["t"] - offset) // window)) if window else -1
            if window:
                keys.append((kind, win))
            q = float(q)
            for key in keys:
                acc = sums.setdefault(key, [0.0, 0.0, 0])
                acc[0] += o["end"] - o["t"]
                acc[1] += q
                acc[2] += 1
            per_op.setdefault(kind, []).append((o["end"] - o["t"], q, win))

    def ratio(key, default: float) -> float:
        m, p, n = sums.get(key, (0.0, 0.0, 0))
        return m / p if n >= MIN_OPS and p > 0 else default

    out: dict = {kind: ratio((kind, -1), 1.0) for kind in CALIBRATED}
    out["contention"] = {kind: [round(x, 4) for x in c] for kind, c in curve.items()}
    out["spread"] = {
        kind: spread([m / (q * ratio((kind, w), out[kind])) for m, q, w in r], [q for _, q, _ in r])
        for kind, r in per_op.items()
        if len(r) >= MIN_OPS
    }
    if window:
        last = max((w for _, w in sums), default=-1)
        out["window_s"] = float(window)
        out["windows"] = {
            kind: [ratio((kind, w), out[kind]) for w in range(last + 1)] for kind in CALIBRATED
        }
    return out


def _timed(log, profile, kv_bytes_per_token, cold, startup, arrivals=None):
    """The log's finished operations by kind, each as (op, its seconds by the profile at the
    grid's concurrency, its time shares at k = 1..n computing); each kind's profile curve;
    the lag of the log's clock behind the trace's (`arrivals`). Pre-loads, warm loads (paced
    by the link) and, with a configured start-up, cold ones are left out (`replay_scale`)."""
    from hpn.serve.timeline import operations

    base = dict(profile)
    base.pop("replay_scale", None)
    cost = EngineCost(base, kv_bytes_per_token, cold, startup)
    shared, cost.shared = cost.shared, None  # predictions at the grid's concurrency
    reqs = {r["rid"]: r for r in log["requests"]}
    ops = [o for o in operations(log) if "end" in o]
    n_max = len(shared["k"]) if shared and "k" in shared else int(cost.active)
    shares = Concurrency(ops, cold, n_max).shares
    offset = 0.0
    if arrivals is not None and len(arrivals) and log["requests"]:
        eng = sorted(r["arrival"] for r in log["requests"])
        offset = min(e - a for e, a in zip(eng, sorted(arrivals), strict=False))
    rows: dict[str, list[tuple[dict, float, np.ndarray]]] = {}  # kind: (op, pred, shares)
    for o in ops:
        kind = o["ev"]
        if kind == "load" and not (cold and startup <= 0 and not o.get("pre")):
            continue
        p = op_seconds(o, cost, reqs)
        if p:
            rows.setdefault(kind, []).append((o, p, shares(kind, o["t"], o["end"])))
    curves = {
        kind: np.array(shared[kind] if shared and kind in shared else [1.0] * max(n_max, 1))
        for kind in rows
    }
    return rows, curves, offset


def drift(
    log: dict,
    profile: dict,
    kv_bytes_per_token: dict[str, float],
    scale: dict,
    cold: bool = False,
    startup: float = 0.0,
) -> dict[str, float]:
    """How much slower each kind of operation in an engine log ran than a `replay_scale`
    read elsewhere says (its speed and contention curve, no windows): measured over
    predicted seconds, 1 where `scale` is the device this log met. With the serving
    calibration's scale and the replay's log, it is how far the device moved between the
    two (`bench/serve_vs_sim.py`'s "drift" column): a prediction made before a replay can
    be no closer than that. Kinds with fewer than `MIN_OPS` operations are left out."""
    rows, prof_curves, _ = _timed(log, profile, kv_bytes_per_token, cold, startup)
    out = {}
    for kind, rs in rows.items():
        if len(rs) < MIN_OPS or kind not in scale:
            continue
        f = np.array((scale.get("contention") or {}).get(kind, prof_curves[kind]), dtype=float)
        m = sum(o["end"] - o["t"] for o, _, _ in rs)
        q = float(_at_curve(kind, rs, f).sum()) * float(scale[kind])
        out[kind] = m / q if q > 0 else float("nan")
    return out


def _at_curve(kind: str, rows, curve: np.ndarray) -> np.ndarray:
    """Each of `_timed`'s rows' seconds on contention `curve`: its grid seconds times its
    shares at each k (of its work, for a decode, as the simulator charges it) @ curve."""
    W = np.array([w for _, _, w in rows])
    if kind == "decode":
        W = work_shares(W, curve)
    return np.array([p for _, p, _ in rows]) * (W @ curve)


class Concurrency:
    """Instances computing over an event log's operations (`timeline.operations`): a
    prefill, a decode, and a cold load (`cold`: a policy that starts engines); counts
    above `n` read as `n`, none as 1."""

    def __init__(self, ops: list[dict], cold: bool, n: int):
        comp = [o for o in ops if o["ev"] != "load" or (cold and not o.get("pre"))]
        edges = sorted([(o["t"], 1) for o in comp] + [(o["end"], -1) for o in comp])
        self.times = [t for t, _ in edges]
        self.counts = np.cumsum([d for _, d in edges]).tolist()
        self.n = max(n, 1)

    def _k(self, j: int) -> int:
        return min(max(self.counts[j] if j >= 0 else 1, 1), self.n) - 1

    def shares(self, kind: str, a: float, b: float) -> np.ndarray:
        """The fraction of [a, b] with k = 1..n computing (a prefill or a load: all at its
        start, as `SharedDeviceBackend` charges it)."""
        w = np.zeros(self.n)
        i = bisect.bisect_right(self.times, a) - 1
        if kind != "decode" or b <= a:
            w[self._k(i)] = 1.0
            return w
        t = a
        while t < b:
            nxt = min(self.times[i + 1] if i + 1 < len(self.times) else b, b)
            w[self._k(i)] += (nxt - t) / (b - a)
            t, i = nxt, i + 1
        return w


def work_shares(time_shares: np.ndarray, curve: np.ndarray) -> np.ndarray:
    """The shares of an operation's work done at k = 1.. instances computing, from the
    shares of its time (`curve`: its time per unit of work at each k; rows of a 2-D
    `time_shares` are operations). The simulator
    advances a decode at 1 / curve[k-1] while k compute (`SharedDeviceBackend`), so its
    time is its work x ``work_shares @ curve``, the time-weighted harmonic mean of the
    curve; the time-weighted arithmetic mean (before) charged a decode that ran alone
    half its time and beside two others the rest 1.5x what the simulator then takes
    (a 3.6x curve on this VM's 2 cores), and fitted the curve to that."""
    x = np.asarray(time_shares, dtype=float) / np.maximum(np.asarray(curve, dtype=float), 1e-12)
    return x / np.maximum(x.sum(axis=-1, keepdims=True), 1e-300)  # per operation (row)


def _fit_curve(A: np.ndarray, m: np.ndarray, prof_f: np.ndarray) -> np.ndarray:
    """The contention curve (profile units) that best gives measured seconds `m` from
    predicted seconds at each k (`A`, operations x k), NNLS on the k seen enough; the rest
    keep the profile's factor at the fitted speed (`replay_scale`)."""
    seen = A.sum(axis=0) / max(A.sum(), 1e-12)
    fit = (seen >= MIN_SHARE) & (np.count_nonzero(A, axis=0) >= MIN_OPS)
    if len(m) < MIN_OPS or not fit.any():
        return prof_f.astype(float)
    c = np.zeros(len(prof_f))
    c[fit] = nnls(A[:, fit], m)[0]
    if not (c[fit] > 0).all():  # degenerate: the profile's shape at one speed
        c[fit] = prof_f[fit] * m.sum() / max(float((A[:, fit] @ prof_f[fit]).sum()), 1e-12)
    # in the profile's units: the shape at the speed the whole replay ran at
    speed = float((A[:, fit] @ c[fit]).sum() / max((A[:, fit] @ prof_f[fit]).sum(), 1e-12))
    c[~fit] = prof_f[~fit] * speed
    return c / speed


def spread(
    ratios: list[float], weights: list[float] | None = None, groups: int = SPREAD_GROUPS
) -> list[float]:
    """Single operations' speeds (each measured / predicted at its window's scale) as
    `groups` groups of equal predicted seconds (`weights`; default: equal counts), each
    its seconds' ratio, sorted and scaled to a plain mean of 1. One group drawn uniformly
    per operation (`SharedDeviceBackend._draw`) is then a draw per second of work: a
    stall on a tiny operation (a large ratio of a few milliseconds, a thread descheduled
    under load) weighs its milliseconds, not a whole operation, so it is not charged onto
    a long decode. Interpolated quantiles (before) also weighed the segment up to the
    slowest operation at 1 / (quantiles - 1) of the draws: a replay under load drew its
    prefills at a mean of 1.44."""
    r = np.asarray(ratios, dtype=float)
    w = np.ones(len(r)) if weights is None else np.asarray(weights, dtype=float)
    order = np.argsort(r)
    r, w = r[order], w[order]
    n = min(groups, len(r))
    mid = (np.cumsum(w) - w / 2) / max(float(w.sum()), 1e-300)  # each one's weight midpoint
    grp = np.minimum((mid * n).astype(int), n - 1)
    secs = np.bincount(grp, weights=w, minlength=n)
    g = np.bincount(grp, weights=r * w, minlength=n)[secs > 0] / secs[secs > 0]
    return (g / max(float(g.mean()), 1e-12)).round(4).tolist()


def slower(scale: dict, f: float) -> dict:
    """A `replay_scale` on a device `f` times slower still (every kind and window)."""
    out = {**scale, **{k: scale[k] * f for k in CALIBRATED}}
    if "windows" in scale:
        out["windows"] = {k: [v * f for v in w] for k, w in scale["windows"].items()}
    return out


def requests_of(trace: Trace, slo: Slo) -> list[Request]:
    return [
        Request(i, trace.names[m], float(a), int(li), int(lo), slo.ttft, slo.tbt)
        for i, (a, m, li, lo) in enumerate(
            zip(trace.arrival, trace.model, trace.input_len, trace.output_len, strict=True)
        )
    ]


def predict(
    trace: Trace,
    policy: str,
    cluster: Cluster,
    profile: dict,
    kv_bytes_per_token: dict[str, float],
    slo: Slo = Slo(),
    rates: dict[str, float] | None = None,
    drain: float = 300.0,
    timeline: list | None = None,
    options: dict | None = None,
    draw: int = 0,
) -> PoolResult:
    """Simulate `trace` (model names = served models) on the profiled device; with a
    `timeline` list, append the simulated backend's event log (`hpn.serve.timeline`);
    `draw` seeds the operations' draws from a ``replay_scale`` spread (one sample of the
    replay's noise: a policy on a cliff moves with it)."""
    wall = time.perf_counter()
    from hpn.serve.engine import cold_start, startup_s

    cls = get_policy(policy)
    options = options or {}
    cold = cold_start(cls, options)
    startup = startup_s(cls, options)
    cost = EngineCost(profile, kv_bytes_per_token, cold, startup)
    sink = Recorder()
    from hpn.serve.timeline import Traced, traced

    drawn = (profile.get("replay_scale") or {}).get("spread")
    shared = cost.shared or drawn
    base: type[SimulatedBackend] = SharedDeviceBackend if shared else SimulatedBackend
    backend = (base if timeline is None else traced(base))(cost, cluster, sink)
    if isinstance(backend, SharedDeviceBackend):
        backend.reseed(draw)
    cost.clock = backend.now
    rates = rates or {m: 1.0 for m in trace.names}
    pred = predictor(profile, kv_bytes_per_token, cold, startup)
    pol = cls(PolicyContext(backend, pred, cluster, rates, slo), **options)
    reqs = requests_of(trace, slo)
    end = trace.duration + drain
    backend.run(reqs, pol.on_arrival, until=end)
    if isinstance(backend, Traced):
        assert timeline is not None
        for r in reqs:
            backend.requests.setdefault(r.rid, r)
        timeline.append(backend.dump())
    n = len(backend.instances)
    res = summarize(
        reqs,
        sink.gaps,
        policy=cls.name,
        gpu=cost.gpu.name,
        gpus=n,
        switches=sink.switches,
        busy_gpu_s=sink.busy_gpu_s,
        span=min(backend.now(), end) or max(trace.duration, 1e-9),
        wall=time.perf_counter() - wall,
    )
    res.models = len(set(trace.names))
    res.models_per_gpu = res.models / n
    return res


def engine_trace(trace: Trace, served: list[str], max_input: int, max_output: int) -> Trace:
    """`trace` with its models mapped in turn onto the served ones and lengths clipped
    (what the replay sends), for the simulator's prediction."""
    import numpy as np

    from hpn.serve.replay import assign_models

    names = assign_models(trace.names, served, {})
    idx = {m: i for i, m in enumerate(served)}
    model = np.array([idx[names[trace.names[k]]] for k in trace.model], dtype=np.int32)
    return Trace.build(
        trace.arrival,
        model,
        np.clip(trace.input_len, 1, max_input),
        np.clip(trace.output_len, 1, max_output),
        served,
        ["engine"] * len(served),
    )
