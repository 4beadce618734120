"""Training's flow budget (one merged flow group per NIC) must not cost a bonded NIC its ports."""

from __future__ import annotations

import pytest

from hpn.engine import simulate
from hpn.topology import build
from hpn.workload.collectives import Ctx, Params, add_collective, place

GB = 2**30


def budget_allreduce(fabric, algo: str) -> tuple[float, int]:
    """An AllReduce over 8 hosts x 8 GPUs under training's flow budget; (seconds, conns)."""
    ranks = place(fabric, 64, per_host=8).gpus
    ctx = Ctx(fabric)
    s, e = add_collective(ctx, "allreduce", ranks, GB, algo, Params(flow_channels=1, conns=2))
    res = simulate(fabric, ctx.dag, "hpn")
    return float(res.task_finish[e] - res.task_start[s]), ctx.dag.num_flows


@pytest.mark.parametrize("algo", ["tree", "nvlstree"])
def test_single_tor_never_faster_than_dual_tor(algo):
    """Both designs give a NIC 400G (1 x 400G or 2 x 200G); with the host's per-connection
    port choice a dual-ToR NIC's two connections per tree edge take both ports, so the merged
    tree runs as fast as on one 400G port. Before the fix the budget halved the trees'
    connections to one per edge, which rides one 200G port (dual-ToR 10 % slower in
    docs/guide/failures.md's Fig 18 job)."""
    kw = {"segments": 1, "link_latency": 0, "nvlink_latency": 0}
    dual, _ = budget_allreduce(build("hpn", **kw), algo)
    single, _ = budget_allreduce(build("hpn", dual_tor=False, **kw), algo)
    assert dual == pytest.approx(single, rel=1e-6)


def test_single_port_nic_keeps_the_halved_budget():
    """One port per NIC: nothing to spread over, so trees keep half the connections."""
    f = build("hpn", segments=1, dual_tor=False)
    _, n1 = budget_allreduce(f, "tree")
    ranks = place(f, 64, per_host=8).gpus
    ctx = Ctx(f)
    add_collective(ctx, "allreduce", ranks, GB, "tree", Params(flow_channels=1, conns=4))
    assert ctx.dag.num_flows == 2 * n1  # conns 4 -> 2 per edge; conns 2 -> 1
