"""Traffic patterns as FlowDAGs."""

import numpy as np
import pytest

from hpn.engine import simulate
from hpn.errors import InputError
from hpn.topology import build
from hpn.workload import PATTERNS, endpoints, make_pattern


def test_endpoints_skip_backup_hosts():
    f = build("hpn", segments=2)
    ep = endpoints(f)
    assert len(ep) == 2 * 128 * 8
    assert not f.nodes.backup[ep].any()


def test_permutation_sends_once_and_receives_once_never_to_itself():
    f = build("fat-tree", k=8)
    t = make_pattern("permutation", f, 1e6, seed=3).tasks
    ep = endpoints(f)
    assert sorted(t.src) == sorted(ep) and sorted(t.dst) == sorted(ep)
    assert (t.src != t.dst).all()
    t2 = make_pattern("permutation", f, 1e6, seed=4).tasks
    assert not np.array_equal(t.dst, t2.dst)


def test_all_to_all_incast_and_rail_ring_shapes():
    f = build("hpn", segments=2)
    a2a = make_pattern("all-to-all", f, 1e3, limit=16).tasks
    assert len(a2a.size) == 16 * 15
    inc = make_pattern("incast", f, 1e3, seed=1).tasks
    assert len(np.unique(inc.dst)) == 1 and len(inc.src) == len(endpoints(f)) - 1
    ring = make_pattern("rail-ring", f, 1e3).tasks
    assert len(np.unique(ring.group)) == 8  # one coupled ring per rail
    assert (f.nodes.rail[ring.src] == f.nodes.rail[ring.dst]).all()


def test_rail_ring_runs_at_the_port_rate():
    f = build("hpn", segments=2)
    dag = make_pattern("rail-ring", f, 2e6)
    r = simulate(f, dag, seed=1)
    # each ring edge is a single 200G port path (ECMP picks one port per flow); ring
    # members of a rail share no link, so every flow runs at the port rate
    assert np.median(r.fct) == pytest.approx(2e6 * 8 / 200e9 + r.path_latency.max(), rel=0.02)


def test_refusals():
    f = build("fat-tree", k=4)
    with pytest.raises(InputError, match="pattern"):
        make_pattern("nope", f, 1.0)
    with pytest.raises(InputError, match="size"):
        make_pattern("permutation", f, -1.0)
    with pytest.raises(InputError, match="endpoints"):
        make_pattern("permutation", f, 1.0, limit=1)
    with pytest.raises(InputError, match="flows"):
        make_pattern("all-to-all", build("hpn"), 1.0)
    assert set(PATTERNS) == {"permutation", "all-to-all", "incast", "rail-ring"}
