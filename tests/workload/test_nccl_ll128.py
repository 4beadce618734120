"""NCCL's default LL128 rule (tuning.cc): by the GPU-NIC PCIe path, NVLink inside the host and
the GPU's SM; NCCL_PROTO naming LL128 forces it."""

import pytest

from hpn.errors import InputError
from hpn.workload.collectives import Params
from hpn.workload.collectives import tuning as tu
from tests.conftest import assert_input_error, run_cli

M = 2**20
ON = [True] * len(tu.ALGOS)


def comm(nodes, ppn, gpu="H800", nccl="2.18.3", **kw) -> tu.Comm:
    return tu.Comm(nodes * ppn, nodes, tu.GPUS.get(gpu), 50.0, nccl=tu.VERSIONS.get(nccl), **kw)


def protos_of(c: tu.Comm, **kw) -> set[str]:
    return {tu.PROTOS[p] for _, p in tu.enabled(c, "allreduce", ON, [True] * 3, **kw)}


@pytest.mark.parametrize("nccl", ["2.18.3", "2.30.7"])
def test_rule_by_path_and_sm(nccl):
    assert "ll128" in protos_of(comm(56, 8, nccl=nccl))  # pxb: the default
    assert "ll128" in protos_of(comm(56, 8, nccl=nccl, nic_path="pxn"))  # SM90: up to PXN
    assert "ll128" not in protos_of(comm(56, 8, "A100", nccl, nic_path="pxn"))  # SM80: PXB
    for path in ("phb", "sys"):
        assert protos_of(comm(56, 8, nccl=nccl, nic_path=path)) == {"ll", "simple"}
        assert "ll128" in protos_of(comm(56, 8, nccl=nccl, nic_path=path), proto_set=True)
    assert "ll128" in protos_of(comm(1, 8, nccl=nccl, nic_path="sys"))  # no network path
    assert "ll128" not in protos_of(comm(4, 8, "L40S", nccl, nvlink=False))  # PCIe inside


def test_nic_behind_the_cpu_runs_tree_simple_at_1mib():
    """2.18.3, 448 GPUs, LL128 off: Tree Simple, latency 0 + 2(7 x 4 + 5 x 14) = 196 us
    (base 0, NVLink 4, NET 14 per hop; tuning.cc 56-78)."""
    c = comm(56, 8, nic_path="phb")
    ch = tu.choose(c, "allreduce", 1 * M, ON, [True] * 3)
    assert (ch.algo, ch.proto) == ("tree", "simple")
    assert ch.lat_us == pytest.approx(196.0)


def test_bad_nic_path():
    with pytest.raises(InputError, match="nic_path"):
        Params(nic_path="nvlink")
    r = run_cli("collective", "--preset", "hpn", "--segments", "1", "--gpus", "16",
                "--nic-path", "pcie")  # fmt: skip
    assert_input_error(r, "nic_path", "pxb")
