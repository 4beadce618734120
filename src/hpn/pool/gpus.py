"""GPU presets for the serving pool (memory, HBM bandwidth, dense BF16 TFLOPS, host link).

Source: NVIDIA datasheets (H100/H800, A100, A10), public H20 listings; host-link figures are
the ones the Aegaeon artifact uses for its switch estimate (`DeviceType.pcie_bandwidth_in_bytes`
in `aegaeon/aegaeon/utils.py`), see ../shared/reference/aegaeon-facts.md §11.
"""

from __future__ import annotations

from dataclasses import dataclass

from hpn.errors import InputError

GiB = 2**30


@dataclass(frozen=True)
class GPU:
    """A GPU preset: memory, HBM bandwidth, dense BF16 TFLOPS, host link, NVLink."""

    name: str
    memory_bytes: float
    hbm_bandwidth: float  # bytes/s
    tflops: float  # dense BF16
    host_link: float  # bytes/s, host <-> device
    nvlink: float  # bytes/s, 0 when absent


GPUS: dict[str, GPU] = {
    g.name.lower(): g
    for g in (
        GPU("H20", 96e9, 4.0e12, 148.0, 32 * GiB, 900e9),
        GPU("H100", 80e9, 3.35e12, 989.0, 32 * GiB, 900e9),
        GPU("H800", 80e9, 3.35e12, 989.0, 64 * GiB, 400e9),
        GPU("A100", 80e9, 2.0e12, 312.0, 32 * GiB, 600e9),
        GPU("A10", 24e9, 0.6e12, 125.0, 32 * GiB, 0.0),
    )
}


def get_gpu(name: str) -> GPU:
    """GPU preset by name (case-insensitive); InputError if unknown.

    Parameters
    ----------
    name
        ``h800``, ``h20``, ...

    Returns
    -------
    GPU
        The preset.
    """
    key = name.strip().lower()
    if key not in GPUS:
        raise InputError("gpu", f"unknown GPU {name!r}; known: {', '.join(GPUS)}")
    return GPUS[key]
