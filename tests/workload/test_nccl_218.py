"""NCCL 2.18.3's tuner (tuning218.py, versions.py): hand-computed latencies and bandwidths
from v2.18.3-1 src/graph/tuning.cc, its choices at the paper's 448 GPUs, and the
``--nccl`` flag."""

from __future__ import annotations

import pytest

from hpn.errors import InputError
from hpn.workload.collectives import Params
from hpn.workload.collectives import tuning as tu
from hpn.workload.collectives.versions import V2_18_3, V2_30_7
from tests.conftest import assert_input_error, run_cli

H800 = tu.GPUS.get("H800")
ALGOS = [a != tu.PAT for a in range(len(tu.ALGOS))]
M = 2**20


def comm(nodes: int, ppn: int, v=V2_18_3) -> tu.Comm:
    return tu.Comm(nodes * ppn, nodes, H800, 50.0, nccl=v)


def test_graph_on_h800_hosts():
    # 8 NVLinks x 20.0 GB/s (topo.h:17): 8 channels x 20 (no 22 in search.cc:795), x 2
    c = comm(56, 8)
    assert c.graphs[tu.RING] == tu.Graph(8, 20.0, 20.0)
    assert tu.comm_channels(c) == 16
    assert comm(56, 8, V2_30_7).graphs[tu.RING] == tu.Graph(8, 22.0, 22.0)


def test_hand_computed_latencies():
    c = comm(56, 8)  # 448 ranks
    lat = {a: tu.cost(c, "allreduce", a, tu.SIMPLE).lat for a in (tu.RING, tu.TREE, tu.NVLSTREE)}
    # Ring Simple: 8.4 + (894 - 2 * 56) * max(3.4, 3 * 1.0) + 2 * 56 * 14 (tuning.cc:161, 225)
    assert lat[tu.RING] == pytest.approx(8.4 + 782 * 3.4 + 112 * 14.0)
    # Tree Simple: base 0 + 2 * (7 * 4 + 5 * 14)
    assert lat[tu.TREE] == pytest.approx(2 * (28 + 70))
    # NVLSTree: 23 + 2 * (56 - 1) * 19, linear in hosts (tuning.cc:238)
    assert lat[tu.NVLSTREE] == pytest.approx(23 + 110 * 19)
    assert tu.cost(c, "allreduce", tu.TREE, tu.LL128).lat == pytest.approx(14 + 2 * (8.75 + 42.5))
    # one host: NVLS = 23 us, no network term
    assert tu.cost(comm(1, 8), "allreduce", tu.NVLS, tu.SIMPLE).lat == pytest.approx(23.0)


def test_hand_computed_bandwidths():
    c = comm(56, 8)
    n = 448
    ring_ll = tu.cost(c, "allreduce", tu.RING, tu.LL)
    assert ring_ll.bw == pytest.approx(min(20.4, 160 / 4) * n / (2 * (n - 1)))  # x 1/4, llMax
    tree = tu.cost(c, "allreduce", tu.TREE, tu.LL128)
    assert tree.bw == pytest.approx(160 * 0.92 * 120 / 128 * 0.5)
    nvt = tu.cost(c, "allreduce", tu.NVLSTREE, tu.SIMPLE)  # 8 heads x 48, .70 n / (2 (n - 1))
    assert nvt.bw == pytest.approx(8 * 48 * 0.7 * 56 / 110) and nvt.eff == 0.7
    assert nvt.cap == float("inf")  # no per-channel NVLSTree cap in 2.18
    nvls = tu.cost(comm(1, 8), "allreduce", tu.NVLS, tu.SIMPLE)
    assert nvls.eff == pytest.approx(5 / 6)
    # Ring LL128 at one GPU per host: x 0.7 (tuning.cc:179)
    one = comm(8, 1)
    assert tu.cost(one, "allreduce", tu.RING, tu.LL128).eff == 0.7


def test_only_ring_outside_allreduce():
    c = comm(56, 8)
    assert tu.cost(c, "allgather", tu.NVLS, tu.SIMPLE) is None
    assert tu.cost(c, "allgather", tu.PAT, tu.SIMPLE) is None
    only_tree = tu.parse_list("tree", tu.ALGOS, "algo", "allgather")
    assert tu.choose(c, "allgather", 4 * M, only_tree, [True] * 3).algo == "ring"
    with pytest.raises(InputError):  # AllReduce keeps NCCL_ALGO as given
        tu.choose(c, "allreduce", 4 * M, tu.parse_list("pat", tu.ALGOS, "algo", "x"), [True] * 3)


def test_choices_at_448_gpus():
    """2.18.3 runs Tree up to 256 MiB and NVLSTree from 1 GiB; 2.30.7 NVLSTree from 16 MiB."""
    got = {}
    for v in (V2_18_3, V2_30_7):
        c = comm(56, 8, v)
        got[v.name] = [tu.choose(c, "allreduce", s, ALGOS, [True] * 3).algo for s in
                       (M, 16 * M, 256 * M, 1024 * M)]  # fmt: skip
    assert got["2.18.3"] == ["tree", "tree", "tree", "nvlstree"]
    assert got["2.30.7"] == ["tree", "nvlstree", "nvlstree", "nvlstree"]


def test_unknown_version():
    with pytest.raises(InputError, match="nccl: unknown NCCL version '2.0'"):
        Params(nccl="2.0")


def test_cli_nccl_flag():
    args = ("collective", "--preset", "hpn", "--segments", "1", "--gpus", "64", "--json")
    new = run_cli(*args, "--sizes", "16M").json()
    old = run_cli(*args, "--sizes", "16M", "--nccl", "2.18.3").json()
    assert new["nccl"] == "2.30.7" and old["nccl"] == "2.18.3"
    assert new["results"][0]["algo"] == "nvlstree" and old["results"][0]["algo"] == "tree"
    assert_input_error(run_cli(*args, "--nccl", "2.19"), "nccl", "2.18.3")
