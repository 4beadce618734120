"""Whole simulations on random small fabrics and flow sets (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine import FlowDAG, simulate
from tests.engine.fabrics import random_fabric


@st.composite
def scenarios(draw):
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    n_switch, n_host = draw(st.integers(1, 5)), draw(st.integers(2, 7))
    fabric = random_fabric(rng, n_switch, n_host)
    n = draw(st.integers(1, 14))
    src = rng.integers(0, n_host, n)
    dst = (src + rng.integers(1, n_host, n)) % n_host
    size = rng.choice([0.0, 1e3, 1e5, 1e6, 3e6], n)
    delay = rng.choice([0.0, 0.0, 1e-5, 2e-4], n)
    return fabric, src, dst, size, delay, seed


def run(fabric, src, dst, size, delay, seed, order=None):
    order = np.arange(len(src)) if order is None else order
    dag = FlowDAG()
    dag.add_flows(src[order], dst[order], size[order], delay=delay[order], keys=order)
    r = simulate(fabric, dag, "ecmp", seed=seed)
    back = np.argsort(order)
    return r, back


@settings(max_examples=120, deadline=None)
@given(scenarios())
def test_capacity_respected_and_bytes_conserved(sc):
    fabric, src, dst, size, delay, seed = sc
    r, _ = run(*sc)
    assert (r.link_peak_util <= 1 + 1e-9).all()
    expect = np.bincount(
        r.paths.links, weights=size[r.paths.flow_of_hop], minlength=fabric.num_links
    )
    np.testing.assert_allclose(r.link_bytes, expect, rtol=1e-6, atol=1e-3)
    # a flow never finishes sooner than alone on its path
    cap = r.paths.per_flow_min(fabric.links.capacity)
    assert (r.fct >= 8 * size / cap + r.path_latency - 1e-12).all()
    assert (r.start >= delay - 1e-15).all()


@settings(max_examples=80, deadline=None)
@given(scenarios(), st.randoms(use_true_random=False))
def test_results_do_not_depend_on_flow_order(sc, rnd):
    r1, _ = run(*sc)
    perm = list(range(len(sc[1])))
    rnd.shuffle(perm)
    r2, back = run(*sc, order=np.array(perm))
    np.testing.assert_array_equal(r1.paths.lengths, r2.paths.lengths[back])
    np.testing.assert_allclose(r2.finish[back], r1.finish, rtol=1e-9, atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_while_sharing_every_flow_has_a_saturated_link_where_it_is_maximal(sc):
    """All flows start at t = 0: the first allocation is max-min fair and the first flow to
    end does so at size / its max-min rate."""
    fabric, src, dst, size, delay, seed = sc
    size = np.maximum(size, 1e3)
    dag = FlowDAG()
    dag.add_flows(src, dst, size)
    r = simulate(fabric, dag, "ecmp", seed=seed)
    from hpn.engine.maxmin import incidence, maxmin_rates

    p = r.paths
    a = incidence(p.flow_of_hop, p.links, len(size), fabric.num_links)
    rate = maxmin_rates(a, fabric.links.capacity / 8)
    # the flows finishing first do so at size / rate exactly
    i = np.argmin(size / rate)
    assert r.tx_end[i] == np.min(r.tx_end)
    assert abs(r.tx_end[i] - size[i] / rate[i]) <= 1e-9 * r.tx_end[i]
    load = a.T @ rate
    cap = fabric.links.capacity / 8
    assert (load <= cap * (1 + 1e-9)).all()
