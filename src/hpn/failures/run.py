"""``hpn fail`` as a function: a job's iterations across parsed faults on a fabric."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hpn.failures.checkpoint import Recovery
from hpn.failures.failover import Failover
from hpn.failures.faults import Fault, parse_fault
from hpn.failures.result import FailResult, FaultSummary
from hpn.failures.semantics import design_of, outages
from hpn.failures.timeline import run_timeline
from hpn.failures.workload import Iteration
from hpn.topology.fabric import Fabric


def run_fail(
    fabric: Fabric,
    it: Iteration,
    faults: list[Fault | str],
    *,
    stacked: bool = False,
    routing: str | None = None,
    seed: int = 0,
    recovery: Recovery | None = None,
    duration: float | None = None,
    router=None,
    hashing: Any = None,
    failover: Failover | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[FailResult, dict[str, Any]]:
    """(result, tables): the job's throughput, halts and crashes across ``faults``;
    ``progress(done, total)``: simulated time done (ms), after every iteration."""
    from hpn.routing import describe, router_for

    t0 = time.perf_counter()
    parsed = [parse_fault(f) if isinstance(f, str) else f for f in faults]
    design = design_of(fabric, stacked)
    router = router or router_for(fabric, routing, seed=seed, hashing=hashing)
    fo = failover or Failover()
    outs = outages(fabric, parsed, design, router.name, fo)
    rec = recovery or Recovery()
    flows_on = it.fabric if it.fabric is not None else fabric  # same links, NVLink's data rate
    result, tables = run_timeline(flows_on, it, outs, router, rec, duration, seed, progress)
    described = [_summary(fabric, it, router, f, design, fo) for f in parsed]
    out = FailResult(
        preset=getattr(fabric.spec, "preset", None),
        design=design,
        routing=router.name,
        routing_detail=describe(router),
        seed=seed,
        job=it.name,
        gpus=int(it.gpus.size),
        faults=described,
        timeout_s=rec.timeout,
        checkpoint_interval_s=rec.interval,
        restart_s=rec.restart,
        **result.figures(),
        wall_s=time.perf_counter() - t0,
    )
    return out, tables


def _summary(fabric, it, router, f: Fault, design: str, fo: Failover) -> FaultSummary:
    import numpy as np

    from hpn.engine.sim import route_flows

    o = outages(fabric, [f], design, router.name, fo)[0]
    links = o.links
    hold = np.zeros(len(links)) if o.hold is None else o.hold
    who = np.full(len(links), -1) if o.who is None else o.who  # gray: nobody moves them
    lk0 = int(links[0])
    ends = (
        fabric.node_name(int(fabric.links.src[lk0])),
        fabric.node_name(int(fabric.links.dst[lk0])),
    )
    tasks = it.dag.tasks
    rep, hops = route_flows(fabric, router, tasks).entries(np.arange(len(tasks.size)))
    blocked = np.zeros(fabric.num_links, bool)
    blocked[links[who == 2]] = True
    held = hold[hold > 0]
    return {
        "fault": f.text,
        "links_down": len(links) // 2,
        "first_link": " - ".join(ends),
        "moved_by_host": int((who == 0).sum()),
        "moved_by_network": int((who == 1).sum()),
        "moved_by_sender_reselect": int((who == 2).sum()),
        "held_max_s": float(held.max()) if len(held) else None,
        "flows_cut_off": int(len(np.unique(rep[blocked[hops]]))),
    }
