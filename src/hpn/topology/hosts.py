"""GPU hosts: GPUs joined by NVLink through one NVSwitch node per host."""

from __future__ import annotations

import numpy as np

from hpn.topology.assembly import Assembly
from hpn.topology.fabric import LinkTier, Network, NodeKind
from hpn.topology.spec import HostFields


def add_hosts(
    asm: Assembly,
    spec: HostFields,
    pod: np.ndarray,
    segment: np.ndarray,
    backup: np.ndarray,
    rail_optimized: bool,
) -> np.ndarray:
    """Add one host per entry of the arrays; returns GPU ids shaped (hosts, gpus_per_host).

    GPU ``g`` of host ``h`` has id ``first + h * gpus_per_host + g``. NVLink is modelled as a
    star through the host's NVSwitch, at half the bidirectional bandwidth in each direction.

    Parameters
    ----------
    asm
        The assembly the hosts are added to.
    spec
        Host fields of the spec (GPUs per host, NVLink and NIC bandwidth, latency).
    pod, segment, backup
        Pod, segment and backup flag of each host.
    rail_optimized
        Whether GPU ``g`` is on rail ``g`` (else its rail is -1: no rails).

    Returns
    -------
    numpy.ndarray
        GPU node ids, shape ``(hosts, gpus_per_host)``.
    """
    n, g = len(pod), spec.gpus_per_host
    host = np.arange(n)
    gpu = asm.add_nodes(
        NodeKind.GPU,
        n * g,
        pod=np.repeat(pod, g),
        segment=np.repeat(segment, g),
        rail=np.tile(np.arange(g), n) if rail_optimized else -1,
        host=np.repeat(host, g),
        index=np.tile(np.arange(g), n),
        backup=np.repeat(backup, g),
    ).reshape(n, g)
    nvs = asm.add_nodes(
        NodeKind.NVSWITCH, n, pod=pod, segment=segment, host=host, index=0, backup=backup
    )
    asm.add_links(
        gpu.ravel(),
        np.repeat(nvs, g),
        spec.nvlink_bandwidth / 2,
        spec.nvlink_latency,
        LinkTier.NVLINK,
    )
    return gpu


def add_frontend_nics(asm: Assembly, num_hosts: int, pod: np.ndarray) -> np.ndarray:
    """One frontend NIC node (NIC0) per host.

    Parameters
    ----------
    asm
        The assembly the NICs are added to.
    num_hosts
        Number of hosts.
    pod
        Pod of each host.

    Returns
    -------
    numpy.ndarray
        The NIC node ids, in host order.
    """
    return asm.add_nodes(
        NodeKind.NIC, num_hosts, Network.FRONTEND, pod=pod, host=np.arange(num_hosts), index=0
    )
