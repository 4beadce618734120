"""The HPN fabric (P §3-7, Fig 7) and its variants: single-plane, single-ToR, non-rail,
rail-only, other chips and oversubscriptions.

Wiring, all derived from port budgets:

- segment: NIC ``r`` port ``p`` of every host -> ToR (rail ``r``, side ``p``); non-rail: every
  NIC of a host on the same ToR pair; single-ToR: one port per NIC at the NIC's full rate;
- tier 2: each ToR links once to every Agg of its group; a group is one plane (dual-plane: the
  side-``p`` ToRs), the whole pod (single-plane), or one rail and plane (rail-only); there are
  as many Aggs per group as a ToR has uplinks;
- core (pods > 1; the paper does not give the wiring, this is our port-consistent choice):
  the Aggs of a group are cut into core groups of ``aggs_per_core_group``; each such group has
  as many cores as an Agg has uplinks and each of its Aggs links once to each of those cores,
  in every pod. A core then spends ``aggs_per_core_group`` ports per pod, so
  ``max_pods = core radix // aggs_per_core_group`` (8 with the defaults: 122,880 GPUs), and
  the dual-plane split continues into the core (64 cores in two plane groups, as in Fig 7).
"""

from __future__ import annotations

import numpy as np

from hpn.errors import InputError
from hpn.topology.assembly import Assembly
from hpn.topology.budget import agg_budget, ports, require, tor_budget
from hpn.topology.clos3 import add_frontend
from hpn.topology.fabric import Fabric, LinkTier, NodeKind
from hpn.topology.hosts import add_hosts
from hpn.topology.spec import HpnSpec


def hpn_shape(spec: HpnSpec) -> dict[str, int | float]:
    """Every derived size of an HPN spec, refusing specs that exceed a port budget.

    Parameters
    ----------
    spec
        The HPN (or rail-only) spec.

    Returns
    -------
    dict
        Hosts, backup hosts and ToRs per segment, segments, Aggs, cores and the port
        budgets' oversubscriptions, by name (kept as the fabric's ``meta``).

    Raises
    ------
    InputError
        When a tier needs more ports than its chip has.
    """
    sides = 2 if spec.dual_tor else 1
    port_speed = spec.nic_bandwidth / sides
    tor = tor_budget(
        spec.chip,
        port_speed,
        spec.uplink_speed,
        spec.tor_active_ports,
        spec.tor_backup_ports,
        spec.tor_uplinks,
    )
    rails = spec.gpus_per_host
    per_host = 1 if spec.rail_optimized else rails  # ports one host puts on one ToR
    hosts = tor.down_active // per_host
    backup_hosts = tor.down_backup // per_host
    if hosts < 1:
        raise InputError(
            "tor", f"needs {per_host} downlinks for one host, has {tor.down_active} active"
        )
    tors_per_segment = (rails if spec.rail_optimized else 1) * sides
    planes = sides if (spec.dual_plane and spec.dual_tor) else 1
    rail_groups = rails if (spec.rail_only and spec.rail_optimized) else 1
    groups = planes * rail_groups
    aggs_per_group = tor.uplinks
    agg = agg_budget(spec.chip, spec.uplink_speed, spec.agg_oversubscription)
    tors_per_group_per_segment = tors_per_segment // groups
    max_segments = agg.down // tors_per_group_per_segment
    segments = spec.segments or max(max_segments, 1)
    multi = segments > 1 or spec.pods > 1
    if multi and aggs_per_group < 1:
        raise InputError("tor", "needs at least 1 uplink to join segments, has 0")
    require(
        "agg",
        segments * tors_per_group_per_segment,
        agg.down,
        f"downlink ports for {segments} segments x {tors_per_group_per_segment} ToRs",
    )
    core_group = spec.aggs_per_core_group
    if core_group is None:
        core_group = aggs_per_group // 4 if aggs_per_group % 4 == 0 else aggs_per_group
    core_group = max(core_group, 1)
    core_radix = ports(spec.chip, spec.uplink_speed)
    max_pods = core_radix // core_group if agg.up else 1
    if spec.pods > 1:
        if aggs_per_group % core_group:
            raise InputError(
                "aggs_per_core_group",
                f"must divide the {aggs_per_group} Aggs of a plane, got {core_group}",
            )
        if agg.up < 1:
            raise InputError("agg", "needs uplinks for a core tier, has 0")
        require("core", spec.pods * core_group, core_radix, f"ports for {spec.pods} pods")
    return {
        "segments": segments,
        "sides": sides,
        "port_speed": port_speed,
        "tor_down_active": tor.down_active,
        "tor_down_backup": tor.down_backup,
        "tor_uplinks": tor.uplinks,
        "tor_oversubscription": tor.oversubscription,
        "hosts_per_segment": hosts,
        "backup_hosts_per_segment": backup_hosts,
        "tors_per_segment": tors_per_segment,
        "planes": planes,
        "agg_groups": groups,
        "aggs_per_group": aggs_per_group,
        "agg_down": agg.down,
        "agg_up": agg.up,
        "agg_oversubscription": agg.oversubscription,
        "max_segments_per_pod": max_segments,
        "max_gpus_per_pod": max_segments * hosts * rails,
        "aggs_per_core_group": core_group,
        "cores_per_core_group": agg.up,
        "max_pods": max_pods,
    }


