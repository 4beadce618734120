"""Why NCCL's trees on DCN+ run as fast as on HPN by default, and the one hashing that binds
them (docs/guide/routing.md, "DCN+ against HPN with NCCL's trees"; bench/dcn_plus_trees.py).

DCN+ (16 hosts per ToR pair, 8 parallel 400G links per ToR-Agg pair): only the cross-segment
tree edges reach the Aggs. With every switch and every LAG taking the same bits of one CRC
(``HashConfig.polarized``), a flow's Agg ``a`` is ``h mod 8`` at the source ToR, and at the Agg
the destination ToR is ``h mod 2 = a mod 2`` and the member ``h mod 8 = a``: each Agg sends
everything toward a segment over one link. Either correlation alone leaves that link choice
spread.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpn.engine import simulate
from hpn.routing import make_router, router_for
from hpn.routing.ecmp import HashConfig
from hpn.topology import LinkTier, NodeKind, build
from hpn.workload.collectives import Params
from hpn.workload.collectives.context import nvlink_data_fabric
from hpn.workload.collectives.ops import bandwidths
from hpn.workload.collectives.run import collective_dag

TIERS_ALIKE = {"seeds": "same", "tor_lag_offset": 8, "agg_lag_offset": 2}


@pytest.fixture(scope="module")
def dcn2():
    return build("dcn-plus", segments=2)


def _agg_downlinks(f, hashing):
    """{Agg: set of Agg -> ToR links} used by segment 0 -> segment 1 flows (4 per GPU)."""
    nd = f.nodes
    src = np.repeat(np.flatnonzero((nd.kind == NodeKind.GPU) & (nd.segment == 0)), 4)
    dst = np.resize(np.flatnonzero((nd.kind == NodeKind.GPU) & (nd.segment == 1)), len(src))
    p = make_router("ecmp", seed=1, hashing=hashing).route(f, src, dst)
    lk = f.links
    down = p.links[
        (lk.tier[p.links] == LinkTier.TOR_AGG) & (nd.kind[lk.src[p.links]] == NodeKind.AGG)
    ]
    out: dict[int, set[int]] = {}
    for x in down:
        out.setdefault(int(lk.src[x]), set()).add(int(x))
    return out


def test_polarized_aggs_send_a_segment_everything_over_one_link(dcn2):
    per_agg = _agg_downlinks(dcn2, HashConfig.polarized())
    assert len(per_agg) == 8
    assert all(len(v) == 1 for v in per_agg.values())
    # and the Aggs split between the destination's two ToRs by index parity (a mod 2)
    lk, nd = dcn2.links, dcn2.nodes
    side = {int(nd.index[a]) % 2: set() for a in per_agg}
    for a, links in per_agg.items():
        side[int(nd.index[a]) % 2] |= {int(nd.plane[lk.dst[x]]) for x in links}
    assert all(len(v) == 1 for v in side.values()) and side[0] != side[1]


def test_one_correlation_alone_leaves_the_links_spread(dcn2):
    tiers = _agg_downlinks(dcn2, TIERS_ALIKE)
    # Fig 13's mechanism: each Agg picks one of the destination's two ToRs for every flow...
    assert all(len({int(dcn2.links.dst[x]) for x in v}) == 1 for v in tiers.values())
    # ...but spreads them over that ToR's parallel links
    assert min(len(v) for v in tiers.values()) > 1
    default = _agg_downlinks(dcn2, None)
    assert all(len({int(dcn2.links.dst[x]) for x in v}) == 2 for v in default.values())


def _run(preset, size, hashing):
    f = build(preset)
    p = Params(nccl="2.18.3")
    ctx, marks, _ = collective_dag(f, "allreduce", size, 448, params=p)
    res = simulate(nvlink_data_fabric(f, p), ctx.dag, router_for(f, None, seed=1, hashing=hashing))
    s, e = marks[0]
    bw = bandwidths("allreduce", size, res.task_finish[e] - res.task_start[s], 448)[1]
    lk, kind = f.links, f.nodes.kind
    agg_down = (lk.tier == LinkTier.TOR_AGG) & (kind[lk.src] == NodeKind.AGG)
    return ctx.choices[0].algo, bw, res.link_peak_util, agg_down


@pytest.mark.parametrize("size", [2**28, 2**32])
def test_trees_bind_on_the_agg_downlinks_only_when_polarized(size):
    algo, bw, peak, agg_down = _run("dcn-plus", size, None)
    assert algo == ("tree" if size == 2**28 else "nvlstree")
    assert peak[agg_down].max() < 0.5  # default: the Agg tier is far from binding
    algo_p, bw_p, peak_p, _ = _run("dcn-plus", size, {"seeds": "same"})
    assert algo_p == algo
    assert bw_p < 0.85 * bw
    # the network links that saturate are Agg -> ToR links
    assert (peak_p[agg_down] >= 1 - 1e-6).sum() >= 4
    hpn_bw = _run("hpn", size, None)[1]
    assert _run("hpn", size, {"seeds": "same"})[1] == pytest.approx(hpn_bw, rel=1e-9)
    assert bw == pytest.approx(hpn_bw, rel=0.01)  # DCN+ = HPN on defaults (NVLink-bound)
