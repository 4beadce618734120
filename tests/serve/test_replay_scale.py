"""The device as a replay found it (`compare.replay_scale`): read back from event logs
whose operation times are known, and charged by `predict` (no torch needed)."""

from __future__ import annotations

import asyncio

import httpx
import numpy as np
import pytest

from hpn.pool.backend import Cluster
from hpn.pool.policies.base import Slo
from hpn.pool.traces.base import Trace
from hpn.serve.compare import (
    MIN_OPS,
    drift,
    predict,
    replay_scale,
    slower,
    spread,
    work_shares,
)
from hpn.serve.replay import _clock_phase
from hpn.serve.timeline import operations
from tests.serve.test_compare import _profile, _shared_profile

KVB = {"a": 1e3, "b": 1e3}


def _trace(n=12, seed=0):
    rng = np.random.default_rng(seed)
    arr = np.sort(rng.uniform(0, 2.0, n))
    return Trace.build(
        arr, rng.integers(0, 2, n), rng.integers(5, 60, n), rng.integers(2, 9, n), ["a", "b"],
        ["engine"] * 2,
    )  # fmt: skip


def _log(profile, tr, policy="dedicated", cluster=None):
    logs: list = []
    predict(tr, policy, cluster or Cluster(2, 0, 0, 1), profile, KVB, Slo(10.0, 1.0), timeline=logs)
    return logs[0]


@pytest.mark.parametrize("make", [_profile, _shared_profile])
def test_the_simulators_own_log_reads_back_as_scale_one(make):
    prof = make()
    s = replay_scale(_log(prof, _trace()), prof, KVB)
    assert s["prefill"] == pytest.approx(1.0, rel=0.02)
    assert s["decode"] == pytest.approx(1.0, rel=0.02)
    assert s["load"] == 1.0  # warm loads are paced by the link: never scaled
    assert set(s["spread"]) == {"prefill", "decode"}
    for g in s["spread"].values():  # group means around the kind's scale, mean 1
        assert g == sorted(g) and g[0] <= 1.0 <= g[-1]
        assert sum(g) / len(g) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("make", [_profile, _shared_profile])
def test_a_slower_device_reads_back_as_its_slowdown(make):
    prof = make()
    slow = {**prof, "replay_scale": {"prefill": 2.0, "decode": 3.0, "load": 1.0}}
    s = replay_scale(_log(slow, _trace()), prof, KVB)
    assert s["prefill"] == pytest.approx(2.0, rel=0.03)
    assert s["decode"] == pytest.approx(3.0, rel=0.03)


@pytest.mark.parametrize("make", [_profile, _shared_profile])
def test_drift_is_how_much_slower_a_log_ran_than_a_scale_read_elsewhere(make):
    """A log against its own scale has not drifted (1, exactly: the same sums); against
    the profile's device (scale 1) it ran at the 2x / 3x it was simulated at; against a
    device read 1.5x slower than its own, at 1 / 1.5."""
    prof = make()
    log = _log({**prof, "replay_scale": {"prefill": 2.0, "decode": 3.0, "load": 1.0}}, _trace())
    own = replay_scale(log, prof, KVB)
    assert drift(log, prof, KVB, own) == pytest.approx({"prefill": 1.0, "decode": 1.0})
    bare = drift(log, prof, KVB, {"prefill": 1.0, "decode": 1.0, "load": 1.0})
    assert bare["prefill"] == pytest.approx(2.0, rel=0.03)
    assert bare["decode"] == pytest.approx(3.0, rel=0.03)
    assert drift(log, prof, KVB, slower(own, 1.5)) == pytest.approx(
        {"prefill": 1 / 1.5, "decode": 1 / 1.5}
    )


def test_predict_charges_the_scale_on_a_hand_computed_timeline():
    tr = Trace.build([0.0], [0], [10], [3], ["a"], ["engine"])
    prof = {**_profile(), "replay_scale": {"prefill": 2.0, "decode": 3.0, "load": 1.0}}
    res = predict(tr, "dedicated", Cluster(1, 0, 0, 1), prof, {"a": 1e3}, Slo(1.0, 0.1))
    prefill, step = 0.002 + 10 * 1e-5, 0.004 + 1e-4
    assert res.ttft_p50_s == pytest.approx(2 * prefill)
    assert res.tbt_p50_s == pytest.approx(3 * step)


