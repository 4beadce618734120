"""NVLink as NCCL's kernels use it: NCCL's per-link figure (topo.h) caps the fabric's NVLink
in NCCL-model runs; the network and the alpha model are unchanged."""

import numpy as np
import pytest

from hpn.topology import build
from hpn.topology.fabric import LinkTier
from hpn.workload.collectives import Params, sweep
from hpn.workload.collectives.context import nvlink_data_fabric

GB = 2**30


@pytest.fixture(scope="module")
def seg():
    return build("hpn", segments=1, dual_tor=False, link_latency=0, nvlink_latency=0)


def test_nvlink_capped_at_nccl_per_link_figure(seg):
    nvl = seg.links.tier == LinkTier.NVLINK
    assert np.allclose(seg.links.capacity[nvl], 200e9 * 8)  # H800: 8 x 25 GB/s per direction
    for nccl, per_link in (("2.18.3", 20.0), ("2.30.7", 20.6)):
        f = nvlink_data_fabric(seg, Params(nccl=nccl))
        assert np.allclose(f.links.capacity[nvl], 8 * per_link * 8e9)
        assert np.array_equal(f.links.capacity[~nvl], seg.links.capacity[~nvl])
        assert f.nodes is seg.nodes and f.spec is seg.spec
    # PCIe-only GPUs: the PCIe figure NCCL reads (L40S: 24 GB/s)
    f = nvlink_data_fabric(seg, Params(gpu="L40S"))
    assert np.allclose(f.links.capacity[nvl], 24e9 * 8)
    # already below NCCL's figure, or the alpha model: the fabric itself
    slow = build("hpn", segments=1, dual_tor=False, nvlink_bandwidth="200GB/s")
    assert nvlink_data_fabric(slow, Params()) is slow
    assert nvlink_data_fabric(seg, Params(model="alpha")) is seg


@pytest.mark.parametrize("nccl,per_link", [("2.18.3", 20.0), ("2.30.7", 20.6)])
def test_in_host_ring_runs_at_nccl_nvlink(seg, nccl, per_link):
    """One host, Ring Simple at 4 GiB: busbw = the NVLink data rate (8 links x NCCL's per-link
    figure), latency < 1 %."""
    p = Params(nccl=nccl, proto="simple")
    r = sweep(seg, "allreduce", [4 * GB], 8, algo="ring", params=p).results[0]
    assert (r["algo"], r["proto"]) == ("ring", "simple")
    assert r["busbw_GBps"] == pytest.approx(8 * per_link, rel=0.01)
