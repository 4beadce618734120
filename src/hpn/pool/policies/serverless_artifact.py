"""`serverless-artifact`: the Aegaeon authors' simulated ServerlessLLM, rule for rule.

The artifact evaluates ServerlessLLM in its own SimPy simulator (`aegaeon/sim/scheduler.py`,
`V02Policy` / `SeLLMPolicy`; `aegaeon/sim/worker.py`, `Worker.run`). Its rules, re-created
on the backend contract:

- **Early binding.** Each arriving request is appended at once to one worker's FIFO queue.
  A worker's *tail model* is the model of the last request in its queue (its current model
  when the queue is empty); its *tail run* is the number of trailing queued requests of that
  model. Free slots of a model = sum over workers whose tail model it is of
  max(0, QS - tail run), QS = 4.
- **Scale-up** when free slots < R = 1: the first worker with no model at all, else the
  worker, among those whose tail model differs, with the oldest last-batch stamp (strictly
  older wins; the first such worker on ties). The stamp is the end of the worker's last
  prefill or decode step: 0 before its first batch; it does not move during a swap or a
  prefill, so a worker that is swapping keeps looking least recently used.
- Otherwise the request joins the worker of its tail model with the shortest tail run.
- **A worker** serves the same-model run at the head of its queue (prefill first, then
  decode steps over the run, new requests of the run prefilled at the next step); when the
  run is done it swaps to the next head's model: the simulator's model size (14 / 18 /
  26 GB for the 7B / 9B / 13B, `ModelType.mem_size`) at 16 GB/s (`LOAD_BPS`).
- **Failure:** at every arrival, every request that has no token yet and arrived more than
  15 s ago fails (scores 0), wherever it waits; the simulator counts whole milliseconds
  (``now - arrival > 15000``), so a wait of exactly 15 s is not over. A worker drops
  finished and failed requests from its queue only at the top of its loop
  (`Worker.do_purge`): after each prefill batch, decode step or swap, or when an arrival
  wakes it idle. Until then a failed request still counts in its queue's tail run; once
  dropped, requests behind it of the head run's model join that run and are prefilled at
  that top of the loop (`make_batch`).
- **Same millisecond:** an arrival is handled before a step that ends at the same time
  (the simulator's events at one time run in the order scheduled): for that arrival the
  step has not ended (`SimulatedBackend.step_end`) and the stamp is the step's before.

Costs: the fitted profile (`costs`) by default; ``costs = "artifact"`` charges the
simulator's own latency model instead (`hpn.pool.artifact_costs`: its least-squares fits of
its profiles, read from the artifact folder ``artifact``, decode's batch term at -1, whole
milliseconds), so that a comparison with the simulator is left with its rules only.
"""

from __future__ import annotations

from collections import deque
from typing import Annotated, Any, Literal, cast

from pydantic import Field

from hpn.config import Duration, FilePath, Model
from hpn.errors import InputError
from hpn.gpus import GPU
from hpn.pool.backend import Done, Instance
from hpn.pool.costs import LatencySource, Loader
from hpn.pool.policies.base import Policy, PolicyContext
from hpn.pool.policies.serverless import HOUR
from hpn.pool.requests import Request

# the knobs of a policy that can charge the authors' simulator's own costs
ArtifactCosts = Annotated[
    Literal["fitted", "artifact"],
    Field(
        description="prefill/decode times: fitted (the profile fit) or artifact (the "
        "authors' simulator's own fits, batch term at -1, whole ms; needs --artifact)"
    ),
]
ArtifactDir = Annotated[
    FilePath | None,
    Field(
        description="the Aegaeon artifact's folder, whose aegaeon/sim/simdata profiles "
        "--costs artifact reads (no default: --costs artifact needs it, fitted costs take none)"
    ),
]

