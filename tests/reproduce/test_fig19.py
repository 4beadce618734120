"""Fig 19's claims: the job across the 2-segment boundary, each plane design, shared sub-runs."""

from __future__ import annotations

import re

from hpn.app import run
from hpn.reproduce import load
from hpn.reproduce.context import Context
from hpn.reproduce.runner import measure_all


def test_fig19_claims_run_the_boundary_job_once_per_setting():
    claims = [c for c in load()[0] if c.id.startswith("hpn.fig19.")]
    assert {c.id for c in claims} == {"hpn.fig19.dual-plane", "hpn.fig19.dual-plane-32"}
    ctx = Context(runner=run, record=False)
    rep = measure_all(claims, ctx)
    gain, dual32 = (o for o in sorted(rep.outcomes, key=lambda o: o.claim.id))
    colls = [r for r in ctx.runs if r.command == "collective"]
    # 4 host counts x 2 planes x (AllReduce, Multi-AllReduce), the second claim reusing them
    assert len(colls) == 16 and len(ctx.runs) == 17
    for r in colls:
        c = r.config["collective"]
        hosts = c["gpus"] // 8
        assert c["first_host"] + hosts // 2 == 128  # half the hosts in each segment
        assert r.config["fabric"]["segments"] == 2 and c["nccl"] == "2.18.3"
    series = gain.measured.series
    assert [p[0] for p in series["dual-plane"]] == [4, 8, 16, 32]
    # NVLink-bound: the plane design changes nothing, so the gain is 0 and explained
    assert series["single-plane"] == series["dual-plane"]
    assert gain.measured.value == 0 and gain.verdict == "explained"
    lo, hi = map(float, re.search(r"\(([\d.]+)-([\d.]+)x\)", gain.measured.detail).groups())
    assert 1.5 < lo <= hi  # the network-bound Multi-AllReduce shows the plane effect
    assert dual32.measured.value == series["dual-plane"][-1][1]
    assert dual32.verdict == ("pass" if 72 <= dual32.measured.value <= 108 else "explained")
