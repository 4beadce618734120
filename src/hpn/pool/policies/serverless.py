"""ServerlessLLM-like request-level autoscaling (OSDI 2024), after the Aegaeon artifact's
simulated baseline (`aegaeon/sim/scheduler.py`, V02).

An instance serves one model at a time, with up to `slots` (4) requests. A request goes to
an instance of its model with a free slot (the least loaded); otherwise an idle instance is
scaled to its model (one still holding the model within `keep_alive`, else an empty one,
else the least recently used); otherwise it waits in a global FCFS queue. A freed slot takes
the oldest queued request of the instance's model; an instance left empty takes the queue
head and switches to its model at the artifact simulator's loading speed, weight bytes /
16 GB/s (`LOAD_BPS`; 7B 0.875 s, 13B 1.625 s there), no pre-loading. A request not started
within `start_timeout` (15 s) fails, as in the artifact.
"""

from __future__ import annotations

from collections import deque

from hpn.pool.backend import Instance
from hpn.pool.costs import Loader
from hpn.pool.policies.base import Slo
from hpn.pool.policies.colocated import Colocated
from hpn.pool.requests import Request

SLOTS = 4
START_TIMEOUT = 15.0
KEEP_ALIVE = 60.0
LOAD_BPS = 16e9  # simulated ServerlessLLM swap (Art aegaeon/sim/worker.py, simulate.py)


class Serverless(Colocated):
    name = "serverless"
    summary = "request-level autoscaling: one model per GPU while it has requests"

    def __init__(
        self,
        backend,
        predictor,
        cluster,
        rates,
        slo=Slo(),
        slots=SLOTS,
        start_timeout=START_TIMEOUT,
        keep_alive=KEEP_ALIVE,
        **kw,
    ):
        super().__init__(backend, predictor, cluster, rates, slo, **kw)
        self.slots, self.start_timeout, self.keep_alive = slots, start_timeout, keep_alive
        self.queue: deque[Request] = deque()
        self.by_model: dict[str, deque[Request]] = {}
        self.taken: set[int] = set()

    def _alive(self, inst: Instance, model: str) -> bool:
        w = inst.state
        return w.model == model and self.backend.now() - w.idle_since <= self.keep_alive

    def on_arrival(self, req: Request) -> None:
        free = [
            i
            for i in self.workers
            if i.state.model == req.model and 0 < i.state.assigned < self.slots
        ]
        if free:
            self.admit(min(free, key=lambda i: i.state.assigned), req)
            return
        idle = [i for i in self.workers if i.state.assigned == 0]
        if idle:
            warm = [i for i in idle if self._alive(i, req.model)]
            empty = [i for i in idle if i.state.model is None]
            inst = (warm or empty or [min(idle, key=lambda i: i.state.idle_since)])[0]
            self._switch(inst, req.model)
            self.admit(inst, req)
            return
        self.queue.append(req)
        self.by_model.setdefault(req.model, deque()).append(req)

    def _switch(self, inst: Instance, model: str) -> None:
        w = inst.state
        if w.model == model and inst.resident == model and self._alive(inst, model):
            return
        w.model = model
        self.backend.load(inst, model, lambda d: self.kick(d.inst))

    @classmethod
    def loader(cls, gpu, switch, options) -> Loader | None:
        """The artifact simulator's swap (16 GB/s); the pool's for unoptimized switching."""
        if switch != "optimized":
            return None
        return Loader("artifact-sim", LOAD_BPS, 0.0, "Art aegaeon/sim/worker.py")

    def _take(self, q: deque[Request]) -> Request | None:
        now = self.backend.now()
        while q:
            r = q.popleft()
            if r.rid in self.taken:
                continue
            self.taken.add(r.rid)
            if now - r.arrival > self.start_timeout:
                self.backend.fail(r)
                continue
            return r
        return None

    def on_finished(self, inst: Instance, req: Request) -> None:
        w = inst.state
        q = self.by_model.get(w.model)
        while w.assigned and w.assigned < self.slots and q:
            r = self._take(q)
            if r is None:
                break
            self.admit(inst, r)
        if w.assigned == 0:
            head = self._take(self.queue)
            if head is None:
                return
            self._switch(inst, head.model)
            self.admit(inst, head)
            q = self.by_model.get(head.model)
            while w.assigned < self.slots and q:
                r = self._take(q)
                if r is None:
                    break
                self.admit(inst, r)
