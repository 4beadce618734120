"""An engine instance that prefills and decodes on the same GPUs (vLLM-like continuous
batching): new requests are prefilled first (interrupting decode at a step boundary), then
join the running batch; several resident models decode in interleaved steps.

Request-level policies (serverless, muxserve, dedicated) build on it and decide which
instance gets a request and which models are resident.
"""

from __future__ import annotations

from collections import deque
from typing import cast

from hpn.pool.backend import Done, Instance
from hpn.pool.policies.base import Policy, PolicyContext
from hpn.pool.requests import Request

MAX_BATCH = 256
MAX_PREFILL_TOKENS = 8192


class Worker:
    """Policy state of one worker instance: waiting and running requests."""

    __slots__ = ("waiting", "running", "assigned", "idle_since", "model")

    def __init__(self):
        self.model: str | None = None  # serverless: the one model this worker serves now
        self.waiting: deque[Request] = deque()
        self.running: dict[str, list[Request]] = {}
        self.assigned = 0
        self.idle_since = 0.0

    @staticmethod
    def of(inst: Instance) -> Worker:
        """The worker state of `inst` (set when the policy is built)."""
        return cast(Worker, inst.state)


class Colocated(Policy):
    """Workers that prefill and decode on the same GPUs (continuous batching)."""

    split = False

    def __init__(self, ctx: PolicyContext, max_batch: int = MAX_BATCH) -> None:
        super().__init__(ctx)
        self.max_batch = max_batch
        self.workers = ctx.backend.role("worker")
        for i in self.workers:
            i.state = Worker()

    def admit(self, inst: Instance, req: Request) -> None:
        """Queue `req` on `inst` and start work if it is idle."""
        w = Worker.of(inst)
        w.waiting.append(req)
        w.assigned += 1
        self.kick(inst)

    def ready(self, inst: Instance, req: Request) -> bool:
        """Whether `inst` holds the weights of `req`'s model."""
        return req.model in inst.models

    def kick(self, inst: Instance) -> None:
        """Start the next operation on `inst`: prefill waiting requests first, else decode."""
        w = Worker.of(inst)
        n_running = sum(len(v) for v in w.running.values())
        can_prefill = (
            bool(w.waiting) and n_running < self.max_batch and self.ready(inst, w.waiting[0])
        )
        if inst.busy:
            if can_prefill and inst.decoding:
                self.backend.interrupt(inst)
            return
        if can_prefill:
            model, tokens = w.waiting[0].model, 0
            batch: list[Request] = []
            rest: deque[Request] = deque()
            while w.waiting and n_running + len(batch) < self.max_batch:
                r = w.waiting.popleft()
                if r.model == model and (not batch or tokens + r.input_len <= MAX_PREFILL_TOKENS):
                    batch.append(r)
                    tokens += r.input_len
                else:
                    rest.append(r)
            rest.extend(w.waiting)
            w.waiting = rest
            self.backend.prefill(inst, batch, self._prefilled)
        elif n_running:
            batches = [v for v in w.running.values() if v]
            self.backend.decode(inst, batches, None, self._decoded, stop_on_finish=True)

    def _prefilled(self, done: Done) -> None:
        inst = done.instance
        w = Worker.of(inst)
        for r in done.reqs:
            if r.done_t >= 0:
                self._finish(inst, r)
            else:
                w.running.setdefault(r.model, []).append(r)
        self.kick(inst)

    def _decoded(self, done: Done) -> None:
        inst, finished = done.instance, done.reqs
        w = Worker.of(inst)
        if finished:
            for m in {r.model for r in finished}:
                w.running[m] = [r for r in w.running[m] if r.done_t < 0]
            for r in finished:
                self._finish(inst, r)
        self.kick(inst)

    def _finish(self, inst: Instance, req: Request) -> None:
        w = Worker.of(inst)
        w.assigned -= 1
        if w.assigned == 0:
            w.idle_since = self.backend.now()
        self.on_finished(inst, req)

    def on_finished(self, inst: Instance, req: Request) -> None:
        """Hook: a request of `inst` finished."""
