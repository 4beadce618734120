"""Reliability over months of operation: Monte Carlo over trials, vectorized with numpy.

Exposure is what the job's placement touches: its GPUs' NIC-ToR links and the ToRs they land
on. Per trial, link failures, ToR failures and flaps arrive as Poisson processes (rates per
component per month, P §2.3), at uniform times, each with a repair time (lognormal around a
median; the paper gives no repair times, so the medians are assumptions, and flaps last a
fixed ``flap_down``). The semantics of :mod:`hpn.failures.semantics` then apply per event:

- a NIC is cut off while all its ports are down: single-ToR, by any failure of its link or
  ToR; dual-ToR, only by overlapping failures of both sides; stacked, also by a ToR failure
  that takes its pair down (a share ``stacked_pair`` of ToR failures, class (a) of P §4.1);
- while some NIC is cut off the job halts; a cut-off longer than the timeout crashes it
  (halted for the timeout, then restart time and the work since the last checkpoint, drawn
  uniformly over the checkpoint interval);
- while a NIC has only one port the job is degraded: it loses ``degraded_loss`` of its
  throughput (default: the share of a host's NIC ports lost, 1 / (2 x NICs per host); take
  the loss ``hpn fail`` measures for a given job instead);
- with dual-ToR a link or ToR failure (and a flap) first *blackholes* the NIC's inbound flows
  on the failed side's plane for ``hold`` seconds (:class:`Holds`, from the failure layer,
  :func:`hpn.failures.failover.hold_times`, on the job's own first NIC): dual-plane, the flows
  senders hashed onto that plane are cut off until they re-select (HPN: probe + path search,
  0.3 s) or, with plain ECMP, until the repair (their queue pairs retransmit on the same
  path); single-plane, until BGP withdraws the NIC's /32 (0.14 s). A synchronous job halts
  meanwhile (crashing past the timeout), and is degraded for the rest of the outage;
- flaps are too short and too many to draw one by one: their count is Poisson and each halts
  (single-ToR) or degrades (dual-ToR, after its blackhole) the job for ``flap_down``; overlaps
  among flaps and with failures are ignored (second order in the rates).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TypedDict

import numpy as np

from hpn.errors import InputError
from hpn.failures.checkpoint import Recovery
from hpn.topology.fabric import Fabric, LinkTier

MONTH_S = 365.25 / 12 * 86400.0


@dataclass(frozen=True)
class Rates:
    """Failure rates and repair times (SI: per component per month, seconds)."""

    link_per_month: float = 0.00057  # NIC-ToR links, P §2.3
    tor_per_month: float = 0.00051  # ToRs, P §2.3
    flaps_per_day: float = 5000.0  # cluster-wide, the paper's low end (5K-60K)
    fleet_links: float = 200_000.0  # NIC-ToR links the flap count is spread over [assumed]
    flap_down: float = 10.0  # s per flap [assumed; Fig 18b halts > 9 s]
    link_repair: float = 3600.0  # median s [assumed]
    tor_repair: float = 7200.0  # median s [assumed]
    repair_sigma: float = 1.0  # lognormal shape of repair times (0: fixed)
    stacked_pair: float = 1.0  # share of ToR failures that take a stacked pair down

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if not (v >= 0 and math.isfinite(v)):
                raise InputError(k, f"must be a finite number >= 0, got {v!r}")
        if self.fleet_links <= 0:
            raise InputError("fleet_links", "must be > 0")
        if self.stacked_pair > 1:
            raise InputError("stacked_pair", f"must be in [0, 1], got {self.stacked_pair}")

    @property
    def flap_per_link_s(self) -> float:
        return self.flaps_per_day / self.fleet_links / 86400.0


@dataclass(frozen=True)
class Holds:
    """Seconds a failure of one side blackholes a dual-ToR NIC's inbound flows on its plane
    (the job halts meanwhile): after a NIC-ToR link failure or flap, and after a ToR failure."""

    link: float = 0.0
    tor: float = 0.0


def holds(fabric: Fabric, gpus: np.ndarray, routing: str, failover=None) -> Holds:
    """The failure layer's holds on the job's first NIC: its port-0 link, and that port's
    ToR (:func:`hpn.failures.failover.hold_times`; 0 where nobody holds anything)."""
    from hpn.failures.failover import Failover, hold_times

    lk = fabric.links
    gpus = np.asarray(gpus, np.int64).ravel()
    ports = np.flatnonzero((lk.tier == LinkTier.NIC_TOR) & (lk.src == gpus.min()))
    if len(ports) < 2:
        return Holds()
    fo = failover or Failover()
    up = int(ports[np.argmin(lk.port[ports])])
    tor = int(lk.dst[up])
    link = np.array([up, up ^ 1])
    at_tor = np.flatnonzero((lk.src == tor) | (lk.dst == tor))
    h_link, _ = hold_times(fabric, link, routing, fo)
    h_tor, _ = hold_times(fabric, np.union1d(at_tor, at_tor ^ 1), routing, fo)
    return Holds(float(h_link.max()), float(h_tor.max()))


def _blackholes(trial, start, end, hold: float):
    """(trial, start, end) of the blackholes the outages [start, end) open."""
    h = np.minimum(end - start, hold)
    keep = h > 0
    return trial[keep], start[keep], start[keep] + h[keep]


@dataclass(frozen=True, eq=False)
class Exposure:
    """The job's NIC ports and ToRs: ``link_nic``/``link_side`` per NIC-ToR link; per ToR
    the CSR ``tor_off`` into ``tor_nic``/``tor_side`` (the job's ports under it)."""

    nics: int
    sides: int
    link_nic: np.ndarray
    link_side: np.ndarray
    tor_off: np.ndarray
    tor_nic: np.ndarray
    tor_side: np.ndarray
    host_ports: int = 16  # NIC ports of one host

    @property
    def links(self) -> int:
        return len(self.link_nic)

    @property
    def tors(self) -> int:
        return len(self.tor_off) - 1


def exposure(fabric: Fabric, gpus: np.ndarray) -> Exposure:
    """What a job on ``gpus`` (node ids) is exposed to."""
    lk = fabric.links
    gpus = np.asarray(gpus, np.int64).ravel()
    ids = np.flatnonzero((lk.tier == LinkTier.NIC_TOR) & np.isin(lk.src, gpus))
    if not len(ids):
        raise InputError("gpus", "the job's GPUs have no NIC-ToR links")
    nic = np.searchsorted(np.sort(gpus), lk.src[ids])
    side = np.maximum(lk.port[ids].astype(np.int64), 0)
    tor = lk.dst[ids]
    tors, inv = np.unique(tor, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    off = np.zeros(len(tors) + 1, np.int64)
    np.cumsum(np.bincount(inv, minlength=len(tors)), out=off[1:])
    sides = int(np.bincount(nic).max())
    _, per_host = np.unique(fabric.nodes.host[lk.src[ids]], return_counts=True)
    return Exposure(len(gpus), sides, nic, side, off, nic[order], side[order], int(per_host.max()))


def _union(trial: np.ndarray, s: np.ndarray, e: np.ndarray, span: float):
    """Union of intervals per trial: (trial, start, end) of the merged intervals."""
    if not len(s):
        return trial, s, e
    off = trial * (4 * span) + 0.0  # trials far apart in time, so one sweep merges them all
    o = np.lexsort((s, trial))
    ts, ss, ee = trial[o], s[o] + off[o], np.minimum(e[o], span * 2) + off[o]
    run = np.maximum.accumulate(ee)
    new = np.ones(len(ss), bool)
    new[1:] = ss[1:] > run[:-1]
    grp = np.cumsum(new) - 1
    end = np.zeros(int(grp[-1]) + 1)
    np.maximum.at(end, grp, ee)
    return ts[new], ss[new] - off[o][new], end - off[o][new]


def _draws(rng, n_trials, count_mean, size_space, median, sigma, span):
    n = rng.poisson(count_mean, n_trials)
    trial = np.repeat(np.arange(n_trials), n)
    k = len(trial)
    which = rng.integers(0, max(size_space, 1), k)
    start = rng.uniform(0, span, k)
    dur = median * (np.exp(sigma * rng.standard_normal(k)) if sigma > 0 else np.ones(k))
    return trial, which, start, start + dur


def _cut_offs_dual(trial, nic, side, s, e, nics):
    """Intervals in which some NIC has both sides down (side -1: both at once)."""
    both = side < 0
    out_t, out_s, out_e = [trial[both]], [s[both]], [e[both]]
    idx = np.flatnonzero(~both)
    key = trial[idx] * nics + nic[idx]
    o = np.argsort(key, kind="stable")
    idx, key = idx[o], key[o]
    uk, first, cnt = np.unique(key, return_index=True, return_counts=True)
    two = first[cnt == 2]  # the common case of a coincidence: two rows, vectorized
    i, j = idx[two], idx[two + 1]
    lo, hi = np.maximum(s[i], s[j]), np.minimum(e[i], e[j])
    hit = (side[i] != side[j]) & (hi > lo)
    out_t.append(trial[i][hit])
    out_s.append(lo[hit])
    out_e.append(hi[hit])
    for f0, c in zip(first[cnt > 2], cnt[cnt > 2], strict=True):  # rarer still: loop
        m = idx[f0 : f0 + c]
        for i in m[side[m] == 0]:
            for j in m[side[m] == 1]:
                a, b = max(s[i], s[j]), min(e[i], e[j])
                if b > a:
                    out_t.append(trial[[i]])
                    out_s.append(np.array([a]))
                    out_e.append(np.array([b]))
    return np.concatenate(out_t), np.concatenate(out_s), np.concatenate(out_e)


def _chunk(rng, n, ex: Exposure, design, rates: Rates, rec: Recovery, span, loss, hold: Holds):
    months = span / MONTH_S
    lt, li, ls, le = _draws(
        rng,
        n,
        rates.link_per_month * ex.links * months,
        ex.links,
        rates.link_repair,
        rates.repair_sigma,
        span,
    )
    tt, ti, ts, te = _draws(
        rng,
        n,
        rates.tor_per_month * ex.tors * months,
        ex.tors,
        rates.tor_repair,
        rates.repair_sigma,
        span,
    )
    pair = np.zeros(len(tt), bool)
    if design == "stacked":
        pair = rng.random(len(tt)) < rates.stacked_pair
    flaps = rng.poisson(rates.flap_per_link_s * ex.links * span, n).astype(float)
    if design == "single-tor":
        ct, cs, ce = np.concatenate([lt, tt]), np.concatenate([ls, ts]), np.concatenate([le, te])
        dt, ds, de = ct[:0], cs[:0], ce[:0]
    else:
        cnt = np.diff(ex.tor_off)[ti]
        rows = np.repeat(np.arange(len(tt)), cnt)
        pos = np.repeat(ex.tor_off[ti] - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
        pos = pos + np.arange(len(rows))
        side = np.where(pair[rows], -1, ex.tor_side[pos])
        ct, cs, ce = _cut_offs_dual(
            np.concatenate([lt, tt[rows]]),
            np.concatenate([ex.link_nic[li], ex.tor_nic[pos]]),
            np.concatenate([ex.link_side[li], side]),
            np.concatenate([ls, ts[rows]]),
            np.concatenate([le, te[rows]]),
            ex.nics,
        )
        keep = ~pair
        blk = [
            _blackholes(lt, ls, le, hold.link),
            _blackholes(tt[keep], ts[keep], te[keep], hold.tor),
        ]
        ct = np.concatenate([ct, *(b[0] for b in blk)])
        cs = np.concatenate([cs, *(b[1] for b in blk)])
        ce = np.concatenate([ce, *(b[2] for b in blk)])
        # degraded once the blackhole ends, for the rest of the outage
        d_start = np.concatenate(
            [
                ls + np.minimum(le - ls, hold.link),
                ts[keep] + np.minimum(te[keep] - ts[keep], hold.tor),
            ]
        )
        d_end = np.concatenate([le, te[keep]])
        some = d_end > d_start
        dt, ds, de = _union(np.concatenate([lt, tt[keep]])[some], d_start[some], d_end[some], span)
    ut, us, ue = _union(ct, cs, ce, span)
    crash = (ue - us > rec.timeout) & (us + rec.timeout < span)
    halt = np.where(crash, rec.timeout, np.minimum(ue, span) - us)
    lost = rng.uniform(0, rec.interval, len(us))
    lost = np.where(crash, rec.restart + np.minimum(lost, rec.interval - rec.cost), 0.0)
    crashes = np.bincount(ut, weights=crash, minlength=n).astype(float)
    halted = np.bincount(ut, weights=halt, minlength=n).astype(float)
    lost_s = np.bincount(ut, weights=lost, minlength=n).astype(float)
    degraded = np.bincount(dt, weights=np.minimum(de, span) - ds, minlength=n).astype(float)
    if design == "single-tor":
        flap_crash = rates.flap_down > rec.timeout
        halted += flaps * (rec.timeout if flap_crash else rates.flap_down)
        if flap_crash:
            crashes += flaps
            lost_s += flaps * (rec.restart + rec.mean_lost_work)
    else:
        h = min(hold.link, rates.flap_down)  # each flap's blackhole halts the job first
        if h > rec.timeout:
            crashes += flaps
            halted += flaps * rec.timeout
            lost_s += flaps * (rec.restart + rec.mean_lost_work)
        else:
            halted += flaps * h
        degraded += flaps * (rates.flap_down - h)
    return crashes, halted, lost_s, degraded, (halted + lost_s + degraded * loss) / span


class Stats(TypedDict):
    """A figure over the trials: mean and percentiles."""

    mean: float
    p50: float
    p90: float
    p99: float


class ExposureCounts(TypedDict):
    """What the job's placement touches."""

    nic_tor_links: int
    tors: int


class ExpectedEvents(TypedDict):
    """Expected failures and flaps per month on the exposure."""

    link_failures: float
    tor_failures: float
    flaps: float


def _stats(x: np.ndarray) -> Stats:
    p50, p90, p99 = np.percentile(x, [50, 90, 99])
    return Stats(mean=float(x.mean()), p50=float(p50), p90=float(p90), p99=float(p99))


def reliability(
    ex: Exposure,
    design: str,
    months: float,
    trials: int,
    seed: int = 0,
    rates: Rates | None = None,
    recovery: Recovery | None = None,
    degraded_loss: float | None = None,
    price: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    hold: Holds | None = None,
) -> dict:
    """Crashes, halted and degraded hours, goodput loss and cost per month over ``trials``;
    ``hold``: the blackholes a dual-ToR side's failure opens (default: none)."""
    if not months > 0:
        raise InputError("months", f"must be > 0, got {months}")
    if trials < 1:
        raise InputError("trials", f"must be >= 1, got {trials}")
    rates, rec, hold = rates or Rates(), recovery or Recovery(), hold or Holds()
    loss = 1.0 / ex.host_ports if degraded_loss is None else degraded_loss
    if not 0 <= loss <= 1:
        raise InputError("degraded_loss", f"must be in [0, 1], got {loss}")
    span = months * MONTH_S
    rng = np.random.default_rng(seed)
    parts = []
    step = max(1, min(trials, 2000))
    for lo in range(0, trials, step):
        parts.append(_chunk(rng, min(step, trials - lo), ex, design, rates, rec, span, loss, hold))
        if progress is not None:
            progress(min(lo + step, trials), trials)
    crashes, halted, lost, degraded, frac = (np.concatenate(c) for c in zip(*parts, strict=True))
    gpu_h = frac * span / 3600 * ex.nics / months
    out = {
        "design": design,
        "gpus": ex.nics,
        "months": months,
        "trials": trials,
        "seed": seed,
        "exposure": ExposureCounts(nic_tor_links=ex.links, tors=ex.tors),
        "expected_per_month": ExpectedEvents(
            link_failures=rates.link_per_month * ex.links,
            tor_failures=rates.tor_per_month * ex.tors,
            flaps=rates.flap_per_link_s * ex.links * MONTH_S,
        ),
        "crashes_per_month": _stats(crashes / months),
        "halted_hours_per_month": _stats(halted / 3600 / months),
        "degraded_hours_per_month": _stats(degraded / 3600 / months),
        "restart_and_lost_work_hours_per_month": _stats(lost / 3600 / months),
        "goodput_loss_fraction": _stats(frac),
        "degraded_loss": loss,
        "blackhole_s": asdict(hold),
        "checkpoint_overhead_fraction": rec.overhead,
        "gpu_hours_lost_per_month": _stats(gpu_h),
        "rates": asdict(rates),
        "recovery": asdict(rec) | {"since_checkpoint": None},
    }
    if price is not None:
        out["price_per_gpu_hour"] = price
        out["cost_per_month"] = _stats(gpu_h * price)
    return out
