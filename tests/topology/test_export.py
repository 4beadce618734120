"""Fabric files round-trip; the SimAI reader takes formats.md's composed example."""

import numpy as np
import pytest

from hpn.errors import InputError
from hpn.topology import LinkTier, NodeKind, build
from hpn.topology.export import read, write
from hpn.topology.simai import read_simai, to_simai
from hpn.topology.summary import summarize

# formats.md §1 composed example: 4 GPUs, 2 per server, dual-ToR, dual-plane
SIMAI_EXAMPLE = (
    "14 2 2 8 20 H800\n"
    "4 5 6 7 8 9 10 11 12 13 \n"  # the writer leaves a trailing space
    """0 4 3200Gbps 0.000025ms 0
0 6 200Gbps 0.0005ms 0
0 8 200Gbps 0.0005ms 0
1 4 3200Gbps 0.000025ms 0
1 7 200Gbps 0.0005ms 0
1 9 200Gbps 0.0005ms 0
2 5 3200Gbps 0.000025ms 0
2 6 200Gbps 0.0005ms 0
2 8 200Gbps 0.0005ms 0
3 5 3200Gbps 0.000025ms 0
3 7 200Gbps 0.0005ms 0
3 9 200Gbps 0.0005ms 0
6 10 400Gbps 0.0005ms 0
6 11 400Gbps 0.0005ms 0
7 10 400Gbps 0.0005ms 0
7 11 400Gbps 0.0005ms 0
8 12 400Gbps 0.0005ms 0
8 13 400Gbps 0.0005ms 0
9 12 400Gbps 0.0005ms 0
9 13 400Gbps 0.0005ms 0
"""
)


def _same(a, b):
    for col in ("kind", "network", "pod", "segment", "rail", "plane", "host", "index", "backup"):
        assert np.array_equal(getattr(a.nodes, col), getattr(b.nodes, col)), col
    for col in ("src", "dst", "capacity", "latency", "tier", "port"):
        assert np.array_equal(getattr(a.links, col), getattr(b.links, col)), col


@pytest.mark.parametrize("fmt,ext", [("json", ".json"), ("graphml", ".graphml")])
def test_lossless_round_trip(tmp_path, fmt, ext):
    f = build("hpn", segments=2, frontend=True)
    write(f, fmt, tmp_path / f"f{ext}")
    g = read(tmp_path / f"f{ext}")
    _same(f, g)
    assert summarize(g)["gpus"] == summarize(f)["gpus"]


def test_json_keeps_the_spec(tmp_path):
    f = build("hpn", segments=3, chip="51.2T")
    write(f, "json", tmp_path / "f.json")
    assert read(tmp_path / "f.json").spec == f.spec


def test_simai_example_is_read(tmp_path):
    p = tmp_path / "topo"
    p.write_text(SIMAI_EXAMPLE)
    f = read_simai(p)
    assert f.num_nodes == 14 and f.num_links == 40
    assert f.count(NodeKind.GPU) == 4 and f.count(NodeKind.NVSWITCH) == 2
    assert f.count(NodeKind.TOR) == 4 and f.count(NodeKind.AGG) == 4
    assert f.physical_links(LinkTier.NIC_TOR) == 8
    assert f.physical_links(LinkTier.TOR_AGG) == 8
    assert f.link_between(0, 6) >= 0 and f.links.capacity[f.link_between(0, 6)] == 200e9
    assert f.links.latency[f.link_between(0, 4)] == pytest.approx(25e-9)
    assert list(f.nodes.plane[[6, 7, 8, 9]]) == [0, 0, 1, 1]
    assert to_simai(f) == SIMAI_EXAMPLE  # our writer's layout is SimAI's


