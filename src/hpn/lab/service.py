"""One function per ``hpn lab`` command: ``up``, ``status``, ``down``, ``traffic``, ``fail``,
``configs``. Each returns the command's JSON object."""

from __future__ import annotations

from typing import Any

import numpy as np

from hpn.errors import InputError
from hpn.lab.build import down, load, status, up
from hpn.lab.learn import learn_paths
from hpn.lab.measure import compare_links, model_link_bytes, port_balance, snapshot
from hpn.lab.plan import LabPlan
from hpn.lab.udp import FlowSet, run_flows
from hpn.routing.addressing import random_sports

__all__ = ["down", "flows_of", "status", "traffic", "up"]

PATTERNS = ("permutation", "all-to-all", "incast", "rail-ring", "polarization")
MAX_FLOWS = 512


def flows_of(
    plan: LabPlan,
    pattern: str,
    size: float,
    connections: int,
    seed: int = 0,
    senders: int = 2,
    matrix: list[tuple[int, int, float]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, bytes) per connection: each pattern flow split over ``connections``."""
    f = plan.fabric
    if connections < 1:
        raise InputError("connections", f"must be >= 1, got {connections}")
    if matrix is not None:
        src = np.array([m[0] for m in matrix], np.int64)
        dst = np.array([m[1] for m in matrix], np.int64)
        nbytes = np.array([m[2] for m in matrix], float)
    elif pattern == "polarization":
        from hpn.routing.polarization import job_flows

        hosts = plan.spec.hosts_per_segment
        src, dst, _ = job_flows(f, hosts, min(senders, hosts), 1)
        nbytes = np.full(len(src), float(size))
    elif pattern in PATTERNS:
        from hpn.workload import make_pattern

        t = make_pattern(pattern, f, size, seed=seed).tasks
        src, dst, nbytes = t.src, t.dst, t.size.astype(float)
    else:
        raise InputError(
            "pattern", f"unknown pattern {pattern!r}; choose from {', '.join(PATTERNS)}"
        )
    bad = np.flatnonzero(plan.nic_ip[src] == 0) if len(src) else []
    if len(bad):
        raise InputError("flows", f"node {int(src[bad[0]])} is not a NIC of the lab")
    same = plan.ns_of_node[src] == plan.ns_of_node[dst]
    src, dst, nbytes = src[~same], dst[~same], nbytes[~same]  # NVLink pairs: not networked
    src, dst = np.repeat(src, connections), np.repeat(dst, connections)
    nbytes = np.repeat(nbytes / connections, connections)
    if len(src) > MAX_FLOWS:
        raise InputError("connections", f"{len(src)} connections exceed the lab's {MAX_FLOWS}")
    if not len(src):
        raise InputError("pattern", "no flow crosses the network")
    return src, dst, nbytes


def sports_for(plan: LabPlan, src, dst, routing: str, seed: int) -> tuple[np.ndarray, dict]:
    """Source ports: drawn per connection (``ecmp``) or by HPN's path selection (``hpn``)."""
    if routing == "hpn":
        from hpn.lab.select import select

        return select(plan, src, dst, seed)
    if routing != "ecmp":
        raise InputError("routing", f"the lab routes 'ecmp' or 'hpn', got {routing!r}")
    sp = random_sports(seed, len(src)).astype(np.int64)
    # a source address cannot bind one port twice: move duplicates to the next free port
    for s in np.unique(src):
        idx = np.flatnonzero(src == s)
        used: set[int] = set()
        for i in idx:
            while int(sp[i]) in used:
                sp[i] = 49152 + (int(sp[i]) - 49152 + 1) % 16384
            used.add(int(sp[i]))
    return sp.astype(np.uint32), {}


def traffic(
    name: str = "0",
    pattern: str = "polarization",
    size: float = 256e3,
    connections: int = 4,
    routing: str = "ecmp",
    rate: float = 2e6,
    payload: int = 1000,
    seed: int = 0,
    senders: int = 2,
    matrix: list[tuple[int, int, float]] | None = None,
) -> dict[str, Any]:
    """Send real UDP flows, read the counters, and compare every link with the model."""
    if not 64 <= payload <= 1400:
        raise InputError("payload", f"must be 64..1400 bytes, got {payload}")
    plan, _ = load(name)
    src, dst, nbytes = flows_of(plan, pattern, size, connections, seed, senders, matrix)
    sport, sel = sports_for(plan, src, dst, routing, seed)
    paths, ok = learn_paths(plan, src, dst, sport)
    before = snapshot(plan)
    tr = run_flows(plan, FlowSet(src, dst, sport, nbytes), rate, payload)
    measured = snapshot(plan) - before
    model = model_link_bytes(plan, src, dst, tr.wire_bytes().astype(float), paths)
    receivers = np.unique(dst)
    return {
        "lab": name,
        "preset": plan.spec.preset,
        "dual_plane": bool(plan.fabric.spec.dual_plane)
        if hasattr(plan.fabric.spec, "dual_plane")
        else None,
        "dual_tor": bool(getattr(plan.fabric.spec, "dual_tor", False)),
        "control": plan.spec.control,
        "ecmp_seeds": plan.spec.ecmp_seeds,
        "pattern": pattern,
        "routing": routing,
        "seed": seed,
        "flows": int(len(src)),
        "connections": connections,
        "size_bytes": float(nbytes.sum()),
        "rate_bps_per_flow": rate,
        "payload_bytes": payload,
        "packets_sent": int(tr.sent.sum()),
        "packets_received": int(tr.received.sum()),
        "packets_lost": int(tr.lost.sum()),
        "send_errors": int(tr.send_errors.sum()),
        "duration_s": round(tr.duration, 3),
        "flows_routed": int(ok.sum()),
        "selection": sel,
        "measured": port_balance(plan, measured.astype(float), receivers),
        "model": port_balance(plan, model, receivers),
        "model_vs_measured": compare_links(plan, measured, model),
        "_links": {
            "measured": measured,
            "model": model,
            "paths": paths,
            "sport": sport,
            "src": src,
            "dst": dst,
        },
    }