def build_hpn(spec: HpnSpec) -> Fabric:
    """Build an HPN fabric: dual-ToR, rail-optimized segments, dual-plane Aggs, a core tier.

    Parameters
    ----------
    spec
        The HPN (or rail-only) spec.

    Returns
    -------
    Fabric
        The fabric, with :func:`hpn_shape`'s sizes in ``meta``.

    Raises
    ------
    InputError
        When a tier needs more ports than its chip has.
    """
    s = hpn_shape(spec)
    asm = Assembly()
    P, S, G = spec.pods, int(s["segments"]), spec.gpus_per_host
    Ha, Hb = int(s["hosts_per_segment"]), int(s["backup_hosts_per_segment"])
    H = Ha + Hb
    seg_global = np.repeat(np.arange(P * S), H)
    host_pod, host_seg = seg_global // S, seg_global % S
    host_backup = np.tile(np.arange(H) >= Ha, P * S)
    gpu = add_hosts(asm, spec, host_pod, host_seg, host_backup, spec.rail_optimized)

    sides, T = int(s["sides"]), int(s["tors_per_segment"])
    tor_seg = np.repeat(np.arange(P * S), T)
    local = np.tile(np.arange(T), P * S)
    tor = asm.add_nodes(
        NodeKind.TOR,
        P * S * T,
        pod=tor_seg // S,
        segment=tor_seg % S,
        rail=local // sides if spec.rail_optimized else -1,
        plane=local % sides,
        index=local,
    )
    rail_of_gpu = np.arange(G) if spec.rail_optimized else np.zeros(G, np.int64)
    for side in range(sides):
        t = tor[0] + seg_global[:, None] * T + rail_of_gpu[None, :] * sides + side
        asm.add_links(
            gpu.ravel(), t.ravel(), s["port_speed"], spec.link_latency, LinkTier.NIC_TOR, port=side
        )

    groups, A = int(s["agg_groups"]), int(s["aggs_per_group"])
    planes = int(s["planes"])
    if A:
        g_local = np.arange(groups)
        none = np.full(groups, -1)
        agg = asm.add_nodes(
            NodeKind.AGG,
            P * groups * A,
            pod=np.repeat(np.arange(P), groups * A),
            plane=np.tile(np.repeat(g_local % planes if planes > 1 else none, A), P),
            rail=np.tile(np.repeat(g_local // planes if groups > planes else none, A), P),
            index=np.tile(np.arange(A), P * groups),
        )
        tor_pod = tor_seg // S
        tor_group = (local % sides if planes > 1 else 0) + (
            (local // sides) * planes if groups > planes else 0
        )
        first = agg[0] + (tor_pod * groups + tor_group) * A
        up = first[:, None] + np.arange(A)[None, :]
        asm.add_links(
            np.repeat(tor, A), up.ravel(), spec.uplink_speed, spec.link_latency, LinkTier.TOR_AGG
        )
        if P > 1:
            cg, U = int(s["aggs_per_core_group"]), int(s["cores_per_core_group"])
            sub = A // cg  # core groups per Agg group
            ncore = groups * sub * U
            cid = np.arange(ncore)
            grp_of_core = cid // (sub * U)
            core = asm.add_nodes(
                NodeKind.CORE,
                ncore,
                plane=(grp_of_core % planes) if planes > 1 else -1,
                rail=(grp_of_core // planes) if groups > planes else -1,
                index=cid,
            )
            a_idx = np.arange(P * groups * A)
            a_group = (a_idx // A) % groups
            a_sub = (a_idx % A) // cg
            first_core = core[0] + (a_group * sub + a_sub) * U
            cores = first_core[:, None] + np.arange(U)[None, :]
            asm.add_links(
                np.repeat(agg, U),
                cores.ravel(),
                spec.uplink_speed,
                spec.link_latency,
                LinkTier.AGG_CORE,
            )

    meta = dict(s)
    if spec.frontend:
        meta.update(add_frontend(asm, spec, host_pod))
    return asm.fabric(spec, meta)