def test_simai_round_trip_of_a_pod_segment(tmp_path):
    f = build("hpn", segments=2)
    text = to_simai(f)
    n, gps, nvs, sw, links, _ = text.split("\n", 1)[0].split()
    assert int(gps) == 8 and int(nvs) == 272 and int(sw) == 16 * 2 + 120
    assert int(links) == 272 * 8 + 272 * 16 + 32 * 60
    (tmp_path / "t").write_text(text)
    g = read_simai(tmp_path / "t")
    assert summarize(g)["links"] == summarize(f)["links"]
    assert to_simai(g) == text


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("", "line 1"),
        ("1 2\n", "line 1"),
        ("3 1 0 1 5 H800\n2\n0 2 100Gbps 1us 0\n", "tokens"),
        ("3 1 0 1 1 H800\n2\n0 9 100Gbps 1us 0\n", "outside"),
        ("3 1 0 1 1 H800\n2\n0 2 fast 1us 0\n", "bandwidth"),
        ("a b c d e f\n", "integer"),
    ],
)
def test_malformed_simai(tmp_path, text, fragment):
    p = tmp_path / "bad"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        read_simai(p)
    assert fragment in str(e.value)


def test_malformed_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(InputError):
        read(p)
    p.write_text('{"format": "something-else"}')
    with pytest.raises(InputError):
        read(p)


def _by_kind(f, kind, cols):
    nd = f.nodes
    ids = np.flatnonzero(nd.kind == kind)
    return sorted(zip(*(getattr(nd, c)[ids].tolist() for c in cols), strict=True))


# the figures of a spec's port budget, which a wiring file cannot carry
BUDGET = {"preset", "agg_oversubscription", "max_segments_per_pod", "max_gpus_per_pod", "max_pods"}


@pytest.mark.parametrize(
    "preset,kw",
    [
        ("hpn", {"segments": 2, "pods": 2}),
        ("hpn", {"segments": 2, "dual_plane": False}),
        ("hpn", {"segments": 2, "dual_tor": False}),
        ("dcn-plus", {"segments": 2}),
        ("fat-tree", {"k": 8}),
    ],
)
def test_simai_round_trip_keeps_the_structure(tmp_path, preset, kw):
    f = build(preset, **kw)
    (tmp_path / "t").write_text(to_simai(f))
    g = read_simai(tmp_path / "t")
    a, b = summarize(f), summarize(g)
    assert {k: v for k, v in a.items() if k not in BUDGET} == {
        k: v for k, v in b.items() if k not in BUDGET
    }
    # endpoints keep their order: every attribute of the i-th GPU (host) survives
    ends = (NodeKind.GPU, NodeKind.HOST)
    ga, gb = (np.flatnonzero(np.isin(x.nodes.kind, ends)) for x in (f, g))
    for col in ("pod", "segment", "rail", "index", "backup"):
        assert np.array_equal(getattr(f.nodes, col)[ga], getattr(g.nodes, col)[gb]), col
    cols = ("pod", "segment", "rail", "plane", "index", "backup")
    for kind in (NodeKind.TOR, NodeKind.AGG, NodeKind.NVSWITCH):
        assert _by_kind(f, kind, cols) == _by_kind(g, kind, cols), kind


def test_simai_round_trip_of_a_full_pod(tmp_path):
    f = build("hpn")
    (tmp_path / "t").write_text(to_simai(f))
    g = read_simai(tmp_path / "t")
    s = summarize(g)
    assert (s["segments"], s["gpus"], s["backup_gpus"], s["pods"]) == (15, 15360, 960, 1)
    assert s["tor_oversubscription"] == summarize(f)["tor_oversubscription"]
    from hpn.routing import default_policy

    assert default_policy(g) == "hpn"  # dual-plane, rail-optimized: HPN's host-side routing


def test_simai_backup_hint(tmp_path):
    p = tmp_path / "topo"
    p.write_text(SIMAI_EXAMPLE)
    assert read_simai(p).nodes.backup.sum() == 0  # SimAI's files have no backup ports
    f = read_simai(p, backup_hosts_per_segment=1)
    assert np.flatnonzero(f.nodes.backup & (f.nodes.kind == NodeKind.GPU)).tolist() == [2, 3]
    assert f.nodes.backup[5]  # host 1's NVSwitch
    with pytest.raises(InputError, match="leave none active"):
        read_simai(p, backup_hosts_per_segment=2)
