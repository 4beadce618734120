"""DCN+, Alibaba's previous training network (P App C, Fig 20).

Segment: 16 hosts = 128 GPUs under one non-stacked ToR pair (every NIC's port ``p`` on ToR
``p``; not rail-optimized), ToR 128 x 200G down and 64 x 400G up (1:1). Pod: 4 segments and 8
Aggs (64 down + 64 up); the 64 ToR uplinks spread over the 8 Aggs, so each ToR-Agg pair has 8
parallel 400G links [derived]. Core: Agg ``j`` of every pod links to its own group of 16 cores
with 4 parallel links each (our port-consistent choice), giving 128 cores and up to 32 pods.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from hpn.errors import InputError
from hpn.topology.assembly import Assembly
from hpn.topology.budget import agg_budget, ports, tor_budget
from hpn.topology.clos3 import Clos3Shape, add_frontend, check_shape, wire_clos3
from hpn.topology.fabric import Fabric, LinkTier, Network
from hpn.topology.hosts import add_hosts
from hpn.topology.spec import DcnPlusSpec


def dcn_shape(spec: DcnPlusSpec) -> Clos3Shape:
    """The three-tier shape of a DCN+ spec: dual-ToR, not rail-optimized.

    Parameters
    ----------
    spec
        The DCN+ spec.

    Returns
    -------
    Clos3Shape
        The shape; ``segments=None`` gives as many segments per pod as the Aggs serve.
    """
    port_speed = spec.nic_bandwidth / 2
    up_default = ports(spec.chip / 2, spec.uplink_speed)
    tor = tor_budget(
        spec.chip,
        port_speed,
        spec.uplink_speed,
        None,
        0,
        spec.tor_uplinks if spec.tor_uplinks is not None else up_default,
    )
    agg = agg_budget(spec.chip, spec.uplink_speed, spec.agg_oversubscription)
    shape = Clos3Shape(
        segments_per_pod=spec.segments or 1,
        tor_down=tor.down_active,
        down_speed=port_speed,
        tor_uplinks=tor.uplinks,
        aggs_per_pod=spec.aggs_per_pod,
        agg_down=agg.down,
        agg_up=agg.up,
        speed=spec.uplink_speed,
        core_parallel=spec.core_parallel_links,
        chip=spec.chip,
        latency=spec.link_latency,
        network=Network.BACKEND,
        tiers=(LinkTier.NIC_TOR, LinkTier.TOR_AGG, LinkTier.AGG_CORE),
    )
    if spec.segments is None and shape.max_segments_per_pod >= 1:
        shape = replace(shape, segments_per_pod=shape.max_segments_per_pod)
    return shape


def check_dcn_plus(spec: DcnPlusSpec) -> None:
    """Refuse a DCN+ spec past its switch chips' port budgets (without building it).

    Parameters
    ----------
    spec
        The DCN+ spec.

    Raises
    ------
    InputError
        When a tier needs more ports than its chip has.
    """
    check_shape(dcn_shape(spec), spec.pods, "")


def build_dcn_plus(spec: DcnPlusSpec) -> Fabric:
    """Build a DCN+ fabric: each host's NICs on one dual-ToR pair, a three-tier Clos above.

    Parameters
    ----------
    spec
        The DCN+ spec.

    Returns
    -------
    Fabric
        The fabric, with its derived sizes in ``meta``.

    Raises
    ------
    InputError
        When a tier's ports do not fit the spec.
    """
    s = dcn_shape(spec)
    check_shape(s, spec.pods, "")
    G = spec.gpus_per_host
    hosts_per_seg = s.tor_down // G
    if hosts_per_seg < 1:
        raise InputError("tor", f"needs {G} downlinks for one host, has {s.tor_down}")
    S = s.segments_per_pod
    nseg = spec.pods * S
    seg = np.repeat(np.arange(nseg), hosts_per_seg)
    asm = Assembly()
    gpu = add_hosts(
        asm,
        spec,
        seg // S,
        seg % S,
        np.zeros(len(seg), bool),
        rail_optimized=False,
    )
    ports_used = hosts_per_seg * G
    attach = np.full((nseg, 2, s.tor_down), -1, np.int64)
    attach[:, 0, :ports_used] = attach[:, 1, :ports_used] = gpu.reshape(nseg, ports_used)
    wire_clos3(asm, attach, np.arange(nseg) // S, spec.pods, s)
    meta = {
        "tor_oversubscription": s.tor_down * s.down_speed / (s.tor_uplinks * s.speed),
        "agg_oversubscription": s.agg_down / s.agg_up if s.agg_up else float("inf"),
        "hosts_per_segment": hosts_per_seg,
        "backup_hosts_per_segment": 0,
        "tor_agg_parallel_links": s.tor_agg_parallel,
        "max_segments_per_pod": s.max_segments_per_pod,
        "max_gpus_per_pod": s.max_segments_per_pod * hosts_per_seg * G,
        "max_pods": s.max_pods,
    }
    if spec.frontend:
        meta.update(add_frontend(asm, spec, seg // S))
    return asm.fabric(spec, meta)
