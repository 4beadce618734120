"""BGP (FRR) converges to the fabric's equal-cost routes; real counters show the Fig 13 case
(single-plane polarizes a NIC's two ToR ports, dual-plane with path selection evens them);
the model on the kernel's own choices predicts every link's bytes."""

from __future__ import annotations

import pytest

from hpn.app.lab import TrafficResult
from hpn.lab import bgp, service
from hpn.lab.build import load
from hpn.lab.plan import LabSpec
from hpn.lab.routes import switch_next_hops
from tests.shapes import fits

from .leftovers import NOTHING, lab_pids, leftovers

pytestmark = pytest.mark.lab


@pytest.fixture
def frr():
    if bgp.missing():
        pytest.skip(bgp.missing())


def test_bgp_dual_plane_with_selection_is_even(lab_name, frr, tmp_path):
    st = service.up(LabSpec(name=lab_name, control="bgp", hosts_per_segment=4))
    assert st["status"] == "up" and st["converge_s"] is not None
    assert st["processes"] == 3 * st["switches"]  # zebra, staticd, bgpd per switch
    plan, _ = load(lab_name)
    # every switch's kernel holds exactly the fabric's ECMP sets, learned by BGP
    want = bgp.expected_routes(plan, switch_next_hops(plan))
    for ns, routes in want.items():
        have = bgp.kernel_routes(plan.namespaces[ns])
        assert {p: have.get(p) for p in routes} == routes
    out = service.traffic(
        lab_name, "polarization", size=60e3, connections=4, routing="hpn", rate=1e6
    )
    fits(out, TrafficResult, "lab traffic (hpn selection)")
    # 8 receiving NICs, 2 senders x 4 connections each: selection alternates planes
    assert out["flows"] == 64 and out["packets_lost"] <= 0.01 * out["packets_sent"]
    assert out["measured"]["receiving_nics"] == 8
    assert out["measured"]["tor_port_load_ratio"] <= 1.2
    cmp = out["model_vs_measured"]
    assert cmp["links_compared"] == cmp["links_with_traffic_model"]
    assert cmp["max_rel_error"] <= 0.10  # keepalives and ARP are the only other bytes
    # configurations a user can take home: one per switch, plane-p ToRs peer only plane p
    names = bgp.write_configs(plan, tmp_path)
    assert len(names) == st["switches"]
    tor0 = (tmp_path / "t0.conf").read_text()
    assert "router bgp" in tor0 and "maximum-paths 64" in tor0
    assert tor0.count("remote-as") == 2 and tor0.count("description pod0/agg-p0-") == 2
    assert "agg-p1-" not in tor0 and "ip route 10.0.0.1/32" in tor0
    pids = lab_pids(plan.prefix)
    assert len(pids) == st["processes"]
    service.down(lab_name)
    assert leftovers(plan.prefix, pids) == NOTHING


def test_single_plane_polarizes_the_tor_ports(lab_name):
    service.up(
        LabSpec(
            name=lab_name,
            control="static",
            fabric={"dual_plane": False},
            hosts_per_segment=4,
            ecmp_seeds="same",
        )
    )
    out = service.traffic(
        lab_name, "polarization", size=60e3, connections=4, routing="ecmp", rate=1e6
    )
    assert out["measured"]["tor_port_load_ratio"] >= 2
    assert out["model"]["tor_port_load_ratio"] == pytest.approx(
        out["measured"]["tor_port_load_ratio"], rel=0.05
    )
    assert out["model_vs_measured"]["max_rel_error"] <= 0.10
