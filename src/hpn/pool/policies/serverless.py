"""`serverless`: ServerlessLLM (OSDI 2024) as the system behaves, with its shipped defaults.

Re-created from ServerlessLLM's code in the Aegaeon artifact (`ServerlessLLM/sllm/serve/`):

- **Per-model router** (`routers/roundrobin_router.py`): requests queue FIFO per model. An
  autoscaler loop runs every `interval` (1 s, `loop_interval`): desired instances =
  ceil(requests in the system / `target`), clamped to [`min_instances`, `max_instances`];
  with more desired than running (starting + ready) it creates one instance per tick; with
  fewer, it stops one once the model has been idle for `keep_alive` seconds (idle time grows
  by `interval` per such tick and is reset by every arrival).
- **Load balancer** (same file): takes the queue head, sleeps `interval`, then gives it to
  the next ready instance (round robin) that has fewer than `target` requests; with no
  ready instance it checks again after `interval`, with all full after 2 x `interval`.
- **GPU allocation** (`schedulers/fcfs_scheduler.py`): a new instance gets a free GPU first
  come, first served, or waits for one; nothing is evicted.
- **Scale-up cost**: every instance is a fresh inference engine (`backends/vllm_backend.py`,
  `AsyncLLMEngine.from_engine_args` in a new Ray actor) whose weights come from the
  ServerlessLLM store: engine start-up (`startup`) plus the weights at the store's
  bandwidth, host memory (`tier="dram"`) or SSD (`tier="ssd"`) (`SERVERLESS_LOADER`).
- Shipped defaults (`ServerlessLLM/configs/synth_model_*.json`, the artifact's deployment):
  target concurrency 1 per instance, 0 to 1 instances per model, keep-alive 0 s.

An instance serves its requests with continuous batching (`colocated.Colocated`).
"""

from __future__ import annotations

import math
from collections import deque
from functools import partial
from typing import Any, Literal

from pydantic import Field, model_validator

from hpn.config import Duration, Model
from hpn.pool.backend import Done, Instance
from hpn.pool.costs import ETA_PAPER, REINIT_S, Loader
from hpn.pool.policies.base import PolicyContext
from hpn.pool.policies.colocated import Colocated
from hpn.pool.requests import Request

TARGET = 1  # requests per instance ("target" with metric "concurrency")
MIN_INSTANCES = 0
MAX_INSTANCES = 1
KEEP_ALIVE_S = 0.0
INTERVAL_S = 1.0  # router loop_interval and load-balancer sleep
TIERS = ("dram", "ssd")
# ServerlessLLM store from SSD: OPT-6.7B (13.4 GB) in 1.175 s on average over 30 random
# loads on 2 NVMe SSDs in RAID 0 (ServerlessLLM/benchmarks/results/
# facebook_opt-6.7b_phantom_30_random.json, server-specs.md) -> 11.4 GB/s.
SSD_BPS = 13.4e9 / 1.175
# vLLM engine start-up: A §5.1 measures vLLM (re-)initialisation at 26.9 s for a 13B model
# of which 4.6 s is weight loading (`costs.REINIT_S`); the artifact's run of the real
# ServerlessLLM (ServerlessLLM/configs/latency_results.json) shows first tokens 29.5-37.6 s
# after arrival for the first request of each of the eight models that started first.
STARTUP_S = REINIT_S
# bounds no real setting comes near (ServerlessLLM's keep-alive and start-ups are seconds
# to minutes; a keep-alive past a day never scales down in a trace of the default limit)
HOUR, DAY = 3_600.0, 86_400.0
SSD_MAX_GBPS = 1_000.0  # PCIe 5.0 x16 is 64 GB/s


class _Engine:
    __slots__ = ("model", "inst", "ready", "load")

    def __init__(self, model: str):
        self.model = model
        self.inst: Instance | None = None
        self.ready = False
        self.load = 0


class _Router:
    __slots__ = ("queue", "count", "engines", "idle", "balancing", "rr")

    def __init__(self) -> None:
        self.queue: deque[Request] = deque()
        self.count = 0  # requests in the system (queued or running)
        self.engines: list[_Engine] = []
        self.idle = 0.0
        self.balancing = False
        self.rr = 0


class ServerlessKnobs(Model):
    """`serverless`: ServerlessLLM's autoscaler and store (defaults: its shipped configs)."""

    target: int = Field(TARGET, ge=1, description="target concurrency per instance")
    min_instances: int = Field(MIN_INSTANCES, ge=0, description="instances per model, min")
    max_instances: int = Field(MAX_INSTANCES, ge=1, description="instances per model, max")
    keep_alive: Duration = Field(
        KEEP_ALIVE_S, ge=0, le=DAY, description="idle time before scale-down"
    )
    interval: Duration = Field(
        INTERVAL_S, gt=0, le=HOUR, description="autoscaler and balancer loop"
    )
    tier: Literal["dram", "ssd"] = Field("dram", description="checkpoint store tier")
    startup: Duration = Field(STARTUP_S, ge=0, le=HOUR, description="engine start-up per instance")
    store_ssd_gbps: float = Field(
        SSD_BPS / 1e9, gt=0, le=SSD_MAX_GBPS, description="store SSD bandwidth, GB/s"
    )

    @model_validator(mode="after")
    def _range(self) -> ServerlessKnobs:
        if self.min_instances > self.max_instances:
            raise ValueError("min_instances must be <= max_instances")
        return self


