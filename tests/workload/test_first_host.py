"""``--first-host``: a job placed from a given host, e.g. across a segment boundary (Fig 19)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.topology import build
from hpn.workload.collectives import place
from tests.conftest import assert_input_error, run_cli

TWO = build("hpn", segments=2)  # 128 active hosts per segment


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 16), st.integers(0, 240))
def test_first_host_shifts_whole_hosts(hosts, first):
    base = place(TWO, 256 * 8).gpus  # every active host, fabric order
    got = place(TWO, hosts * 8, first_host=first).gpus
    assert (got == base[first : first + hosts]).all()


def test_a_job_across_the_boundary_has_half_its_hosts_in_each_segment():
    seg = TWO.nodes.segment
    for hosts in (4, 8, 16, 32):
        g = place(TWO, hosts * 8, first_host=128 - hosts // 2).gpus
        per_host = seg[g[:, 0]]
        assert (seg[g] == per_host[:, None]).all()  # a host sits in one segment
        assert np.bincount(per_host).tolist() == [hosts // 2, hosts // 2]


def test_past_the_last_host_names_first_host():
    with pytest.raises(InputError) as e:
        place(TWO, 32, first_host=253)
    assert e.value.field == "first_host" and "hosts 253..256" in str(e.value)


def test_cli_plane_design_shows_where_the_network_binds():
    """Across the boundary, NCCL's NVLSTree AllReduce is NVLink-bound (single- and dual-plane
    alike), a Multi-AllReduce (all traffic between hosts) is not: dual-plane is faster."""
    args = ("collective", "--preset", "hpn", "--segments", "2", "--gpus", "32")
    args += ("--first-host", "126", "--sizes", "4G", "--nccl", "2.18.3", "--json")
    bw = {}
    for op in ("allreduce", "multi-allreduce"):
        for plane in ((), ("--single-plane",)):
            r = run_cli(*args, "--op", op, *plane)
            assert r.code == 0, r.err
            out = r.json()
            assert out["first_host"] == 126 and out["hosts"] == 4
            bw[op, bool(plane)] = out["results"][0]["busbw_GBps"]
    assert bw["allreduce", True] == pytest.approx(bw["allreduce", False], rel=1e-6)
    assert bw["multi-allreduce", False] > 1.5 * bw["multi-allreduce", True]


@pytest.mark.parametrize("first", ["253", "-1", "x"])
def test_cli_bad_first_host(first):
    r = run_cli("collective", "--preset", "hpn", "--segments", "2", "--gpus", "32",
                "--first-host", first)  # fmt: skip
    assert_input_error(r, "first-host" if first != "253" else "first_host")
