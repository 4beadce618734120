"""``--host-order``: the launcher's host list that NCCL chains into rings (placement.host_order)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.topology import build
from hpn.workload.collectives import place
from hpn.workload.collectives.placement import host_order
from tests.conftest import assert_input_error, run_cli


@given(st.integers(1, 64), st.integers(0, 20), st.integers(0, 2**32))
def test_orders_are_permutations(n, k, seed):
    for order in ("fabric", "random", f"swaps={k}"):
        got = host_order(n, order, seed)
        assert sorted(got.tolist()) == list(range(n))
    assert (host_order(n, "fabric", seed) == np.arange(n)).all()
    # K transpositions move at most 2K hosts
    assert (host_order(n, f"swaps={k}", seed) != np.arange(n)).sum() <= 2 * k


def test_same_seed_same_order_and_bad_syntax():
    assert (host_order(56, "random", 3) == host_order(56, "random", 3)).all()
    assert (host_order(56, "swaps=0", 3) == np.arange(56)).all()
    for bad in ("shuffle", "swaps=", "swaps=-1", "fabric=2", "random=1"):
        with pytest.raises(InputError, match="host_order: must be fabric, random or swaps=K"):
            host_order(8, bad)


def test_place_permutes_hosts_keeps_local_ranks():
    f = build("dcn-plus")
    base = place(f, 64).gpus
    perm = host_order(8, "random", 5)
    got = place(f, 64, order="random", order_seed=5).gpus
    assert (got == base[perm]).all()  # whole hosts move; local rank i stays GPU i


def test_cli_host_order_moves_dcn_plus_not_hpn():
    """Fabric order keeps DCN+ rings inside segments; a random host list sends more ring edges
    over the Agg tier, where QPs collide (docs/guide/training.md, DCN+ above 1 GiB)."""
    args = ("collective", "--gpus", "448", "--sizes", "4G", "--algo", "ring", "--json")
    bw = {}
    for preset in ("dcn-plus", "hpn"):
        for order in ("fabric", "random"):
            r = run_cli(*args, "--preset", preset, "--host-order", order, "--order-seed", "1")
            assert r.code == 0, r.err
            out = r.json()
            assert out["host_order"] == order
            bw[preset, order] = out["results"][0]["busbw_GBps"]
    assert bw["dcn-plus", "random"] < 0.8 * bw["dcn-plus", "fabric"]
    assert bw["hpn", "random"] == pytest.approx(bw["hpn", "fabric"], rel=0.02)


def test_cli_bad_host_order():
    r = run_cli("collective", "--preset", "hpn", "--segments", "1", "--host-order", "swaps=x")
    assert_input_error(r, "host_order", "swaps=K")
