"""One function per ``hpn lab`` command: ``up``, ``status``, ``down``, ``traffic``, ``fail``,
``configs``. Each returns the command's JSON object."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hpn.errors import InputError
from hpn.lab import netns
from hpn.lab.build import down, load, status, up
from hpn.lab.learn import learn_paths
from hpn.lab.measure import (
    compare_links,
    control_floor,
    model_link_bytes,
    port_balance,
    snapshot,
)
from hpn.lab.plan import LabPlan
from hpn.lab.sports import sports_for
from hpn.lab.udp import FlowSet, run_flows

__all__ = [
    "capture",
    "configs",
    "down",
    "exec_in",
    "fail",
    "flows_of",
    "repair",
    "status",
    "traffic",
    "up",
    "vtysh",
]

PATTERNS = ("permutation", "all-to-all", "incast", "rail-ring", "polarization")
MAX_FLOWS = 512


def flows_of(
    plan: LabPlan,
    pattern: str,
    size: float,
    connections: int,
    seed: int = 0,
    senders: int = 2,
    matrix: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, bytes) per connection: each pattern flow split over ``connections``."""
    f = plan.fabric
    if connections < 1:
        raise InputError("connections", f"must be >= 1, got {connections}")
    if matrix is not None:  # htsim's connection matrix or CSV, hosts = the lab's NICs
        from hpn.workload.matrix import matrix_dag, read_matrix

        t = matrix_dag(read_matrix(matrix), f).tasks
        src, dst, nbytes = t.src, t.dst, t.size.astype(float)
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
    bad = np.flatnonzero(plan.nic_ip[src] == 0) if len(src) else np.zeros(0, np.int64)
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
    matrix: str | None = None,
    tables: dict | None = None,
) -> dict[str, Any]:
    """Send real UDP flows, read the counters, and compare every link with the model.

    ``tables``: a dict to fill with the run's ``flows`` and ``links`` tables (the columns
    ``hpn traffic`` has where the quantity is the same, plus the model's bytes per link)."""
    if not 64 <= payload <= 1400:
        raise InputError("payload", f"must be 64..1400 bytes, got {payload}")
    if matrix is None and not size > 0:
        raise InputError("size", f"must be > 0, got {size}")
    if not rate > 0:
        raise InputError("rate", f"must be > 0, got {rate}")
    plan, _ = load(name)
    with netns.locked(plan.prefix, "name"):
        return _traffic(plan, name, pattern, size, connections, routing, rate, payload, seed,
                        senders, matrix, tables)  # fmt: skip


def _traffic(plan, name, pattern, size, connections, routing, rate, payload, seed, senders,
             matrix, tables) -> dict[str, Any]:  # fmt: skip
    """:func:`traffic` once the lab is locked."""
    src, dst, nbytes = flows_of(plan, pattern, size, connections, seed, senders, matrix)
    sport, sel = sports_for(plan, src, dst, routing, seed)
    paths, ok = learn_paths(plan, src, dst, sport)
    unroutable = int((~ok).sum())
    if unroutable:  # no path in this fabric (rail-only across rails: NVLink is not built)
        if not ok.any():
            raise InputError("pattern", "no connection of this pattern has a path in the lab")
        src, dst, nbytes, sport = src[ok], dst[ok], nbytes[ok], sport[ok]
        paths, ok = paths.take(np.flatnonzero(ok)), ok[ok]
    from hpn.lab.kernelhash import model_paths

    # the model's own paths: its routing with the kernel's hash (--ecmp-hash linux)
    own, own_ok = model_paths(plan, src, dst, sport)
    same = int(sum(
        np.array_equal(paths.links[paths.offsets[i] : paths.offsets[i + 1]],
                       own.links[own.offsets[i] : own.offsets[i + 1]])
        for i in range(len(src))
    ))  # fmt: skip
    before = snapshot(plan)
    tr = run_flows(plan, FlowSet(src, dst, sport, nbytes), rate, payload)
    measured = snapshot(plan) - before
    model = model_link_bytes(plan, src, dst, tr.wire_bytes().astype(float), own, own_ok)
    receivers = np.unique(dst)
    floor = control_floor(tr.wire_bytes().astype(float))
    if tables is not None:
        tables.update(run_tables(plan, tr, src, dst, sport, nbytes, paths, measured, model))
    return {
        "lab": name,
        "preset": plan.spec.preset,
        "dual_plane": bool(plan.fabric.spec.dual_plane)
        if hasattr(plan.fabric.spec, "dual_plane")
        else None,
        "dual_tor": bool(getattr(plan.fabric.spec, "dual_tor", False)),
        "control": plan.spec.control,
        "ecmp_seeds": plan.spec.ecmp_seeds,
        "pattern": "matrix" if matrix is not None else pattern,
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
        "paths_predicted_as_kernel": same,
        "flows_unroutable": unroutable,
        "selection": sel,
        "fct_s": _fct(tr.last_rx),
        "makespan_s": round(float(np.nanmax(tr.last_rx)), 4) if len(src) else 0.0,
        "links_used": int(np.count_nonzero(measured[plan.links] > floor)),
        "control_bytes_floor": floor,
        "measured": port_balance(plan, measured.astype(float), receivers, floor),
        "model": port_balance(plan, model, receivers),
        "model_vs_measured": compare_links(plan, measured, model, floor),
    }


