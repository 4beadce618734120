"""Exact counts and wiring rules of the HPN pod (P Fig 7, §5-6; hpn-facts §2-4)."""

import numpy as np
import pytest

from hpn.errors import InputError
from hpn.topology import LinkTier, NodeKind, build
from hpn.topology.summary import summarize


@pytest.fixture(scope="module")
def pod():
    return build("hpn")


def test_default_pod_counts(pod):
    s = summarize(pod)
    assert s["gpus"] == 15_360
    assert s["backup_gpus"] == 960
    assert s["hosts"] == 2_040
    assert s["switches"] == {"tor": 240, "agg": 120, "core": 0}
    assert s["links"]["nic_tor"] == 32_640
    assert s["links"]["tor_agg"] == 14_400
    assert s["links"]["agg_core"] == 0
    assert s["tor_oversubscription"] == pytest.approx(1.0667, abs=1e-4)
    assert s["agg_oversubscription"] == 15
    assert s["paths_between_tors"] == 60
    assert s["max_segments_per_pod"] == 15
    assert s["max_gpus_per_pod"] == 15_360


def test_links_come_in_reverse_pairs(pod):
    lk = pod.links
    assert np.array_equal(lk.src[0::2], lk.dst[1::2])
    assert np.array_equal(lk.dst[0::2], lk.src[1::2])
    assert np.array_equal(lk.capacity[0::2], lk.capacity[1::2])


def test_rail_and_plane_wiring(pod):
    nd, lk = pod.nodes, pod.links
    m = lk.tier == LinkTier.NIC_TOR
    m[1::2] = False  # forward direction: GPU -> ToR
    gpu, tor = lk.src[m], lk.dst[m]
    assert (nd.kind[gpu] == NodeKind.GPU).all() and (nd.kind[tor] == NodeKind.TOR).all()
    assert (nd.rail[tor] == nd.index[gpu]).all()  # NIC r -> ToR pair r
    assert (nd.plane[tor] == lk.port[m]).all()  # port p -> plane-p ToR
    assert (nd.segment[tor] == nd.segment[gpu]).all()
    # every GPU has exactly one link per port
    ports = np.bincount(gpu * 2 + lk.port[m], minlength=2 * pod.num_nodes)
    assert set(np.unique(ports[2 * pod.nodes_of(NodeKind.GPU)])) == {1}


def test_plane_isolation_and_port_budgets(pod):
    nd, lk = pod.nodes, pod.links
    m = lk.tier == LinkTier.TOR_AGG
    m[1::2] = False
    tor, agg = lk.src[m], lk.dst[m]
    assert (nd.plane[tor] == nd.plane[agg]).all()  # no link across planes
    # each ToR: 136 x 200G down (incl. 8 backup) + 60 x 400G up = 51.2T
    tors = pod.nodes_of(NodeKind.TOR)
    up = np.bincount(tor, minlength=pod.num_nodes)[tors]
    down = np.bincount(lk.dst[lk.tier == LinkTier.NIC_TOR], minlength=pod.num_nodes)[tors]
    assert set(up) == {60} and set(down) == {136}
    assert 136 * 200e9 + 60 * 400e9 == pytest.approx(51.2e12)
    # each Agg: one link to each of the 120 same-plane ToRs
    aggs = pod.nodes_of(NodeKind.AGG)
    assert set(np.bincount(agg, minlength=pod.num_nodes)[aggs]) == {120}
    pairs = tor.astype(np.int64) * pod.num_nodes + agg
    assert len(np.unique(pairs)) == len(pairs)  # exactly one link per ToR-Agg pair


def test_backup_hosts(pod):
    nd = pod.nodes
    gpus = pod.nodes_of(NodeKind.GPU)
    per_segment = np.bincount(nd.segment[gpus[nd.backup[gpus]]])
    assert list(per_segment) == [64] * 15