QS = 4
R = 1
START_TIMEOUT = 15.0
TIE = 1e-9  # s: a wait of exactly 15 s is not over 15 s (Art: whole ms, now - arrival > 15000)
LOAD_BPS = 16e9  # Art aegaeon/sim/worker.py: swap = model GB / 16 GB/s
# Art aegaeon/sim/__init__.py ModelType.mem_size, GB, per artifact model
SIM_SIZES = (("qwen2.5-7b", 14e9), ("yi-1.5-9b", 18e9), ("llama-2-13b", 26e9))


class _Queue:
    __slots__ = ("reqs", "model", "stamp", "loop_t")

    def __init__(self) -> None:
        self.reqs: deque[Request] = deque()
        self.model: str | None = None  # set when a swap starts (Art do_swap)
        self.stamp = 0.0  # end of the last batch
        self.loop_t = 0.0  # the last top of the worker's loop (its last purge)

    @staticmethod
    def of(inst: Instance) -> _Queue:
        """The queue of worker `inst` (its state)."""
        return cast(_Queue, inst.state)


class ServerlessArtifactKnobs(Model):
    """`serverless-artifact`: the authors' simulated ServerlessLLM (Art V02Policy)."""

    qs: int = Field(QS, ge=1, description="queue slots per worker (QS)")
    scale_up_below: int = Field(R, ge=1, description="scale up below this many free slots (R)")
    start_timeout: Duration = Field(
        START_TIMEOUT, gt=0, le=HOUR, description="no-token failure time"
    )
    costs: ArtifactCosts = "fitted"
    artifact: ArtifactDir = None