def _fct(finish: np.ndarray) -> dict[str, float | None]:
    """Flow completion (last packet received, s after the start), as ``hpn traffic``."""
    f = finish[np.isfinite(finish)]
    if not len(f):
        return {"min": None, "p50": None, "p99": None, "max": None}
    p50, p99 = np.percentile(f, [50, 99])
    return {"min": float(f.min()), "p50": float(p50), "p99": float(p99), "max": float(f.max())}


def run_tables(plan, tr, src, dst, sport, nbytes, paths, measured, model) -> dict:
    """``flows`` (one row per connection) and ``links`` (every lab link that carried bytes)."""
    from hpn.topology.fabric import LinkTier

    f = plan.fabric
    links = np.asarray(plan.links, np.int64)
    used = links[(measured[links] > 0) | (model[links] > 0)]
    rate = np.array([plan.rate_bps(int(ln)) for ln in used])
    first_hop = paths.links[paths.offsets[:-1]] if len(paths.links) else np.zeros(0, np.int64)
    port = np.where(paths.lengths > 0, f.links.port[first_hop[: len(src)]], -1)
    return {
        "flows": {
            "src": np.asarray(src, np.int64),
            "dst": np.asarray(dst, np.int64),
            "sport": np.asarray(sport, np.int64),
            "nic_port": np.asarray(port, np.int64),
            "hops": paths.lengths,
            "size_bytes": np.asarray(nbytes, float),
            "packets_sent": tr.sent,
            "packets_received": tr.received,
            "start_s": np.zeros(len(src)),
            "finish_s": tr.last_rx,
            "fct_s": tr.last_rx,
        },
        "links": {
            "link_id": used,
            "name": np.array([plan.ifname[int(ln)] for ln in used]),
            "tier": np.array([LinkTier(int(x)).name.lower() for x in f.links.tier[used]]),
            "bytes": measured[used].astype(float),
            "model_bytes": model[used],
            "util_mean": 8 * measured[used] / (rate * max(tr.duration, 1e-9)),
        },
    }


def configs(spec, out) -> dict[str, Any]:
    """Write every switch's FRR configuration (``<switch>.conf``) and its static routes
    (``<switch>.routes``, ``ip -batch`` lines) for a lab spec; needs no root."""
    from pathlib import Path

    from hpn.lab.bgp import write_configs
    from hpn.lab.plan import make_plan
    from hpn.lab.routes import static_commands, switch_next_hops

    plan = make_plan(spec)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError("out", f"{out} exists and is not a directory")
    from hpn.lab.export import writable_base

    parent = writable_base(out)
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise InputError("out", f"{out}: {parent} is not a directory this user can write to")
    try:
        names = write_configs(plan, out)
        hops = switch_next_hops(plan)
        for ns, role in enumerate(plan.ns_role):
            if role != "host":
                short = plan.namespaces[ns].removeprefix(plan.prefix + "-")
                text = "\n".join(static_commands(plan, ns, hops)) + "\n"
                (out / f"{short}.routes").write_text(text)
    except OSError as e:
        raise InputError("out", f"{e.filename or out}: {e.strerror}") from None
    return {
        "out": str(out),
        "switches": len(names),
        "files": sorted(names + [n.replace(".conf", ".routes") for n in names]),
        "asns": {n.removesuffix(".conf"): _asn(plan, n.removesuffix(".conf")) for n in names},
    }


def _asn(plan, short: str) -> int:
    from hpn.lab.bgp import asn_of

    ns = plan.namespaces.index(f"{plan.prefix}-{short}")
    return asn_of(plan, plan.nodes_in_ns[ns][0])


def fail(*args, **kwargs) -> dict[str, Any]:
    """Break a link or ToR (or flap a link) under traffic: see :func:`hpn.lab.fail.fail`."""
    from hpn.lab.fail import fail as run_fail

    return run_fail(*args, **kwargs)


def repair(name: str = "0") -> dict[str, Any]:
    """Bring up every link of the lab that is down (a killed ``fail`` leaves them so)."""
    from hpn.lab import ops

    plan, _ = load(name)
    with netns.locked(plan.prefix, "name"):
        return {"name": name, **ops.repair(plan)}


def exec_in(name: str, node: str, command: list[str], timeout: float = 30.0) -> dict[str, Any]:
    """Run a command in a node's namespace: its exit code and output."""
    from hpn.lab import ops

    plan, _ = load(name)
    rc, out, err = ops.exec_in(plan, node, command, timeout)
    return {"node": node, "command": command, "returncode": rc, "stdout": out, "stderr": err}


def vtysh(name: str, node: str, command: str | None = None) -> dict[str, Any]:
    """A vtysh command on a switch's own FRR daemons."""
    from hpn.lab import ops

    plan, _ = load(name)
    return {"node": node, "command": command, "output": ops.vtysh(plan, node, command)}


def capture(name: str, link: str, out: str, seconds: float = 5.0, packets: int = 1000):
    """tcpdump on one lab interface, bounded in time and packets."""
    from hpn.lab import ops

    plan, _ = load(name)
    return ops.capture(plan, link, out, seconds, packets)
