"""Linux's multipath hash from the kernel's source (``--ecmp-hash linux``) predicts the lab's
paths seed for seed: the routing layer's router on the lab's fabric, and the walk over the
kernels' own route tables, both against ``ip route get`` at every hop."""

from __future__ import annotations

import ipaddress

import numpy as np
import pytest

from hpn.lab import bgp, service
from hpn.lab.build import load
from hpn.lab.kernelhash import predict_paths
from hpn.lab.learn import learn_paths
from hpn.lab.plan import LabSpec, make_plan
from hpn.routing import router_for
from hpn.routing.ecmp import HashConfig
from hpn.routing.linuxhash import flow_hash, kernel_seed, select, siphash24

LINUX = {"tor_hash": "linux", "agg_hash": "linux", "core_hash": "linux"}


def _ip(text: str) -> np.ndarray:
    return np.array([int(ipaddress.IPv4Address(text))], np.uint32)


def test_siphash_reference_vectors():
    # SipHash-2-4 paper (Aumasson, Bernstein), App. A: key 00..0f, message 00..0e
    k0 = int.from_bytes(bytes(range(8)), "little")
    k1 = int.from_bytes(bytes(range(8, 16)), "little")
    msg = bytes(range(15))
    words = np.frombuffer(msg[:8], "<u8").astype(np.uint64).reshape(1, 1)
    tail = np.array([int.from_bytes(msg[8:], "little")], np.uint64)
    assert int(siphash24(words, tail, 15, k0, k1)[0]) == 0xA129CA6149BE45E5
    empty = np.zeros((1, 0), np.uint64)
    assert int(siphash24(empty, np.zeros(1, np.uint64), 0, k0, k1)[0]) == 0x726FDB47DD0E0E31


def test_hash_is_direction_free_and_threshold_selects_evenly():
    a = flow_hash(_ip("10.0.0.1"), _ip("10.0.1.2"), 5000, 4791, 17, 7)
    assert a[0] == flow_hash(_ip("10.0.1.2"), _ip("10.0.0.1"), 4791, 5000, 17, 7)[0] < 2**31
    assert a[0] != flow_hash(_ip("10.0.0.1"), _ip("10.0.1.2"), 5000, 4791, 17, 8)[0]
    assert select(np.array([0, 715827882, 715827883, 2**31 - 1]), 3).tolist() == [0, 0, 1, 2]
    h = flow_hash(np.full(4000, _ip("10.0.0.1")), np.full(4000, _ip("10.0.1.2")),
                  np.arange(4000), 4791, 17, 1)  # fmt: skip
    assert (np.abs(np.bincount(select(h, 4), minlength=4) - 1000) < 120).all()
    # the thresholds by brute force: hop i takes hashes up to round((i+1) 2^31 / n) - 1
    for n in (1, 2, 3, 5, 7, 8, 16):
        bounds = [round((i + 1) * 2**31 / n) - 1 for i in range(n)]
        edges = np.array([b + d for b in bounds[:-1] for d in (0, 1)] + [2**31 - 1])
        want = [i + d for i in range(n - 1) for d in (0, 1)] + [n - 1]
        assert select(edges, n).tolist() == want


def test_kernel_seeds_are_never_zero_and_keep_equality():
    s = kernel_seed(np.array([0, 0xFFFFFFFF, 5, 5, 0xFFFFFFFE], np.uint64))
    assert s.tolist() == [1, 1, 6, 6, 0xFFFFFFFF]


def test_linux_everywhere_makes_the_hosts_linux_too():
    assert HashConfig(**LINUX).bond_hash == "linux"
    assert HashConfig(**LINUX, bond_hash="l34").bond_hash == "l34"
    assert HashConfig(tor_hash="linux").bond_hash == "l34"


def test_the_lab_seeds_its_kernels_as_the_model_does():
    plan = make_plan(LabSpec(seed=3, ecmp_seeds="tier"))
    r = router_for(plan.fabric, "ecmp", seed=3, hashing={**LINUX, "seeds": "tier"})
    nodes = np.flatnonzero(plan.ns_of_node >= 0)
    assert np.array_equal(plan.kernel_seed[nodes], r.kernel_seeds(plan.fabric, nodes))
    assert (plan.kernel_seed[nodes] > 0).all()


def _check(lab_name: str, spec: LabSpec, flows: int) -> None:
    service.up(spec)
    plan, _ = load(lab_name)
    e = np.array([int(n) for n in plan.endpoints])
    rng = np.random.default_rng(5)
    src, dst = rng.choice(e, flows), rng.choice(e, flows)
    keep = plan.ns_of_node[src] != plan.ns_of_node[dst]
    src, dst = src[keep], dst[keep]
    sport = rng.integers(1024, 65536, len(src))
    asked, ok = learn_paths(plan, src, dst, sport)  # ip route get at every hop
    assert ok.all() and int(asked.lengths.sum()) >= 1000
    ours, ok2 = predict_paths(plan, src, dst, sport)  # the kernels' tables, the hash
    assert ok2.all()
    assert np.array_equal(asked.offsets, ours.offsets)
    assert np.array_equal(asked.links, ours.links)  # every hop of every flow
    # the model alone: its own fabric, addresses, seeds and equal-cost sets, the kernel's hash
    r = router_for(plan.fabric, "ecmp", seed=spec.seed, hashing={**LINUX, "seeds": spec.ecmp_seeds})
    model = r.route_sports(plan.fabric, src, dst, sport)
    assert np.array_equal(asked.offsets, model.offsets)
    assert np.array_equal(asked.links, model.links)


@pytest.mark.lab
@pytest.mark.parametrize("control", ["static", "bgp"])
def test_predicts_at_least_1000_route_get_answers(lab_name, control):
    if control == "bgp" and bgp.missing():
        pytest.skip(bgp.missing())
    _check(lab_name, LabSpec(name=lab_name, control=control, hosts_per_segment=3, seed=11), 600)


@pytest.mark.lab
@pytest.mark.parametrize("control", ["static", "bgp"])
def test_predicts_a_two_pod_lab_through_its_cores(lab_name, control):
    if control == "bgp" and bgp.missing():
        pytest.skip(bgp.missing())
    # with BGP, zebra's inline next hops are sorted by address, hence in the model's link order
    spec = LabSpec(name=lab_name, control=control, fabric={"pods": 2}, hosts_per_segment=3,
                   seed=11, ecmp_seeds="tier")  # fmt: skip
    _check(lab_name, spec, 500)
