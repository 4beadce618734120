"""Max-min fair rates: feasibility and optimality on random incidences (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine.maxmin import incidence, maxmin_rates


@st.composite
def problems(draw):
    n_users = draw(st.integers(1, 12))
    n_links = draw(st.integers(1, 8))
    rows, cols = [], []
    for u in range(n_users):
        links = draw(st.lists(st.integers(0, n_links - 1), min_size=1, max_size=4, unique=True))
        rows += [u] * len(links)
        cols += links
    cap = draw(
        st.lists(st.sampled_from([1.0, 2.5, 4.0, 10.0, 40.0]), min_size=n_links, max_size=n_links)
    )
    return np.array(rows), np.array(cols), n_users, np.array(cap)


@settings(max_examples=300, deadline=None)
@given(problems())
def test_feasible_and_every_user_has_a_bottleneck_where_it_is_maximal(p):
    rows, cols, n_users, cap = p
    a = incidence(rows, cols, n_users, len(cap))
    rate = maxmin_rates(a, cap)
    load = a.T @ rate
    assert (load <= cap * (1 + 1e-9)).all()
    dense = a.toarray() > 0
    for u in range(n_users):
        links = np.flatnonzero(dense[u])
        ok = False
        for lk in links:
            saturated = load[lk] >= cap[lk] * (1 - 1e-9)
            users = np.flatnonzero(dense[:, lk])
            if saturated and rate[u] >= rate[users].max() * (1 - 1e-9):
                ok = True
        assert ok, (u, rate, load, cap)


@settings(max_examples=100, deadline=None)
@given(problems(), st.randoms(use_true_random=False))
def test_rates_do_not_depend_on_user_order(p, rnd):
    rows, cols, n_users, cap = p
    perm = list(range(n_users))
    rnd.shuffle(perm)
    perm = np.array(perm)
    inv = np.argsort(perm)  # new index of old user u is inv[u]
    r1 = maxmin_rates(incidence(rows, cols, n_users, len(cap)), cap)
    r2 = maxmin_rates(incidence(inv[rows], cols, n_users, len(cap)), cap)
    np.testing.assert_allclose(r2[inv], r1, rtol=1e-12)


def test_weighted_user_counts_once_per_member():
    # a group with 2 members on link 0 and one solo flow: 3 shares of capacity 3 -> 1 each
    a = incidence(np.array([0, 0, 1]), np.array([0, 0, 0]), 2, 1)
    np.testing.assert_allclose(maxmin_rates(a, np.array([3.0])), [1.0, 1.0])


def test_zero_capacity_gives_zero_and_unlinked_users_are_unbounded():
    a = incidence(np.array([0, 1]), np.array([0, 1]), 3, 2)
    r = maxmin_rates(a, np.array([0.0, 5.0]))
    assert r[0] == 0 and r[1] == 5 and np.isinf(r[2])
