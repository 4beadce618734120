"""The ``rr`` bond: each NIC's connections take its ports in turn (mlx5 LAG's per-QP round
robin), whatever the order of the flows in the call; flows of one connection share its port."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine.paths import connections
from hpn.routing import make_router
from hpn.routing.ecmp import rr_ranks
from hpn.topology import build
from hpn.workload.collectives import Params
from hpn.workload.collectives.placement import host_gpus
from hpn.workload.collectives.run import collective_dag

RR = {"bond_hash": "rr"}


@pytest.fixture(scope="module")
def fabric():
    return build("hpn", segments=2)


def _ports(f, paths) -> np.ndarray:
    return f.links.port[paths.links[paths.offsets[:-1]]].astype(np.int64)


def _per_nic(f, src, paths) -> dict[int, list[int]]:
    port = _ports(f, paths)
    return {int(s): np.bincount(port[src == s], minlength=2).tolist() for s in np.unique(src)}


def _collective_connections(f, op):
    """The distinct connections (src, dst, key) between hosts of a 4-host ``op`` across the
    2-segment boundary (NCCL 2.18.3's choice), in the order the engine routes them."""
    ctx, _, _ = collective_dag(f, op, 2**26, 32, params=Params(nccl="2.18.3"), first_host=126)
    t = ctx.dag.tasks
    first, _ = connections(t.src, t.dst, t.keys, f.num_nodes)
    first = first[f.nodes.host[t.src[first]] != f.nodes.host[t.dst[first]]]  # over the NICs
    return t.src[first], t.dst[first], t.keys[first]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("routing", ["ecmp", "hpn"])
@pytest.mark.parametrize(("op", "most"), [("allreduce", 16), ("multi-allreduce", 8)])
def test_collective_connections_split_evenly_per_nic(fabric, routing, compiled, op, most):
    """Per NIC, the connections of a collective split evenly over its ports. The flow-index
    parity put up to 12 of a NIC's 16 AllReduce connections on one port (ECMP), and HPN's
    router, walking its flows again by index, up to all 8 of a NIC's Multi-AllReduce ones."""
    src, dst, keys = _collective_connections(fabric, op)
    r = make_router(routing, seed=1, hashing=RR)
    r.compiled = compiled
    per = _per_nic(fabric, src, r.route(fabric, src, dst, keys))
    assert max(sum(c) for c in per.values()) == most
    assert all(abs(a - b) <= 1 for a, b in per.values())


@pytest.mark.parametrize("routing", ["ecmp", "hpn"])
def test_interleaved_nics_each_alternate(fabric, routing):
    """Two NICs whose flows alternate in the call (a NIC's flows all even or all odd): each
    NIC's 16 connections still alternate over its ports (the flow's index gave 16 / 0)."""
    hg = host_gpus(fabric)
    src = np.tile(hg[:2, 0], 16)  # NIC a, NIC b, NIC a, ...
    dst = np.repeat(hg[130:146, 0], 2)
    per = _per_nic(fabric, src, make_router(routing, seed=1, hashing=RR).route(fabric, src, dst))
    assert list(per.values()) == [[8, 8], [8, 8]]


def test_flows_of_one_connection_share_its_port(fabric):
    hg = host_gpus(fabric)
    src = np.full(6, hg[0, 0])
    dst = np.full(6, hg[130, 0])
    keys = np.array([5, 9, 5, 9, 5, 11])  # connections 5, 9, 11: ranks 0, 1, 2
    port = _ports(fabric, make_router("ecmp", seed=1, hashing=RR).route(fabric, src, dst, keys))
    assert port.tolist() == [0, 1, 0, 1, 0, 0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 30)), min_size=1, max_size=60))
def test_rr_ranks_number_each_nics_connections(rows):
    """Per source, the distinct keys get 0, 1, ... in key order; equal keys equal ranks."""
    src = np.array([r[0] for r in rows])
    conn = np.array([r[1] for r in rows])
    got = rr_ranks(src, conn)
    for s in set(src.tolist()):
        keys = sorted(set(conn[src == s].tolist()))
        want = [keys.index(k) for k in conn[src == s]]
        assert got[src == s].tolist() == want