def test_windows_follow_the_trace_clock_and_fall_back_when_thin():
    # a log whose clock runs 0.5 s ahead of the trace (the engine's): windows of 1 s
    prof = _profile()
    tr = _trace(40)
    log = _log({**prof, "replay_scale": {"prefill": 2.0, "decode": 2.0, "load": 1.0}}, tr)
    for e in log["events"]:
        e["t"] += 0.5
    for r in log["requests"]:
        r["arrival"] += 0.5
    s = replay_scale(log, prof, KVB, arrivals=tr.arrival, window=1.0)
    assert s["window_s"] == 1.0
    for kind in ("prefill", "decode"):
        w = s["windows"][kind]
        assert len(w) >= 2 and w == pytest.approx([2.0] * len(w), rel=0.05)
    assert s["windows"]["load"] == [1.0] * len(s["windows"]["load"])
    # too few operations of a kind: scale 1, no spread
    one = _log(prof, Trace.build([0.0], [0], [10], [3], ["a"], ["engine"]))
    assert replay_scale(one, prof, KVB)["prefill"] == 1.0 and MIN_OPS > 1


def test_a_windowed_scale_is_charged_by_the_simulators_clock():
    tr = Trace.build([0.0, 5.0], [0, 0], [10, 10], [3, 3], ["a"], ["engine"])
    rs = {"prefill": 1.0, "decode": 1.0, "load": 1.0, "window_s": 4.0,
          "windows": {"prefill": [1.0, 4.0], "decode": [1.0, 1.0], "load": [1.0, 1.0]}}  # fmt: skip
    logs: list = []
    predict(tr, "dedicated", Cluster(1, 0, 0, 1), {**_profile(), "replay_scale": rs},
            {"a": 1e3}, Slo(1.0, 0.1), timeline=logs)  # fmt: skip
    reqs = {r["rid"]: r for r in logs[0]["requests"]}
    prefill = 0.002 + 10 * 1e-5
    assert reqs[0]["first_t"] == pytest.approx(prefill)  # window 0
    assert reqs[1]["first_t"] - 5.0 == pytest.approx(4 * prefill)  # window 1


def test_replay_starts_on_a_whole_second_of_the_servers_clock():
    def handler(request):
        return httpx.Response(200, json={"status": "ok", "clock_s": 12.3})

    async def phase():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as c:
            return await _clock_phase(c, "http://x", 1.0)

    assert asyncio.run(phase()) == pytest.approx(0.7, abs=0.05)


@pytest.mark.parametrize("seed", [3, 4])
def test_requests_that_join_a_running_decode_are_counted(seed):
    """A decode that others joined lasts their steps too: the simulator's own log, with
    joins, reads back as scale 1 (counting only the first batch made it read high)."""
    prof = _profile()
    log = _log(prof, _trace(n=40, seed=seed), "aegaeon", Cluster(3, 1, 2, 1))
    decodes = [e for e in log["events"] if e["ev"] == "decode"]
    assert any(e["joins"] for e in decodes)
    assert all(len(e["joins"]) == len(e["joins_gen1"]) for e in decodes if "gen1" in e)
    assert replay_scale(log, prof, KVB)["decode"] == pytest.approx(1.0, rel=0.03)
    for e in decodes:  # the joiners left out: their steps read as a slower device
        e["joins"], e["joins_gen1"] = [], []
    assert replay_scale(log, prof, KVB)["decode"] > 1.08


def test_the_replays_own_contention_is_read_back():
    """A device whose instances slow each other less than the profile says (alone 0.8x,
    not 0.5x, of both computing): the replay's fitted curve is the device's, and the
    simulator charged with it reproduces the replay's operation seconds."""
    true = _shared_profile()
    true["contention"] = {**true["contention"], "prefill": [0.8, 1.0], "decode": [0.8, 1.0]}
    log = _log(true, _trace(n=60, seed=1), cluster=Cluster(2, 0, 0, 1))
    prof = _shared_profile()
    s = replay_scale(log, prof, KVB)
    for kind in ("prefill", "decode"):
        c = s["contention"][kind]
        assert c[0] / c[1] == pytest.approx(0.8, rel=0.05)  # not the profile's 0.5
        assert c[1] * s[kind] == pytest.approx(1.0, rel=0.05)  # both computing: the grid's
    again = _log({**prof, "replay_scale": {**s, "spread": {}}}, _trace(n=60, seed=1))
    assert replay_scale(again, true, KVB)["decode"] == pytest.approx(1.0, rel=0.05)


