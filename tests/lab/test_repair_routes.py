"""A repaired core or Agg is back in every kernel multipath route around it.

FRR 8.4's zebra with kernel nexthop objects left the repaired switch out of the
neighbours' kernel routes (the kernel deletes a nexthop object whose device goes down;
zebra reuses its cached group on repair), so ``lab repair`` did not converge."""

from __future__ import annotations

import pytest

from hpn.lab import bgp, service
from hpn.lab.build import load
from hpn.lab.fail import fail
from hpn.lab.plan import LabSpec

pytestmark = pytest.mark.lab


def _switch_routes(plan) -> dict[str, dict[str, set[str]]]:
    return {
        ns: bgp.kernel_routes(ns)
        for ns, role in zip(plan.namespaces, plan.ns_role, strict=True)
        if role != "host"
    }


def _widest(routes: dict[str, dict[str, set[str]]], ns: str) -> int:
    return max(len(v) for v in routes[ns].values())


@pytest.mark.parametrize(
    ("fabric", "target", "around"),
    [({"pods": 2}, "core:index=4", "a0"), ({}, "agg:plane=0,index=0", "t0")],
    ids=["core-two-pods", "agg-one-pod"],
)
def test_repair_restores_every_next_hop(lab_name, fabric, target, around):
    if bgp.missing():
        pytest.skip(bgp.missing())
    service.up(LabSpec(name=lab_name, control="bgp", fabric=fabric))
    plan, _ = load(lab_name)
    before = _switch_routes(plan)
    ns = f"{plan.prefix}-{around}"
    assert _widest(before, ns) >= 2  # a multipath route over the failed switch's peers
    for _ in range(2):  # the second within zebra's 180 s group keep time
        fail(lab_name, target, repair=1.0, before=0.3, after=0.5)
        r = service.repair(lab_name)  # raises "BGP did not converge" when one is missing
        assert r["converge_s"] is not None
        after = _switch_routes(plan)
        assert after == before
        assert _widest(after, ns) == _widest(before, ns)
