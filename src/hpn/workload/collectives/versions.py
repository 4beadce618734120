"""NCCL's tuning tables by release: the constants of ``src/graph/tuning.cc``,
``src/graph/search.cc`` and ``src/graph/topo.h`` that :mod:`.tuning` reads, for NCCL 2.30.7
(NVIDIA/nccl ``v2.30.7-1``) and NCCL 2.18.3 (``v2.18.3-1``, the paper's version).

Rows of arch-indexed tables are Volta, Ampere, Hopper, Blackwell; 2.18.3 has no Blackwell row
(its Hopper row is repeated). Every 2.18.3 value cites its line in the ``v2.18.3-1`` tree; the
formula differences the tuner applies per release are in :mod:`.tuning`, keyed on
:attr:`Version.v218`.
"""

from __future__ import annotations

from dataclasses import dataclass

from hpn.registry import Registry

Table = tuple[tuple[float, ...], ...]

# NCCL's orders (src/include/device.h: NCCL_ALGO_*, NCCL_PROTO_*; 2.18.3 has the first six)
ALGOS = ("tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat")
PROTOS = ("ll", "ll128", "simple")
FUNCS = ("broadcast", "reduce", "allgather", "reducescatter", "allreduce")
TREE, RING, CNDIRECT, CNCHAIN, NVLS, NVLSTREE, PAT = range(7)
LL, LL128, SIMPLE = range(3)
NVLINK, PCI, NET = range(3)
VOLTA, AMPERE, HOPPER, BLACKWELL = range(4)
# the hosts' CPU vendor, as NCCL's topology detects it (ncclTopoCpuType); in this order its
# row of llMaxBws on more than one host (index1: 0 Intel, 1 AMD; 2.30.7 tuning.cc:269-271,
# 2.18.3 144)
CPUS = ("intel", "amd")
# getNetOverhead (us): 2.30.7 tuning.cc:228-233, 2.18.3 109-117 (other CPUs: Intel's)
NET_OVERHEAD = {"intel": 1.0, "amd": 2.0}


def check_cpu(cpu: str) -> None:
    """Refuse a CPU vendor NCCL's tuner has no row for (one line naming ``cpu``)."""
    if cpu not in CPUS:
        from hpn.errors import InputError

        raise InputError("cpu", f"must be one of {', '.join(CPUS)}, got {cpu!r}")


# GPU <-> NIC PCIe path types, nearest first (src/include/graph.h PATH_*; the numbers differ
# by release, the order does not): same switch, switches below one root port, via another
# GPU's NVLink (PXN), through the CPU's host bridge, across CPU sockets
NIC_PATHS = ("pix", "pxb", "pxn", "phb", "sys")


@dataclass(frozen=True)
class Cost:
    """One (algorithm, protocol) of an operation: NCCL's latency (us) and bandwidth (GB/s,
    algorithm bandwidth: bytes / time), the multiplicative efficiency NCCL applies to the
    link bandwidth (what the flows pay) and the bandwidth its caps allow (what bounds the
    flows from below; inf: no cap)."""

    lat: float
    bw: float
    eff: float
    cap: float


def log2i(n: int) -> int:
    return max(int(n).bit_length() - 1, 0)


@dataclass(frozen=True)
class Version:
    """One NCCL release's tuning constants (GB/s, microseconds)."""

    name: str
    source: str
    base_lat: Table  # [algo][proto]
    hw_lat: tuple[Table, ...]  # [NVLink, PCI, NET][algo][proto]
    ll_max_bw: Table  # [index1][index2]
    per_ch_ring_ll128: Table
    per_ch_tree_ll128: Table
    per_ch_tree: Table
    per_ch_nvls_tree: Table | None  # None: no cap (2.18.3)
    nvls_efficiency: tuple[float, ...] | None  # None: NVLS ratio constants instead (2.18.3)
    sm90_speed_intra: tuple[float, ...]
    sm90_speed_inter: tuple[float, ...]
    nvlink_sm90: float  # GB/s per NVLink (topo.h SM90_NVLINK_BW)
    v218: bool = False  # the 2.18 formulas (see tuning.cost)


