"""Linux's multipath hash from the kernel's source predicts the lab's paths seed for seed."""

from __future__ import annotations

import numpy as np
import pytest

from hpn.lab import bgp, service
from hpn.lab.build import load
from hpn.lab.kernelhash import flow_hash, predict_paths, select, siphash24
from hpn.lab.learn import learn_paths
from hpn.lab.plan import LabSpec


def test_siphash_reference_vectors():
    # SipHash-2-4 paper (Aumasson, Bernstein), App. A: key 00..0f, message 00..0e
    k0 = int.from_bytes(bytes(range(8)), "little")
    k1 = int.from_bytes(bytes(range(8, 16)), "little")
    assert siphash24(bytes(range(15)), k0, k1) == 0xA129CA6149BE45E5
    assert siphash24(b"", k0, k1) == 0x726FDB47DD0E0E31  # the first of its 64 vectors


def test_hash_is_direction_free_and_threshold_selects_evenly():
    a = flow_hash("10.0.0.1", "10.0.1.2", 5000, 4791, 17, 7)
    assert a == flow_hash("10.0.1.2", "10.0.0.1", 4791, 5000, 17, 7) < 2**31
    assert a != flow_hash("10.0.0.1", "10.0.1.2", 5000, 4791, 17, 8)
    assert [select(h, 3) for h in (0, 715827882, 715827883, 2**31 - 1)] == [0, 0, 1, 2]
    picks = [select(flow_hash("10.0.0.1", "10.0.1.2", p, 4791, 17, 1), 4) for p in range(4000)]
    assert (np.abs(np.bincount(picks, minlength=4) - 1000) < 120).all()


@pytest.mark.lab
@pytest.mark.parametrize("control", ["static", "bgp"])
def test_predicts_at_least_1000_route_get_answers(lab_name, control):
    if control == "bgp" and bgp.missing():
        pytest.skip(bgp.missing())
    service.up(LabSpec(name=lab_name, control=control, hosts_per_segment=3, seed=11))
    plan, _ = load(lab_name)
    e = np.array([int(n) for n in plan.endpoints])
    rng = np.random.default_rng(5)
    src, dst = rng.choice(e, 600), rng.choice(e, 600)
    keep = plan.ns_of_node[src] != plan.ns_of_node[dst]
    src, dst = src[keep], dst[keep]
    sport = rng.integers(1024, 65536, len(src))
    asked, ok = learn_paths(plan, src, dst, sport)  # ip route get at every hop
    assert ok.all() and int(asked.lengths.sum()) >= 1000
    ours, ok2 = predict_paths(plan, src, dst, sport)
    assert ok2.all()
    assert np.array_equal(asked.offsets, ours.offsets)
    assert np.array_equal(asked.links, ours.links)  # every hop of every flow
