"""The lab's plan from the fabric arrays: names, addresses, seeds and equal-cost next hops
(no kernel needed)."""

from __future__ import annotations

import ipaddress

import numpy as np
import pytest

from hpn.errors import InputError
from hpn.lab.plan import IFNAMSIZ, LabSpec, make_plan
from hpn.lab.routes import switch_next_hops
from hpn.topology.fabric import LinkTier, NodeKind


def _plan(**kw):
    return make_plan(LabSpec(**kw))


def test_names_carry_the_prefix_and_fit():
    plan = _plan(name="ab12", segments=2, hosts_per_segment=3, rails=2, aggs_per_plane=3)
    assert all(n.startswith("hlab12-") for n in plan.namespaces)
    assert len(set(plan.namespaces)) == len(plan.namespaces)
    assert all(n.startswith("hlab12") and len(n) <= IFNAMSIZ for n in plan.ifname.values())
    per_ns = {}
    for ln, name in plan.ifname.items():
        ns = int(plan.ns_of_node[plan.fabric.links.src[ln]])
        per_ns.setdefault(ns, []).append(name)
    assert all(len(v) == len(set(v)) for v in per_ns.values())


def test_counts_follow_the_scale_down():
    plan = _plan(segments=2, hosts_per_segment=2, rails=1, aggs_per_plane=2)
    # 4 hosts, 2 segments x 1 rail x 2 ToRs, 2 planes x 2 Aggs
    assert plan.ns_role.count("host") == 4
    assert plan.ns_role.count("tor") == 4 and plan.ns_role.count("agg") == 4
    # 4 NICs x 2 ports + 4 ToRs x 2 uplinks, both directions
    assert len(plan.links) == 2 * (8 + 8)
    single = _plan(fabric={"dual_tor": False})
    assert single.ns_role.count("tor") == 2


def test_one_subnet_per_tor_pair_and_a_shared_nic_ip():
    from hpn.routing.addressing import address_plan

    plan = _plan(segments=3, hosts_per_segment=4, rails=2)
    f = plan.fabric
    gpus = np.flatnonzero(f.nodes.kind == NodeKind.GPU)
    ips = plan.nic_ip[gpus]
    assert len(np.unique(ips)) == len(gpus) and (ips > 0).all()
    assert len(plan.subnets) == 3 * 2  # segments x rails ToR pairs
    assert np.array_equal(ips, address_plan(f).ip[gpus])  # the model's own addresses
    assert plan.subnet_len == 29  # 4 NICs per pair, network and broadcast: a block of 8
    for net, tors in plan.subnets:
        assert len(tors) == 2
        block = ipaddress.ip_network(plan.cidr(net))
        served = {int(f.links.src[ln]) for ln in plan.links if f.links.dst[ln] in tors}
        served = {n for n in served if f.nodes.kind[n] == NodeKind.GPU}
        assert {ipaddress.IPv4Address(int(plan.nic_ip[n])) in block for n in served} == {True}


def test_link_ends_are_slash31_pairs():
    plan = _plan()
    for ln in plan.links[0::2]:
        a, b = int(plan.end_ip[ln]), int(plan.end_ip[ln ^ 1])
        assert b == a + 1 and a % 2 == 0


def test_seed_modes():
    nodes_of = lambda p, k: np.flatnonzero(p.fabric.nodes.kind == k)  # noqa: E731
    same = _plan(ecmp_seeds="same")
    sw = np.concatenate([nodes_of(same, NodeKind.TOR), nodes_of(same, NodeKind.AGG)])
    assert len(set(same.kernel_seed[sw].tolist())) == 1
    per = _plan(ecmp_seeds="switch")
    assert len(set(per.kernel_seed[sw].tolist())) == len(sw)
    assert (per.kernel_seed[sw] != 0).all()


def test_dual_plane_next_hops():
    plan = _plan(segments=2, hosts_per_segment=2, aggs_per_plane=3)
    f = plan.fabric
    hops = switch_next_hops(plan)
    for (node, s), links in hops.items():
        tors = plan.subnets[s][1]
        kind = f.nodes.kind[node]
        if node in tors:
            assert links == []
        elif kind == NodeKind.AGG:  # plane p: only the pair's plane-p ToR
            assert len(links) == 1
            assert f.nodes.plane[f.links.dst[links[0]]] == f.nodes.plane[node]
        elif kind == NodeKind.TOR:  # every uplink of its plane
            assert len(links) == 3
            assert set(f.links.tier[links]) == {LinkTier.TOR_AGG}