SPEED_INTRA = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
SPEED_INTER = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0,
               3.0, 2.4, 1.2, 0.24, 0.12)  # fmt: skip

# NCCL 2.30.7 (5067397c): tuning.cc:139-212, search.cc:1051-1059, topo.h:22
V2_30_7 = Version(
    "2.30.7",
    "NVIDIA/nccl v2.30.7-1 (5067397c)",
    base_lat=(
        (6.8, 14.0, 8.4), (6.6, 14.0, 8.4), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0),
        (8.0, 8.0, 8.0),
    ),
    hw_lat=(
        ((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 25), (0, 0, 25),
         (0, 0, 4.0)),  # NVLink
        ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 0), (0, 0, 0),
         (0, 0, 4.0)),  # PCI
        ((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 31), (0, 0, 30), (0, 0, 18), (0, 0, 20.9),
         (0, 0, 14)),  # NET
    ),
    ll_max_bw=((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0)),
    per_ch_ring_ll128=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (40.0,) * 3),
    per_ch_tree_ll128=((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0), (55.6, 31.67, 20.0)),
    per_ch_tree=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0)),
    per_ch_nvls_tree=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5),
                      (0.0, 96.0, 80.0)),
    nvls_efficiency=(0.0, 0.0, 0.85, 0.74),
    sm90_speed_intra=(60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    sm90_speed_inter=(48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                      3.0, 2.4, 1.2, 0.24, 0.12),
    nvlink_sm90=20.6,
)  # fmt: skip

# NCCL 2.18.3 (v2.18.3-1): six algorithms (no PAT: the 7th row is never read)
V2_18_3 = Version(
    "2.18.3",
    "NVIDIA/nccl v2.18.3-1",
    # tuning.cc:56-59: Tree Simple 0, NVLS/NVLSTree Simple 23
    base_lat=(
        (6.8, 14.0, 0), (6.6, 14.0, 8.4), (6.8, 14.0, 0), (6.8, 14.0, 0), (0, 0, 23.0),
        (0, 0, 23.0), (0, 0, 0),
    ),
    # tuning.cc:65-78
    hw_lat=(
        ((0.6, 1.25, 4), (0.6, 1.9, 3.4), (0, 0, 8.0), (0, 0, 4.75), (0, 0, 0), (0, 0, 0),
         (0, 0, 0)),  # NVLink
        ((1.0, 1.9, 6), (1.0, 2.5, 5.7), (0, 0, 8.0), (0, 0, 8.0), (0, 0, 0), (0, 0, 0),
         (0, 0, 0)),  # PCI
        ((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 10.7), (0, 0, 14), (0, 0, 18), (0, 0, 19),
         (0, 0, 0)),  # NET
    ),
    # tuning.cc:86-90 (Hopper row = Ampere's)
    ll_max_bw=((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (87.7, 22.5, 19.0), (87.7, 22.5, 19.0)),
    per_ch_ring_ll128=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (36.7,) * 3),  # 92-96
    per_ch_tree_ll128=((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0), (36.7, 36.7, 29.0)),  # 97-101
    per_ch_tree=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0),
                 (38.7, 41.4, 36.0)),  # 102-106
    per_ch_nvls_tree=None,
    nvls_efficiency=None,
    # search.cc:794-795
    sm90_speed_intra=(60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
    sm90_speed_inter=(48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4,
                      1.2, 0.24, 0.12),
    nvlink_sm90=20.0,  # topo.h:17
    v218=True,
)  # fmt: skip

VERSIONS: Registry[Version] = Registry("NCCL version", field="nccl")
VERSIONS.add("2.30.7", V2_30_7, "current release (default): NVLS efficiency, PAT, per-channel caps")
VERSIONS.add("2.18.3", V2_18_3, "the paper's NCCL: NVLSTree latency linear in hosts, no PAT")
DEFAULT = "2.30.7"
