"""Routing each connection once (the engine's shortcut) gives every flow the path it gets
when all flows are routed: checked for every registered policy that declares it."""

import numpy as np
import pytest

from hpn.engine.paths import connections
from hpn.routing import ROUTERS, make_router
from hpn.topology import build
from hpn.workload.collectives import conn_keys


@pytest.mark.parametrize("name", sorted(ROUTERS))
def test_routing_connections_once_matches_routing_every_flow(name):
    router = make_router(name, seed=3)
    if not getattr(router, "per_connection", False):
        pytest.skip(f"{name} routes flow by flow (not per connection)")
    fabric = build("hpn", segments=2)
    rng = np.random.default_rng(5)
    gpus = np.flatnonzero(fabric.nodes.kind == 0)
    src = rng.choice(gpus, 400)
    dst = rng.choice(gpus, 400)
    keep = fabric.nodes.host[src] != fabric.nodes.host[dst]
    src, dst = src[keep], dst[keep]
    qp = rng.integers(0, 3, len(src))
    # every connection repeated 1-4 times, shuffled
    rep = rng.integers(1, 5, len(src))
    src, dst, qp = (np.repeat(x, rep) for x in (src, dst, qp))
    order = rng.permutation(len(src))
    src, dst, qp = src[order], dst[order], qp[order]
    keys = conn_keys(src, dst, qp)
    full = make_router(name, seed=3).route(fabric, src, dst, keys)
    first, inv = connections(src, dst, keys, fabric.num_nodes)
    assert len(first) < len(src)
    once = make_router(name, seed=3).route(fabric, src[first], dst[first], keys[first])
    for i in range(len(src)):
        np.testing.assert_array_equal(full[i], once[inv[i]])
