"""NCCL's tuning model (tuning.py) and the NCCL path of add_collective: hand-computed
latencies and bandwidths from NCCL 2.30.7's formulas, selection, NCCL_ALGO/NCCL_PROTO
semantics, closed forms at zero latency and zero size, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from hpn.engine import simulate
from hpn.errors import InputError
from hpn.topology import build
from hpn.workload.collectives import Ctx, Params, add_collective, bandwidths, place
from hpn.workload.collectives import tuning as tu
from hpn.workload.collectives.tree import link_load
from tests.conftest import assert_input_error, run_cli

H800 = tu.GPUS.get("H800")
ALL = [True] * len(tu.ALGOS)
PROTOS = [True] * 3
GB = 2**30


def comm(nodes: int, ppn: int, gpu=H800, **kw) -> tu.Comm:
    return tu.Comm(nodes * ppn, nodes, gpu, 50.0, **kw)


def test_graph_search_on_h800_hosts():
    # 8 channels x 22 GB/s: 7 of 8 GPUs send each channel over 8 x 20.6 GB/s of NVLink
    c = comm(56, 8)
    assert c.graphs[tu.RING] == tu.Graph(8, 22.0, 22.0)
    assert tu.comm_channels(c) == 16  # doubled by connect.cc:460
    # one GPU per host: one 48 GB/s channel, duplicated to 2 x 24 (DupChannels), then x 2
    one = comm(56, 1)
    assert one.graphs[tu.RING] == tu.Graph(2, 24.0, 24.0)
    assert tu.comm_channels(one) == 4
    # in one host: 4 x 40 GB/s found first, duplicated to 8 x 20
    assert comm(1, 8).graphs[tu.RING] == tu.Graph(8, 20.0, 20.0)
    # NCCL_MAX_NCHANNELS
    assert tu.comm_channels(comm(56, 8, min_channels=4, max_channels=4)) == 4


def test_hand_computed_latencies():
    c = comm(56, 8)  # 448 ranks
    # Tree LL AllReduce: base 6.8 + 2 * (7 * 0.6 (NVLink) + log2(56) = 5 * 5.0 (net))
    assert tu.cost(c, "allreduce", tu.TREE, tu.LL).lat == pytest.approx(6.8 + 2 * (4.2 + 25))
    # Ring Simple: 8.4 + (894 - 110) * max(3.4, 3 * 1.0) + 110 * 14
    k = tu.cost(c, "allreduce", tu.RING, tu.SIMPLE)
    assert k.lat == pytest.approx(8.4 + 784 * 3.4 + 110 * 14.0)
    # NVLSTree: 25 (NVLink) + 2 * 5 * 20.9
    assert tu.cost(c, "allreduce", tu.NVLSTREE, tu.SIMPLE).lat == pytest.approx(25 + 209)
    # one GPU per host: inter latency is Tree's, Ring LL128 = 14 + 2 * 7 * 8.5 (8 nodes)
    one = comm(8, 1)
    assert tu.cost(one, "allreduce", tu.RING, tu.LL128).lat == pytest.approx(14 + 14 * 8.5)


def test_hand_computed_bandwidths():
    c = comm(56, 8)
    n = 448
    ring = tu.cost(c, "allreduce", tu.RING, tu.SIMPLE)
    assert ring.bw == pytest.approx(8 * 22.0 * n / (2 * (n - 1)))  # bus -> alg: n / nsteps
    assert ring.eff == 1.0 and ring.cap == float("inf")
    ll = tu.cost(c, "allreduce", tu.RING, tu.LL)  # min(llMaxBw 20.4, 176 * .5)
    assert ll.bw == pytest.approx(20.4 * n / (2 * (n - 1)))
    assert ll.eff == 0.5
    tree = tu.cost(c, "allreduce", tu.TREE, tu.SIMPLE)  # min(176 * .92, 8 * 36.0) * .5
    assert tree.bw == pytest.approx(8 * 22.0 * 0.92 * 0.5)
    assert tree.cap == pytest.approx(8 * 36.0 * 0.5)
    nt = tu.cost(c, "allreduce", tu.NVLSTREE, tu.SIMPLE)  # min(48*.85*15/16*2, 48, 45.5)
    assert nt.bw == pytest.approx(8 * 45.5 * n / (2 * (n - 1)))
    assert nt.eff == pytest.approx(0.85 * 7 / 8)


def test_time_formula_and_tree_correction():
    c = comm(56, 8)
    size = 2**20  # log2(2^20 / 64) = 14: LL128 factor .6
    k = tu.cost(c, "allreduce", tu.TREE, tu.LL128)
    assert tu.algo_time(c, "allreduce", tu.TREE, tu.LL128, size) == pytest.approx(
        k.lat + size / (1000 * k.bw * 0.6)
    )
    # ring Simple plateau: latency x 1.4 once each rank-channel gets 64 B
    k = tu.cost(c, "allreduce", tu.RING, tu.SIMPLE)
    assert tu.algo_time(c, "allreduce", tu.RING, tu.SIMPLE, GB) == pytest.approx(
        1.4 * k.lat + GB / (1000 * k.bw)
    )


def test_selection_is_the_minimum_and_shifts_with_size():
    c = comm(56, 8)
    for size in (2**10, 2**20, 2**26, 2**32):
        ch = tu.choose(c, "allreduce", size, ALL, PROTOS)
        times = [
            tu.algo_time(c, "allreduce", a, p, size)
            for a, p in tu.enabled(c, "allreduce", ALL, PROTOS)
        ]
        assert ch.time_us == pytest.approx(min(t for t in times if t is not None))
    assert tu.choose(c, "allreduce", 2**10, ALL, PROTOS).proto == "ll"
    assert tu.choose(c, "allreduce", 2**32, ALL, PROTOS).algo == "nvlstree"
    # broadcast and reduce run rings only; allgather never tree
    assert tu.choose(c, "broadcast", GB, ALL, PROTOS).algo == "ring"
    assert tu.choose(c, "allgather", GB, ALL, PROTOS).algo == "ring"
    # one host: NVLS for large AllReduce, never NVLSTree
    one = comm(1, 8)
    assert tu.choose(one, "allreduce", GB, ALL, PROTOS).algo == "nvls"
    assert all(a != tu.NVLSTREE for a, _ in tu.enabled(one, "allreduce", ALL, PROTOS))


def test_channels_shrink_for_small_sizes():
    c = comm(56, 8)
    # Tree LL128: 640 threads x 8 B threshold per channel
    assert tu.channels_for(c, tu.TREE, tu.LL128, 16 * 640 * 8) == 16
    assert tu.channels_for(c, tu.TREE, tu.LL128, 5 * 640 * 8) == 5
    assert tu.channels_for(c, tu.TREE, tu.LL128, 1) == 1
    assert tu.channels_for(c, tu.NVLSTREE, tu.SIMPLE, 1) == 16


def test_nccl_algo_proto_semantics():
    names = tu.ALGOS
    on = tu.parse_list("ring,tree", names, "algo", "allreduce")
    assert [names[i] for i in range(len(names)) if on[i]] == ["tree", "ring"]
    on = tu.parse_list("^nvls,nvlstree", names, "algo", "allreduce")
    assert not on[tu.NVLS] and not on[tu.NVLSTREE] and on[tu.RING] and on[tu.TREE]
    # per-op overrides: ring for all, tree for allreduce
    assert tu.parse_list("ring;allreduce:tree", names, "algo", "allreduce")[tu.TREE]
    assert not tu.parse_list("ring;allreduce:tree", names, "algo", "allgather")[tu.TREE]
    assert tu.parse_list("^ll128", tu.PROTOS, "proto", "allreduce") == [True, False, True]
    with pytest.raises(InputError, match="proto.*unknown proto 'll64'"):
        tu.parse_list("ll64", tu.PROTOS, "proto", "allreduce")
    with pytest.raises(InputError, match="op prefix"):
        tu.parse_list("ring;tree", names, "algo", "allreduce")
    # forced: the choice is the fastest among what is left
    c = comm(56, 8)
    ch = tu.choose(c, "allreduce", 2**20, tu.parse_list("ring", names, "algo", "allreduce"), PROTOS)
    assert ch.algo == "ring" and ch.proto == "ll"
    ch = tu.choose(c, "allreduce", 2**32, on, tu.parse_list("^simple", tu.PROTOS, "proto", "x"))
    assert ch.proto in ("ll", "ll128")


@pytest.fixture(scope="module")
def seg():
    return build("hpn", segments=1, dual_tor=False, link_latency=0, nvlink_latency=0)


def nccl_run(fabric, op, ranks, size, algo=None, **kw):
    ctx = Ctx(fabric)
    s, e = add_collective(ctx, op, ranks, size, algo, Params(**kw))
    res = simulate(fabric, ctx.dag, "hpn")
    return float(res.task_finish[e] - res.task_start[s]), ctx.choices[0]


def test_zero_size_is_nccl_latency(seg):
    for per_host, algo in ((1, "tree"), (8, "ring"), (8, "nvls")):
        ranks = place(seg, 8 if per_host == 8 else 8, per_host=per_host).gpus
        t, ch = nccl_run(seg, "allreduce", ranks, 0.0, algo)
        c = tu.Comm(ranks.size, ranks.shape[0], H800, 50.0)
        a, p = tu.ALGOS.index(ch.algo), tu.PROTOS.index(ch.proto)
        assert t == pytest.approx(tu.cost(c, "allreduce", a, p).lat * 1e-6, rel=1e-9)


def test_large_size_closed_forms(seg):
    """At 4 GiB latency is < 1 %: ring Simple = the NIC rate 2(n-1)/n; NVLS in one host =
    size (1 + 1/k) / (eff * NVLink); tree LL128 pays 1 / (.92 * 120/128)."""
    nic, nvl = 50e9, 200e9
    ranks = place(seg, 16, per_host=1).gpus
    t, ch = nccl_run(seg, "allreduce", ranks, 4 * GB, "ring", proto="simple")
    assert (ch.algo, ch.proto) == ("ring", "simple")
    assert bandwidths("allreduce", 4 * GB, t, 16)[1] == pytest.approx(nic, rel=0.01)
    t, ch = nccl_run(seg, "allreduce", place(seg, 8).gpus, 4 * GB)
    assert ch.algo == "nvls"
    assert t == pytest.approx(4 * GB * 9 / 8 / (ch.eff * nvl), rel=0.01)
    t2, ch = nccl_run(seg, "allreduce", ranks, 4 * GB, "tree", proto="ll128")
    t1, _ = nccl_run(seg, "allreduce", ranks, 4 * GB, "tree", proto="simple")
    assert t2 / t1 == pytest.approx(128 / 120, rel=0.02)


@pytest.mark.parametrize(
    "hosts,per_host,load", [(2, 1, 1.0), (3, 1, 1.5), (4, 1, 2.0), (16, 1, 2.0), (2, 8, 2.0)]
)
def test_tree_link_load_is_what_the_flows_carry(seg, hosts, per_host, load):
    """The busiest GPU link (NIC or NVLink, one direction) of one channel's double tree
    carries ``load`` bytes per byte of data: 2 (NCCL's bus -> alg ratio .5) wherever a rank is
    interior (4+ hosts, 3+ GPUs per host); on 2 hosts of 1 GPU each GPU sends each half once."""
    assert link_load(hosts, per_host) == load
    ranks = place(seg, hosts * per_host, per_host=per_host).gpus
    ctx = Ctx(seg)
    add_collective(ctx, "allreduce", ranks, GB, "tree", Params(model="alpha", channels=1))
    res = simulate(seg, ctx.dag, "hpn")
    lk = seg.links
    out = np.isin(lk.src, ranks.ravel())  # every link a GPU sends on
    assert res.link_bytes[out].max() / GB == pytest.approx(load, rel=1e-9)


@pytest.mark.parametrize("proto,eff", [("simple", 0.92 * 0.85), ("ll128", 0.92 * 120 / 128 * 0.85)])
def test_two_host_tree_runs_at_the_nic(seg, proto, eff):
    """2 hosts x 1 GPU, Tree at 4 GiB (no tree correction): each NIC sends the data once, so
    the time is latency + size / (eff x NIC) (50 GB/s; eff with 2.30.7's x .85 for the
    one-GPU tree pattern). NCCL's per-channel cap over 2 bytes per byte (2 ch x 41.4 x .5 x
    .85 = 35.2, LL128 2 x 36.7 x .5 x .85 = 31.2 GB/s) does not bind: it counts bus bytes
    this tree does not send."""
    ranks = place(seg, 2, per_host=1).gpus
    t, ch = nccl_run(seg, "allreduce", ranks, 4 * GB, "tree", proto=proto)
    c = tu.Comm(2, 2, H800, 50.0)
    k = tu.cost(c, "allreduce", tu.TREE, tu.PROTOS.index(proto))
    assert k is not None and k.cap < eff * 50  # NCCL's own floor would bind here
    assert ch.eff == pytest.approx(eff)
    assert t == pytest.approx(k.lat * 1e-6 + 4 * GB / (eff * 50e9), rel=1e-6)


def test_choices_recorded_and_channels_forced(seg):
    ranks = place(seg, 32).gpus
    _, ch = nccl_run(seg, "allreduce", ranks, 2**26, "ring", channels=4)
    assert ch.channels == 4 and ch.algo == "ring"
    with pytest.raises(InputError, match="channels"):
        Params(channels=65)


def test_refusals(seg):
    with pytest.raises(InputError, match="algo: collnetdirect needs in-network reduction"):
        nccl_run(seg, "allreduce", place(seg, 16).gpus, 1.0, "collnetdirect")
    with pytest.raises(InputError, match="nvls across hosts needs CollNet"):
        nccl_run(seg, "allreduce", place(seg, 16).gpus, 1.0, "nvls")
    with pytest.raises(InputError, match="A100 hosts here have none"):
        nccl_run(seg, "allreduce", place(seg, 16).gpus, 1.0, "nvlstree", gpu="A100")
    with pytest.raises(InputError, match="gpu: unknown GPU type"):
        nccl_run(seg, "allreduce", place(seg, 16).gpus, 1.0, gpu="V1")


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["--algo", "nvls", "--gpu", "A100"], ["algo", "NVLink SHARP"]),
        (["--algo", "collnetchain"], ["algo", "in-network reduction"]),
        (["--proto", "ll64"], ["proto", "ll64"]),
        (["--channels", "65"], ["channels"]),
        (["--channels", "0"], ["channels"]),
        (["--sizes", "1M:4M:1"], ["--sizes", "FACTOR"]),
        (["--cpu", "arm"], ["cpu", "intel, amd", "arm"]),
    ],
)
def test_cli_refusals(args, fragments):
    r = run_cli("collective", "--preset", "hpn", "--segments", "1", "--gpus", "16", *args)
    assert_input_error(r, *fragments)


@pytest.mark.parametrize("nccl", ["2.30.7", "2.18.3"])
def test_amd_hosts_pay_nccl_net_overhead_and_ll_caps(nccl):
    """getNetOverhead: a ring step across hosts costs at least 1 us on Intel hosts, 2 on AMD
    (x 3 for Simple), and AMD hosts take NCCL's AMD row of LL caps (22.5 GB/s on 2 hosts,
    19.0 from 4; Intel 39.0, 20.4). 2 x 8 A100: Ring LL 2.30.7 = 6.6 + 28 x 2.0 + 2 x 2.7
    (2.18.3 counts 2 x nodes = 4 network steps: 6.6 + 26 x 2.0 + 4 x 2.7); Ring Simple
    8.4 + 28 x max(3.4, 6.0) + 2 x 14; Ring LL bandwidth 22.5 x 16 / 30. One host: no change."""
    v = tu.VERSIONS.get(nccl)
    a100 = tu.GPUS.get("A100")
    intel, amd = (tu.Comm(16, 2, a100, 25.0, nccl=v, cpu=cpu) for cpu in ("intel", "amd"))
    net = 4 if v.v218 else 2  # network steps of the ring
    ll = tu.cost(amd, "allreduce", tu.RING, tu.LL)
    assert ll.lat == pytest.approx(6.6 + (30 - net) * 2.0 + net * 2.7)
    assert tu.cost(intel, "allreduce", tu.RING, tu.LL).lat == pytest.approx(
        6.6 + (30 - net) * 1.0 + net * 2.7
    )
    assert ll.bw == pytest.approx(22.5 * 16 / 30)
    assert tu.cost(intel, "allreduce", tu.RING, tu.LL).bw == pytest.approx(39.0 * 16 / 30)
    simple = tu.cost(amd, "allreduce", tu.RING, tu.SIMPLE)
    assert simple.lat == pytest.approx(8.4 + (30 - net) * 6.0 + net * 14.0)
    far = tu.Comm(448, 56, H800, 50.0, nccl=v, cpu="amd")
    assert tu.cost(far, "allreduce", tu.TREE, tu.LL).bw == pytest.approx(19.0 * 0.5)
    with pytest.raises(InputError, match="cpu: must be one of intel, amd"):
        tu.Comm(16, 2, a100, 25.0, nccl=v, cpu="arm")
    one = [tu.Comm(8, 1, H800, 50.0, nccl=v, cpu=cpu) for cpu in ("intel", "amd")]
    for a, p in ((tu.RING, tu.LL), (tu.RING, tu.SIMPLE), (tu.TREE, tu.LL)):
        assert tu.cost(one[0], "allreduce", a, p) == tu.cost(one[1], "allreduce", a, p)


def test_cli_cpu_amd_zero_size_is_amd_latency():
    """``--cpu amd`` reaches the tuner: an 8 B Ring LL on 2 x 8 A100 predicts AMD's latency,
    28 us more than Intel's (2.30.7)."""
    args = ("collective", "--preset", "hpn", "--segments", "1", "--gpus", "16", "--gpu", "A100",
            "--algo", "ring", "--proto", "ll", "--sizes", "8", "--json")  # fmt: skip
    t = [
        run_cli(*args, "--cpu", cpu).json()["results"][0]["predicted_s"] for cpu in ("intel", "amd")
    ]
    # and 8 B at the LL caps: 22.5 x 16 / 30 = 12.0 GB/s against 39.0 x 16 / 30 = 20.8
    assert t[1] - t[0] == pytest.approx(28e-6 + 8 / 12.0e9 - 8 / 20.8e9, rel=1e-9)