class Serverless(Colocated):
    """ServerlessLLM with its shipped defaults (module docstring)."""

    name = "serverless"
    summary = "ServerlessLLM: per-model autoscaling of whole engines (shipped defaults)"
    Knobs = ServerlessKnobs

    def __init__(
        self,
        ctx: PolicyContext,
        target: int = TARGET,
        min_instances: int = MIN_INSTANCES,
        max_instances: int = MAX_INSTANCES,
        keep_alive: float = KEEP_ALIVE_S,
        interval: float = INTERVAL_S,
        tier: str = "dram",
        startup: float = STARTUP_S,
        store_ssd_gbps: float = SSD_BPS / 1e9,
        **kw: Any,
    ) -> None:
        super().__init__(ctx, **kw)
        self.target, self.min, self.max = target, min_instances, max_instances
        self.keep_alive, self.interval = keep_alive, interval
        self.routers: dict[str, _Router] = {m: _Router() for m in ctx.rates}
        self.free: deque[Instance] = deque(self.workers)
        self.waiting: deque[_Engine] = deque()  # FCFS GPU allocation
        self.engine_of: dict[int, _Engine] = {}
        self.ticking = False
        if min_instances > 0:
            self._tick_soon()

    @classmethod
    def loader(cls, gpu, switch, options) -> Loader:
        """Engine start-up plus the store's bandwidth (host memory or SSD)."""
        tier = options.get("tier", "dram")
        startup = options.get("startup", STARTUP_S)
        if tier == "ssd":
            bw = options.get("store_ssd_gbps", SSD_BPS / 1e9) * 1e9
            src = "ServerlessLLM store bench (SSD)"
        else:
            bw, src = gpu.host_link * ETA_PAPER, "host link x 0.625, as Aegaeon's (A §5.2)"
        return Loader(f"serverlessllm-{tier}", bw, startup, src)

    # --- arrivals and the load balancer ----------------------------------------------------
    def on_arrival(self, req: Request) -> None:
        """Queue at the model's router; the balancer and autoscaler take it from there."""
        r = self.routers.setdefault(req.model, _Router())
        r.count += 1
        r.idle = 0.0
        r.queue.append(req)
        self._tick_soon()
        if not r.balancing:
            r.balancing = True
            self.backend.call_at(self.backend.now() + self.interval, self._balance, req.model)

    def _balance(self, model: str) -> None:
        r = self.routers[model]
        ready = [e for e in r.engines if e.ready]
        if not ready:
            self.backend.call_at(self.backend.now() + self.interval, self._balance, model)
            return
        e = ready[r.rr % len(ready)]
        r.rr += 1
        if e.load >= self.target:
            self.backend.call_at(self.backend.now() + 2 * self.interval, self._balance, model)
            return
        e.load += 1
        assert e.inst is not None  # a ready engine has its instance
        self.admit(e.inst, r.queue.popleft())
        if r.queue:
            self.backend.call_at(self.backend.now() + self.interval, self._balance, model)
        else:
            r.balancing = False

    def on_finished(self, inst: Instance, req: Request) -> None:
        """A request left its engine."""
        self.engine_of[inst.iid].load -= 1
        self.routers[req.model].count -= 1

    # --- the autoscaler --------------------------------------------------------------------
    def _tick_soon(self) -> None:
        if not self.ticking:
            self.ticking = True
            now = self.backend.now()
            self.backend.call_at(math.floor(now / self.interval + 1) * self.interval, self._tick)

    def _tick(self) -> None:
        active = False
        for model, r in self.routers.items():
            desired = min(self.max, max(self.min, -(-r.count // self.target)))
            running = len(r.engines)
            if desired > running:
                self._create(model, r)
            elif desired < running:
                if r.idle >= self.keep_alive - 1e-9:
                    if self._stop(r):
                        r.idle = 0.0
                else:
                    r.idle += self.interval
            active = active or r.count > 0 or len(r.engines) > self.min
        self.ticking = False
        if active or self.waiting:
            self._tick_soon()

    def _create(self, model: str, r: _Router) -> None:
        e = _Engine(model)
        r.engines.append(e)
        self.waiting.append(e)
        self._allocate()

    def _allocate(self) -> None:
        while self.waiting and self.free:
            e, inst = self.waiting.popleft(), self.free.popleft()
            e.inst = inst
            self.engine_of[inst.iid] = e
            self.backend.evict(inst)  # a new engine: its weights load again
            self.backend.load(inst, e.model, partial(self._started, e))

    def _started(self, e: _Engine, done: Done) -> None:
        e.ready = True

    def _stop(self, r: _Router) -> bool:
        idle = [e for e in r.engines if e.ready and e.load == 0]
        if not idle:
            return False
        e = idle[-1]
        assert e.inst is not None  # a ready engine has its instance
        r.engines.remove(e)
        del self.engine_of[e.inst.iid]
        self.free.append(e.inst)
        self._allocate()
        return True