@pytest.mark.parametrize(
    "flags,per_segment,per_pod",
    [
        # P Table 2, tier 1: 51.2T Clos 64 -> dual-ToR 128 -> rail-optimized 1K
        (
            dict(dual_tor=False, rail_optimized=False, dual_plane=False, agg_oversubscription=1),
            64,
            4096,
        ),
        (dict(rail_optimized=False, dual_plane=False, agg_oversubscription=1), 128, 4096),
        (dict(dual_plane=False, agg_oversubscription=1), 1024, 4096),
        # tier 2: + dual-plane 8K -> + 15:1 Agg-Core 15K
        (dict(agg_oversubscription=1), 1024, 8192),
        ({}, 1024, 15_360),
    ],
)
def test_table2_progression(flags, per_segment, per_pod):
    """Table 2 from port arithmetic alone. The paper's baseline pod is 2K; budgets give 4K
    (64 ToRs x 64 GPUs under 64-port 1:1 Aggs), see docs/design.md."""
    f = build("hpn", segments=1, tor_backup_ports=0, **flags)
    assert f.meta["hosts_per_segment"] * 8 == per_segment
    assert f.meta["max_gpus_per_pod"] == per_pod


def test_single_plane_lets_every_agg_reach_both_tors():
    f = build("hpn", dual_plane=False, segments=2)
    nd, lk = f.nodes, f.links
    m = (lk.tier == LinkTier.TOR_AGG) & (nd.kind[lk.src] == NodeKind.TOR)
    assert set(np.unique(nd.plane[lk.src[m]])) == {0, 1}
    assert summarize(f)["switches"]["agg"] == 60
    assert f.meta["max_segments_per_pod"] == 7  # 120 Agg ports / 16 ToRs per segment


def test_non_rail_puts_a_host_on_one_tor_pair():
    f = build("hpn", rail_optimized=False, segments=2)
    s = summarize(f)
    assert s["gpus"] == 2 * 16 * 8  # 128 ports / 8 NICs per host = 16 hosts per segment
    assert s["switches"]["tor"] == 4


def test_single_tor_halves_ports_at_double_speed():
    f = build("hpn", dual_tor=False, segments=1)
    lk = f.links
    m = lk.tier == LinkTier.NIC_TOR
    assert set(np.unique(lk.capacity[m])) == {400e9}
    assert set(np.unique(lk.port[m])) == {0}
    assert f.meta["hosts_per_segment"] == 64


def test_multi_pod_core_tier():
    f = build("hpn", pods=8)
    s = summarize(f)
    assert s["gpus"] == 122_880
    assert s["switches"]["core"] == 64
    assert s["links"]["agg_core"] == 120 * 8 * 8
    nd, lk = f.nodes, f.links
    m = (lk.tier == LinkTier.AGG_CORE) & (nd.kind[lk.src] == NodeKind.AGG)
    assert (nd.plane[lk.src[m]] == nd.plane[lk.dst[m]]).all()  # dual-plane into the core
    cores = f.nodes_of(NodeKind.CORE)
    # 15 Aggs per core group: each core spends 15 ports per pod, 8 x 15 = 120 <= 128
    per_core_pod = np.unique(np.stack([lk.dst[m], nd.pod[lk.src[m]]]), axis=1, return_counts=True)
    assert set(per_core_pod[1]) == {15}
    assert set(np.bincount(lk.dst[m], minlength=f.num_nodes)[cores]) == {120}


def test_rail_only_has_per_rail_tier2():
    f = build("rail-only", segments=2)
    nd, lk = f.nodes, f.links
    m = (lk.tier == LinkTier.TOR_AGG) & (nd.kind[lk.src] == NodeKind.TOR)
    assert (nd.rail[lk.src[m]] == nd.rail[lk.dst[m]]).all()
    assert f.meta["max_gpus_per_pod"] == 122_880  # P Table 4


@pytest.mark.parametrize(
    "fields,tier",
    [
        (dict(segments=16), "agg"),
        (dict(tor_backup_ports=200), "tor"),
        (dict(tor_uplinks=61), "tor"),
        (dict(pods=9), "core"),
        (dict(pods=2, aggs_per_core_group=7), "aggs_per_core_group"),
        (dict(chip="25.6T", segments=8), "agg"),
        (dict(agg_oversubscription=1, segments=9), "agg"),
    ],
)
def test_refusals_name_the_tier(fields, tier):
    with pytest.raises(InputError) as e:
        build("hpn", **fields)
    assert e.value.field == tier
    assert "available" in str(e.value) or "has" in str(e.value) or "divide" in str(e.value)


@pytest.mark.parametrize("chip,segments", [("25.6T", 7), ("51.2T", 15), ("102.4T", 30)])
def test_chip_generations_follow_the_budget(chip, segments):
    s = build("hpn", chip=chip).meta
    assert s["segments"] == segments