class ServerlessArtifact(Policy):
    """The authors' simulated ServerlessLLM (module docstring)."""

    name = "serverless-artifact"
    summary = "the Aegaeon artifact's simulated ServerlessLLM (early binding, QS 4, 15 s)"
    Knobs = ServerlessArtifactKnobs

    def __init__(
        self,
        ctx: PolicyContext,
        qs: int = QS,
        scale_up_below: int = R,
        start_timeout: float = START_TIMEOUT,
        costs: str = "fitted",
        artifact: str | None = None,
    ) -> None:
        super().__init__(ctx)
        backend = ctx.backend
        self.qs, self.r, self.start_timeout = qs, scale_up_below, start_timeout
        self.workers = backend.role("worker")
        for w in self.workers:
            w.state = _Queue()
        self.live: list[Request] = []
        self.failed_at: dict[int, float] = {}  # rid -> when the 15 s rule failed it

    @classmethod
    def loader(cls, gpu, switch, options) -> Loader:
        """The artifact simulator's swap: its model sizes at 16 GB/s."""
        return Loader(
            "artifact-sim swap",
            LOAD_BPS,
            0.0,
            "Art aegaeon/sim/worker.py do_swap, sim/__init__.py mem_size",
            SIM_SIZES,
        )

    @classmethod
    def latency(cls, gpu: GPU, options: dict[str, Any]) -> LatencySource | None:
        """The simulator's own latency model with ``costs = "artifact"``; else None.

        Raises
        ------
        InputError
            (``pool.artifact``) for a folder without the simulator's profiles, or one
            given, or missing, against ``costs``.
        """
        root = options.get("artifact")
        if options.get("costs", "fitted") != "artifact":
            if root is not None:
                raise InputError("pool.artifact", "is read only with costs = artifact")
            return None
        if root is None:
            raise InputError(
                "pool.artifact",
                "costs = artifact needs the Aegaeon artifact's folder: --artifact DIR",
            )
        from hpn.pool.artifact_costs import ArtifactLatency

        return ArtifactLatency(root)

    # --- binding -------------------------------------------------------------------------
    def _tail(self, inst: Instance) -> tuple[str | None, int]:
        q = _Queue.of(inst)
        if not q.reqs:
            return q.model, 0
        model, run = q.reqs[-1].model, 0
        for r in reversed(q.reqs):
            if r.model != model:
                break
            run += 1
        return model, run

    def _stamp(self, inst: Instance) -> float:
        """Last-batch stamp: the end of the last decode step when decoding, else the end of
        the last batch (a prefill or swap under way does not move it)."""
        q = _Queue.of(inst)
        if inst.decoding:
            t = self.backend.step_end(inst)
            if t is not None:
                return max(q.stamp, t)
        return q.stamp

    def _looped(self, inst: Instance) -> float:
        """When the worker last reached the top of its loop (a decode step ends there)."""
        q = _Queue.of(inst)
        t = self.backend.step_end(inst) if inst.decoding else None
        return q.loop_t if t is None else max(q.loop_t, t)

    def on_arrival(self, req: Request) -> None:
        """Apply the 15 s rule, then bind the request to one worker's queue (V02)."""
        now = self.backend.now()
        # a worker drops failed requests at the top of its loop (Art do_purge): those
        # failed before its last step ended are gone, the others still count in its tail
        for w in self.workers:
            q = _Queue.of(w)
            if any(r.failed for r in q.reqs):
                t = self._looped(w)
                q.reqs = deque(r for r in q.reqs if not (r.failed and self.failed_at[r.rid] <= t))
        keep, failed = [], False
        for r in self.live:
            if r.done_t >= 0 or r.failed:
                continue
            if r.first_t < 0 and now - r.arrival > self.start_timeout + TIE:
                self.backend.fail(r)
                self.failed_at[r.rid] = now
                failed = True
                continue
            keep.append(r)
        self.live = keep
        self.live.append(req)

        tails = {w.iid: self._tail(w) for w in self.workers}
        slots = sum(max(0, self.qs - n) for m, n in tails.values() if m == req.model)
        target = None
        if slots < self.r:
            oldest = float("inf")
            for w in self.workers:
                m, _ = tails[w.iid]
                if m is None:
                    target = w
                    break
                if m == req.model:
                    continue
                s = self._stamp(w)
                if s < oldest:
                    target, oldest = w, s
        if target is None:
            same = [w for w in self.workers if tails[w.iid][0] == req.model]
            target = min(same, key=lambda w: tails[w.iid][1])
        _Queue.of(target).reqs.append(req)
        for w in self.workers:  # Art Scheduler.schedule wakes every worker
            if w is target or not w.busy or (failed and w.decoding):
                self._kick(w)  # (a decoding worker: for a request behind one failed now)

    # --- the worker loop -------------------------------------------------------------------
    def _kick(self, inst: Instance) -> None:
        q = _Queue.of(inst)
        if inst.busy:
            # a request of the head run to prefill (new, or behind a failed request that the
            # next top of the loop purges, Art do_purge then make_batch): at the next step
            if inst.decoding and self._pending(self._head_run(q, purged=True)):
                self.backend.interrupt(inst)
            return
        q.reqs = deque(r for r in q.reqs if r.done_t < 0 and not r.failed)
        q.loop_t = self.backend.now()
        if not q.reqs:
            return
        model = q.reqs[0].model
        if inst.resident != model:
            q.model = model
            self.backend.load(inst, model, lambda d: self._kick(d.instance))
            return
        run = self._head_run(q)
        pre = self._pending(run)
        if pre:
            self.backend.prefill(inst, pre, self._batch_done)
        else:
            self.backend.decode(inst, [run], None, self._batch_done, stop_on_finish=True)

    @staticmethod
    def _head_run(q: _Queue, purged: bool = False) -> list[Request]:
        """The same-model run at the head of the queue (``purged``: as it is once the
        failed requests are dropped)."""
        model, run = None, []
        for r in q.reqs:
            if purged and r.failed:
                continue
            if model is None:
                model = r.model
            elif r.model != model:
                break
            run.append(r)
        return run

    @staticmethod
    def _pending(run: list[Request]) -> list[Request]:
        return [r for r in run if r.first_t < 0 and not r.failed]

    def _batch_done(self, done: Done) -> None:
        _Queue.of(done.instance).stamp = done.t
        self._kick(done.instance)