def test_cli_rows_say_what_ran():
    r = run_cli(
        "collective", "--preset", "hpn", "--segments", "1", "--gpus", "16",
        "--sizes", "1K:1M:32", "--json",
    )  # fmt: skip
    assert r.code == 0, r.err
    rows = r.json()["results"]
    assert [x["size_bytes"] for x in rows] == [2**10, 2**15, 2**20]
    for row in rows:
        assert row["algo"] in tu.ALGOS and row["proto"] in tu.PROTOS and row["channels"] >= 1
        assert row["predicted_s"] > 0
    assert rows[0]["proto"] == "ll"


def test_alpha_model_ring_unchanged():
    """``--model alpha --algo ring`` gives the earlier model's times (main at ffac424)."""
    r = run_cli(
        "collective", "--preset", "hpn", "--segments", "1", "--gpus", "64",
        "--sizes", "1M,64M,1G", "--algo", "ring", "--model", "alpha", "--json",
    )  # fmt: skip
    assert r.code == 0, r.err
    got = [x["time_s"] for x in r.json()["results"]]
    assert got == pytest.approx([0.00026203168, 0.00083102752, 0.00950144032], rel=1e-12)


def test_one_gpu_tree_pattern_factor():
    """2.30.7 (since 2.26.2) multiplies Tree's bus bandwidth by .85 when the tree graph's
    pattern is NCCL_TOPO_PATTERN_TREE (tuning.cc:336), which a host with one GPU of the
    communicator gets (search.cc:1133). 56 hosts x 1 H800: 2 graph channels x 24 GB/s x .92
    (under the 2 x 36.0 per-channel Tree cap) x .85, times Tree's bus -> alg .5; 8 GPUs per
    host and 2.18.3 keep no such factor."""
    one = comm(56, 1)
    assert tu.tree_pattern(one) == tu.PATTERN_TREE
    assert tu.tree_pattern(comm(56, 8)) == tu.PATTERN_BALANCED_TREE
    g = one.graphs[tu.TREE]
    for p in (tu.SIMPLE, tu.LL128):
        k = tu.cost(one, "allreduce", tu.TREE, p)
        x = 0.92 * (1.0 if p == tu.SIMPLE else 120 / 128) * 0.85
        assert k.eff == pytest.approx(x)
    k = tu.cost(one, "allreduce", tu.TREE, tu.SIMPLE)
    assert k.bw == pytest.approx(g.channels * g.bw_inter * 0.92 * 0.85 * 0.5)
    assert tu.cost(comm(56, 8), "allreduce", tu.TREE, tu.SIMPLE).eff == pytest.approx(0.92)
    old = comm(56, 1, nccl=tu.VERSIONS.get("2.18.3"))
    assert tu.cost(old, "allreduce", tu.TREE, tu.SIMPLE).eff == pytest.approx(0.92)