def test_single_plane_agg_has_both_tors():
    plan = _plan(fabric={"dual_plane": False}, aggs_per_plane=2)
    f = plan.fabric
    for (node, _s), links in switch_next_hops(plan).items():
        if f.nodes.kind[node] == NodeKind.AGG:
            assert len(links) == 2


def test_bad_input_names_the_field():
    with pytest.raises(InputError, match="lab"):
        _plan(segments=16, hosts_per_segment=32, rails=8)
    with pytest.raises(ValueError, match="name"):
        LabSpec(name="Bad-Name")


def test_configs_need_no_root(tmp_path):
    from hpn.lab.service import configs

    out = configs(LabSpec(segments=2, hosts_per_segment=2, aggs_per_plane=2), tmp_path)
    assert out["switches"] == 8 and len(out["files"]) == 16
    asns = out["asns"]
    tors = [v for k, v in asns.items() if k.startswith("t")]
    aggs = [v for k, v in asns.items() if k.startswith("a")]
    assert len(set(tors)) == 4  # one per ToR
    assert len(set(aggs)) == 2  # one per plane: the Aggs of a plane share it
    t0 = (tmp_path / "t0.conf").read_text()
    # a ToR announces its pair's subnet and a /32 per NIC it serves, through that NIC's link
    assert "network 10.0.0.0/30" in t0 and "redistribute static" in t0
    assert t0.count("/32 ") == 2 and "ip address 100.64.0." in t0
    routes = (tmp_path / "a0.routes").read_text().splitlines()
    assert routes == [
        "route replace 10.0.0.0/30 via 100.64.0.24 dev hl0t0",
        "route replace 10.0.0.4/30 via 100.64.0.32 dev hl0t2",
    ]


def test_failure_targets():
    from hpn.lab.fail import parse_target

    plan = _plan(segments=2, hosts_per_segment=2)
    kind, links, _ = parse_target(plan, "link:host=1,nic=0,port=1")
    f = plan.fabric
    (ln,) = links  # the ToR -> NIC direction of host 1's port-1 link
    assert kind == "link" and f.node_name(int(f.links.dst[ln])) == "host1/gpu0"
    assert f.links.port[ln] == 1
    kind, links, _ = parse_target(plan, "tor:segment=1,rail=0,plane=0")
    assert kind == "tor" and len(links) == 2 + 2  # 2 NIC ports, 2 uplinks
    for bad, field in (
        ("cable:host=0", "target"),
        ("link:host=9,nic=0,port=0", "target"),
        ("link:host=0,nic=0,port=x", "target"),
    ):
        with pytest.raises(InputError) as e:
            parse_target(plan, bad)
        assert e.value.field == field


def test_a_link_dropped_both_ways_is_one_nft_transaction(monkeypatch):
    """Both directions of a silent link start in one ``nft -f`` (one namespace, ingress and
    egress of the same interface); one direction alone is one ingress chain at its receiver."""
    from hpn.lab import impair, netns

    plan = _plan(segments=2, hosts_per_segment=2, rails=1, aggs_per_plane=2)
    calls: list[tuple[list[str], str]] = []
    monkeypatch.setattr(netns, "run", lambda cmd, text=None, **kw: calls.append((cmd, text)))
    ln = int(plan.links[0])
    down = ln & ~1  # the even link of the pair and its reverse
    impair.drop(plan, [down, down ^ 1], loss=1.0)
    assert len(calls) == 1
    cmd, text = calls[0]
    ns, dev = impair._receiver(plan, down)
    assert cmd[:4] == ["ip", "netns", "exec", ns] and cmd[4:] == ["nft", "-f", "-"]
    assert text.count("hook ingress") == 1 and text.count("hook egress") == 1
    assert text.count(f'device "{dev}"') == 2 and f"table netdev {impair.TABLE}{dev}" in text
    # the egress end is the sender of the reverse link: the same namespace and interface
    assert impair._receiver(plan, down ^ 1)[1] != dev and plan.ifname[down ^ 1] == dev
    calls.clear()
    impair.drop(plan, [down ^ 1], loss=0.3)
    ((cmd, text),) = calls
    assert cmd[3] == impair._receiver(plan, down ^ 1)[0]
    assert "hook egress" not in text and "numgen random mod 10000 < 3000 drop" in text


