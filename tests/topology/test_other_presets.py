"""DCN+ (P App C, Fig 20) and fat trees against their formulas."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.topology import LinkTier, NodeKind, build
from hpn.topology.summary import summarize


def test_dcn_plus_pod():
    f = build("dcn-plus")
    s = summarize(f)
    assert s["gpus"] == 512 and s["hosts"] == 64 and s["segments"] == 4
    assert s["switches"] == {"tor": 8, "agg": 8, "core": 0}
    assert s["links"]["nic_tor"] == 512 * 2
    assert s["links"]["tor_agg"] == 8 * 64  # 8 ToRs x 64 uplinks
    assert s["tor_oversubscription"] == 1.0
    assert f.meta["tor_agg_parallel_links"] == 8
    assert s["paths_between_tors"] == 8 * 8 * 8
    # not rail-optimized: all eight NICs of a host land on the same ToR pair
    nd, lk = f.nodes, f.links
    m = (lk.tier == LinkTier.NIC_TOR) & (nd.kind[lk.src] == NodeKind.GPU)
    host_tor_pairs = np.unique(np.stack([nd.host[lk.src[m]], lk.dst[m]]), axis=1)
    assert host_tor_pairs.shape[1] == 64 * 2  # each of the 64 hosts sees exactly 2 ToRs


def test_dcn_plus_full_scale():
    f = build("dcn-plus", pods=32)
    s = summarize(f)
    assert s["gpus"] == 16_384
    assert s["switches"]["core"] == 128
    cores = f.nodes_of(NodeKind.CORE)
    down = np.bincount(f.links.dst[f.links.tier == LinkTier.AGG_CORE], minlength=f.num_nodes)
    assert set(down[cores]) == {128}
    with pytest.raises(InputError) as e:
        build("dcn-plus", pods=33)
    assert e.value.field == "core"


@settings(max_examples=12, deadline=None)
@given(st.integers(min_value=1, max_value=12).map(lambda h: 2 * h))
def test_fat_tree_formulas(k):
    f = build("fat-tree", k=k)
    s = summarize(f)
    assert s["gpus"] == k**3 // 4
    assert s["switches"] == {"tor": k * k // 2, "agg": k * k // 2, "core": k * k // 4}
    assert s["links"]["nic_tor"] == k**3 // 4
    assert s["links"]["tor_agg"] == k**3 // 4
    assert s["links"]["agg_core"] == k**3 // 4
    # every switch uses exactly k ports
    deg = np.bincount(f.links.src, minlength=f.num_nodes)
    sw = f.nodes.kind >= NodeKind.TOR
    assert set(np.unique(deg[sw])) == {k}
    if k > 2:
        assert s["paths_between_tors"] == k // 2


def test_fat_tree_rejects_odd_k():
    with pytest.raises(InputError) as e:
        build("fat-tree", k=5)
    assert e.value.field == "fabric.k"


def test_frontend_is_separate():
    f = build("hpn", segments=2, frontend=True)
    s = summarize(f)
    assert s["frontend"]["nics"] == s["hosts"]
    assert s["frontend"]["links"]["nic_tor"] == 2 * s["hosts"]
    # no link joins the frontend and the backend
    net = f.nodes.network
    assert (net[f.links.src] == net[f.links.dst]).all()