def test_a_decodes_work_shares_are_its_time_shares_over_the_curve():
    """Half its time alone (0.3 s per unit of work), half beside another (1.0): it did
    0.5 / 0.3 and 0.5 / 1.0 units, 10/13 and 3/13 of its work, and its time per unit is
    the harmonic mean 1 / (0.5 / 0.3 + 0.5 / 1.0) = 6/13, not the arithmetic 0.65."""
    u = work_shares(np.array([0.5, 0.5]), np.array([0.3, 1.0]))
    assert u == pytest.approx([10 / 13, 3 / 13])
    assert u @ np.array([0.3, 1.0]) == pytest.approx(6 / 13)
    assert work_shares(np.array([0.0, 1.0]), np.array([0.3, 1.0])) == pytest.approx([0, 1])


def _decode_seconds(log: dict) -> float:
    return sum(o["end"] - o["t"] for o in operations(log) if o["ev"] == "decode" and "end" in o)


def test_a_steep_contention_curve_is_read_back_as_the_simulator_charges_it():
    """Instances 3.3x slower beside each other than alone (a 2-core CPU's curve): decodes
    that overlap for part of their time are charged by the simulator at their work's
    shares. Read by time shares (before), the curve came back 0.35, not 0.3, and charged
    the same decodes 3.7 % less than they took here (10-17 % on the engine check's
    replays: its sim@rep's missing decode seconds); read by work shares, the log's curve
    and its decode seconds come back."""
    true = _shared_profile()
    true["contention"] = {**true["contention"], "prefill": [0.3, 1.0], "decode": [0.3, 1.0]}
    tr = _trace(n=60, seed=3)
    log = _log(true, tr, cluster=Cluster(2, 0, 0, 1))
    s = replay_scale(log, _shared_profile(), KVB)
    c = s["contention"]["decode"]
    assert c[0] / c[1] == pytest.approx(0.3, rel=0.03)
    again = _log({**_shared_profile(), "replay_scale": {**s, "spread": {}}}, tr)
    assert _decode_seconds(again) == pytest.approx(_decode_seconds(log), rel=0.02)


def test_a_fresh_decodes_warm_up_is_predicted_not_read_as_a_slower_device():
    """A log whose first decode after each scale-up warmed up (aegaeon: every turn after a
    switch) reads back as scale 1 when the profile has that warm-up, as the simulator's
    own log does; without it in the profile the same log reads slower."""
    prof = {**_profile(), "decode_warmup_s": {"a": 0.02, "b": 0.02}}
    log = _log(prof, _trace(24), "aegaeon", Cluster(2, 1, 1, 1))
    assert any(o.get("fresh") for o in operations(log) if o["ev"] == "decode")
    assert replay_scale(log, prof, KVB)["decode"] == pytest.approx(1.0, rel=0.02)
    assert replay_scale(log, _profile(), KVB)["decode"] > 1.1


def test_the_spread_keeps_the_operations_mean_and_its_tail():
    """Equal-count group means, scaled to mean 1: 7 operations at 1x and one at 9x (mean
    2) in 4 groups are 1, 1, 1, 5 -> 0.5, 0.5, 0.5, 2.5; a uniform draw's mean is the
    operations' (21 quantiles interpolated up to the 9x drew a mean of 0.79 here)."""
    assert spread([1.0] * 7 + [9.0], groups=4) == [0.5, 0.5, 0.5, 2.5]
    assert spread([3.0, 1.0], groups=20) == [0.5, 1.5]  # fewer operations than groups