def test_bfd_pending_until_every_session_is_up_at_its_interval(monkeypatch):
    """A lab with BFD is converged only once each BGP session's BFD runs at the lab's rate:
    a session still at the slow (1 s) pre-up rate would find a silent failure in 3 s."""
    import json

    from hpn.lab import bgp

    plan = _plan(segments=2, hosts_per_segment=2, rails=1, aggs_per_plane=2, control="bgp",
                 bfd=True, bfd_interval_ms=100)  # fmt: skip
    f = plan.fabric
    sw = {plan.namespaces[i]: plan.nodes_in_ns[i][0]
          for i, r in enumerate(plan.ns_role) if r != "host"}  # fmt: skip
    state: dict[str, tuple[str, int]] = {}  # a peer address -> (status, its tx ms)

    def vty(plan_, ns, command, timeout=30.0, node=""):
        assert command == "show bfd peers json"
        peers = []
        for ln in bgp._peers(plan, sw[ns]):
            status, tx = state.get(plan.link_ip(ln ^ 1), ("up", 100))
            peers.append({"peer": plan.link_ip(ln ^ 1), "status": status,
                          "remote-transmit-interval": tx})  # fmt: skip
        return json.dumps(peers)

    monkeypatch.setattr(bgp, "vty", vty)
    assert bgp.bfd_pending(plan) == []
    tor = next(n for n in sw.values() if f.nodes.kind[n] == NodeKind.TOR)
    ln = bgp._peers(plan, tor)[0]
    state[plan.link_ip(ln ^ 1)] = ("init", 1000)
    (slow,) = bgp.bfd_pending(plan)
    assert slow.startswith(f"{f.node_name(tor)}->") and "(init, 1000 ms)" in slow
    state[plan.link_ip(ln ^ 1)] = ("up", 1000)  # up, the poll to 100 ms not yet done
    assert len(bgp.bfd_pending(plan)) == 1
    state.clear()
    no_bfd = _plan(segments=2, hosts_per_segment=2, rails=1, aggs_per_plane=2, control="bgp")
    assert bgp.bfd_pending(no_bfd) == []


def test_a_gap_is_the_senders_move_only_where_the_models_hold_ends():
    """A connection that pauses 0.3 s and resumes before the repair was re-routed by the
    fabric under ecmp (the model holds a cut-off connection until repair), but moved by its
    sender under hpn's re-selection (a finite hold)."""
    import math
    from types import SimpleNamespace

    from hpn.lab.fail import _compare

    steady = np.arange(0.0, 2.0, 0.01)
    paused = steady[(steady < 0.55) | (steady > 0.85)]
    cut_off = steady[(steady < 0.55) | (steady > 1.5)]
    tr = SimpleNamespace(arrivals=[steady, paused, cut_off])
    cut = np.array([False, False, True])
    ecmp = _compare(tr, {"cut": cut, "hold": math.inf, "crossing": 2}, 0.5, 1.5, "link")
    assert (ecmp["flows_measured"], ecmp["flows_agree"]) == (1, 3) and ecmp["hold_s"] is None
    hpn = _compare(tr, {"cut": cut, "hold": 0.3, "crossing": 2}, 0.5, 1.5, "link")
    assert (hpn["flows_measured"], hpn["flows_agree"]) == (2, 2) and hpn["hold_s"] == 0.3
    assert hpn["measured_gap_s"] == pytest.approx(1.0, abs=0.011)  # the cut-off one's


def test_a_failed_switch_loses_every_link_in_its_first_batch(monkeypatch):
    """Setting a switch's links down starts in the switch's own namespace, all its ports in
    one ``ip -batch``: each port's veth peer loses carrier with it, so its neighbours skip it
    at once, not one namespace after another."""
    from hpn.lab import netns
    from hpn.lab.fail import parse_target
    from hpn.lab.linkctl import _set_now

    plan = make_plan(LabSpec(name="x", control="bgp", fabric={"pods": 2}))
    _, links, _ = parse_target(plan, "core:index=3")
    calls: list[tuple[list[str], str]] = []
    monkeypatch.setattr(netns, "ip_batch", lambda cmds, ns=None: calls.append((cmds, ns)))
    _set_now(plan, links, "down", {})
    nodes = plan.fabric.nodes
    core = next(n for n in range(plan.fabric.num_nodes)
                if nodes.kind[n] == NodeKind.CORE and nodes.index[n] == 3)  # fmt: skip
    cmds, ns = calls[0]
    assert ns == plan.ns(core)
    ports = {plan.ifname[ln] for ln in links if int(plan.fabric.links.src[ln]) == core}
    ports |= {plan.ifname[ln ^ 1] for ln in links if int(plan.fabric.links.dst[ln]) == core}
    assert {c.split()[2] for c in cmds} == ports and len(ports) >= 2
    assert all(cmd.endswith(" down") for batch, _ in calls for cmd in batch)
