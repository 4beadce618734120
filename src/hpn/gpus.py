"""The GPU catalog: one entry per GPU type, read by every model that needs a GPU's figures.

The serving pool reads memory, HBM bandwidth, dense BF16 TFLOPS and the host link
(:mod:`hpn.pool`); training reads the TFLOPS (:mod:`hpn.workload.training`); NCCL's tuner
reads the compute capability, the NVLinks to the NVSwitch and the PCIe bandwidth to the NIC
(:mod:`hpn.workload.collectives.tuning`). A new GPU type is one entry here.

Sources: NVIDIA datasheets (H100/H800, H20 listings, A100, A10, L40S; dense figures, no
sparsity); host-link figures are the ones the Aegaeon artifact uses for its switch estimate
(`DeviceType.pcie_bandwidth_in_bytes` in `aegaeon/aegaeon/utils.py`, PCIe Gen4 x16 parts as
its A10), see ../shared/reference/aegaeon-facts.md §11; NVLink counts and PCIe GB/s as NCCL's
topology counts them (``SM90_NVLINK_BW`` per link, ``width * GT/s / 80``: Gen5 x16 = 48 GB/s,
Gen4 x16 = 24 GB/s; topo.h).
"""

from __future__ import annotations

from dataclasses import dataclass

from hpn.errors import InputError

GiB = 2**30


@dataclass(frozen=True)
class GPU:
    """A GPU type: memory, HBM bandwidth, dense BF16 TFLOPS, host link, NVLink; and what
    NCCL's topology reads of it (compute capability, NVLinks to the NVSwitch, PCIe to the NIC).
    """

    name: str
    memory_bytes: float
    hbm_bandwidth: float  # bytes/s
    tflops: float  # dense BF16 tensor-core peak
    host_link: float  # bytes/s, host <-> device
    nvlink: float  # bytes/s, 0 when absent
    # what NCCL's topology reads (0: a device NCCL's model does not know, e.g. a serving
    # engine's measured one, hpn.serve.compare)
    compcap: int = 0  # 90 = SM90
    nvlinks: int = 0  # NVLinks to the NVSwitch (0: PCIe only)
    nvswitch: bool = False
    pcie_GBps: float = 0.0  # to the NIC


CATALOG: dict[str, GPU] = {
    g.name.lower(): g
    for g in (
        # the paper's hosts: 8 x H800 SXM, 8 NVLinks each (H100: 18)
        GPU("H800", 80e9, 3.35e12, 989.0, 64 * GiB, 400e9, 90, 8, True, 48.0),
        GPU("H100", 80e9, 3.35e12, 989.0, 32 * GiB, 900e9, 90, 18, True, 48.0),
        GPU("H20", 96e9, 4.0e12, 148.0, 32 * GiB, 900e9, 90, 18, True, 48.0),
        GPU("A100", 80e9, 2.0e12, 312.0, 32 * GiB, 600e9, 80, 12, True, 24.0),  # no NVLS
        GPU("A10", 24e9, 0.6e12, 125.0, 32 * GiB, 0.0, 86, 0, False, 24.0),  # PCIe only
        GPU("L40S", 48e9, 0.864e12, 362.0, 32 * GiB, 0.0, 89, 0, False, 24.0),  # PCIe only
    )
}
"""GPU types by lower-case name, in the order listings show them."""


def get_gpu(name: str) -> GPU:
    """GPU type by name (case-insensitive); InputError if unknown.

    Parameters
    ----------
    name
        ``h800``, ``H20``, ...

    Returns
    -------
    GPU
        The catalog entry.
    """
    key = name.strip().lower()
    if key not in CATALOG:
        raise InputError("gpu", f"unknown GPU {name!r}; known: {', '.join(CATALOG)}")
    return CATALOG[key]