def test_the_spread_weighs_each_operation_by_its_predicted_seconds():
    """Four 1 s operations at 1x and a 0.04 s one at 20x (a stall on a tiny operation), two
    groups of equal seconds (2.02 s each by the weights' midpoints: the first two, then
    the rest): 1 and (1 + 1 + 0.8) / 2.04 = 1.3725, scaled to mean 1: 0.843, 1.157 (by
    count the 20x would be a third of a group: 1 and 22 / 3, 0.24 and 1.76)."""
    g = spread([1.0, 1.0, 1.0, 1.0, 20.0], [1.0, 1.0, 1.0, 1.0, 0.04], groups=2)
    hi = 2.8 / 2.04
    assert g == pytest.approx([2 / (1 + hi), 2 * hi / (1 + hi)], abs=1e-4)
    assert spread([1.0, 1.0, 1.0, 1.0, 20.0], groups=2) == pytest.approx([0.24, 1.76], abs=1e-3)


def test_the_spread_is_around_each_operations_window():
    """A device 2x slow in the first second and 4x in the next, every prefill exactly at
    its window's speed: no spread left (read against the whole replay's scale instead, the
    windows' own difference would be drawn again on top of them)."""
    prof = _profile()
    rs = {"prefill": 1.0, "decode": 1.0, "load": 1.0, "window_s": 1.0,
          "windows": {"prefill": [2.0, 4.0], "decode": [1.0, 1.0], "load": [1.0, 1.0]}}  # fmt: skip
    tr = _trace(40)
    s = replay_scale(_log({**prof, "replay_scale": rs}, tr), prof, KVB, arrivals=tr.arrival,
                     window=1.0)  # fmt: skip
    assert s["windows"]["prefill"][:2] == pytest.approx([2.0, 4.0], rel=0.02)
    assert s["spread"]["prefill"] == pytest.approx([1.0] * len(s["spread"]["prefill"]), abs=0.02)


def test_each_decode_and_cold_scale_up_takes_a_draw_from_the_spread():
    """A spread of one group is that speed for every operation of its kind: decode steps
    2x (step s = 0.0041 s -> TBT 0.0082 s); serverless's cold scale-up 3x (1.25 s ->
    3.75 s): the arrival at 0 scales up on the tick at 1 s, ready at 4.75 s, and the
    balancer's checks at 1, 2, 3, 4 s find no ready engine, the one at 5 s admits it:
    first token at 5 + p (p = 0.0021 s), against 3 + p without the draw (ready at 2.25 s)."""
    tr = Trace.build([0.0], [0], [10], [3], ["a"], ["engine"])
    one = {"prefill": 1.0, "decode": 1.0, "load": 1.0}
    prof = {**_profile(), "replay_scale": {**one, "spread": {"decode": [2.0]}}}
    res = predict(tr, "dedicated", Cluster(1, 0, 0, 1), prof, {"a": 1e3}, Slo(1.0, 0.1))
    assert res.tbt_p50_s == pytest.approx(2 * (0.004 + 1e-4))
    p = 0.002 + 10 * 1e-5
    for draw, first in ((3.0, 5.0 + p), (1.0, 3.0 + p)):
        prof = {**_profile(), "replay_scale": {**one, "spread": {"load": [draw]}}}
        res = predict(tr, "serverless", Cluster(1, 0, 0, 1), prof, {"a": 1e3}, Slo(10.0, 1.0))
        assert res.ttft_p50_s == pytest.approx(first)


def test_a_draw_seed_repeats_and_other_seeds_draw_otherwise():
    """`predict(draw=k)` seeds the spread's draws: the same seed gives the same prediction,
    other seeds other decode speeds (two groups, 0.5x and 1.5x: 8 requests' TBT)."""
    tr = _trace(8)
    one = {"prefill": 1.0, "decode": 1.0, "load": 1.0}
    prof = {**_profile(), "replay_scale": {**one, "spread": {"decode": [0.5, 1.5]}}}

    def tbt(draw):
        res = predict(tr, "dedicated", Cluster(2, 0, 0, 1), prof, KVB, Slo(1.0, 0.1), draw=draw)
        return res.tbt_p50_s

    assert tbt(0) == tbt(0)
    assert len({tbt(k) for k in range(5)}) > 1
