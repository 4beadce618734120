"""The backend contract: everything a pool policy may ask of the GPUs, and nothing more.

A policy (scheduler) drives a `Backend` through the operations below and reacts to their
completions; the backend runs them (the simulated backend charges the ground-truth cost
model on an event clock, a real engine runs real kernels on a wall clock). Data flows one
way: trace -> policy -> backend -> metrics sink.

Rules every backend keeps (see docs/guide/pool.md, "The backend contract"):

- **Instances.** `backend.instances` is fixed when the backend is built from a `Cluster`;
  each is an `Instance` handle: its identity (`iid`, `tp`, `role`) and what a policy may
  read (`resident`, `prefetched`, `busy`, `decoding`). Only the backend writes those; the
  policy owns `state`. Backend bookkeeping (link timers, running operations, busy time)
  lives in the backend, never on the handle.
- **Clock.** `now()` is seconds since the run started; `call_at(t, fn, *args)` runs `fn`
  at `t` (at once when `t` is past). Every callback (arrivals, timers, completions) runs on
  one thread, one at a time, so policies need no locks.
- **Operations.** `load`, `prefill`, `decode`, `move_kv` start work and return at once;
  each later calls its `on_done` exactly once with a `Done` (its `op`, instance, requests
  and time). `prefetch`, `interrupt`, `join`, `evict`, `place` and `fail` act at once.
- **Tokens.** Every token a backend produces goes through `emit_tokens`, which advances
  the request (`Request.emit`: generated count, first/done times, SLO credit) and reports
  to the `MetricsSink`. A backend keeps `Request.kv_at`: the instance holding (or, while a
  `move_kv` is under way, receiving) the request's KV cache, None for host memory; set
  when a prefill completes and when a move starts.
- **Run loop.** `run(arrivals, on_arrival, until)` delivers each request to `on_arrival`
  at its `arrival` time and serves until `until` (or until no work is left).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from hpn.pool.requests import Request

Role = Literal["prefill", "decode", "worker"]
OpName = Literal["load", "prefill", "decode", "move_kv"]


@dataclass(frozen=True)
class Cluster:
    """GPUs given to a policy; `tp` GPUs form one instance.

    A split cluster (`prefill_gpus` + `decode_gpus` > 0) has prefill and decode instances;
    otherwise `gpus` GPUs form colocated `worker` instances.
    """

    gpus: int = 0
    prefill_gpus: int = 0
    decode_gpus: int = 0
    tp: int = 1

    @property
    def split(self) -> bool:
        """Whether the cluster has prefill and decode partitions."""
        return self.prefill_gpus + self.decode_gpus > 0

    def roles(self) -> list[tuple[Role, int]]:
        """(role, instance count) in instance-id order."""
        if self.split:
            return [
                ("prefill", self.prefill_gpus // self.tp),
                ("decode", self.decode_gpus // self.tp),
            ]
        return [("worker", self.gpus // self.tp)]

    def instances(self, gpus: int) -> int:
        """Instances of `gpus` GPUs."""
        return gpus // self.tp


class Instance:
    """The handle of one serving instance (`tp` GPUs): what a policy may read.

    Attributes
    ----------
    iid, tp, role
        Identity, fixed.
    resident
        Model whose weights are ready on the instance (the last one loaded, or the first
        one placed); None while a load is under way.
    models
        Every model whose weights are on the instance: {resident} after a `load`, all the
        placed models of a multiplexing instance; empty while a load is under way.
    prefetched
        Model being (or done being) pre-loaded behind the resident one, else None.
    busy
        A `load`, `prefill` or `decode` operation is running on the instance.
    decoding
        The running operation is a `decode` (so `interrupt` and `join` apply).
    state
        Owned by the policy (the backend never reads it).
    """

    __slots__ = (
        "iid",
        "tp",
        "role",
        "resident",
        "models",
        "prefetched",
        "busy",
        "decoding",
        "state",
    )

    def __init__(self, iid: int, tp: int, role: Role):
        self.iid, self.tp, self.role = iid, tp, role
        self.resident: str | None = None
        self.models: frozenset[str] = frozenset()
        self.prefetched: str | None = None
        self.busy = False
        self.decoding = False
        self.state: object = None

    def __repr__(self) -> str:
        return f"Instance({self.iid}, {self.role}, resident={self.resident})"


@dataclass(frozen=True)
class Done:
    """Completion of one operation.

    `reqs`: prefill -> the prefilled requests (first token emitted, KV on `inst`);
    decode -> the requests that finished during the operation; move_kv -> the moved
    requests; load -> empty. `inst`: the instance it ran on (move_kv: the destination,
    None for host memory). `t`: completion time on the backend's clock.
    """

    op: OpName
    inst: Instance | None
    reqs: tuple[Request, ...]
    t: float

    @property
    def instance(self) -> Instance:
        """`inst` of a load, prefill or decode (which always run on an instance)."""
        if self.inst is None:
            raise ValueError(f"a {self.op} to host memory has no instance")
        return self.inst


OnDone = Callable[[Done], None]


class MetricsSink(Protocol):
    """Where a backend reports what it measured (token times, switches, busy time)."""

    def tokens(self, req: Request, t_first: float, step: float, n: int, gap: float | None) -> None:
        """`n` tokens of `req` at t_first, t_first + step, ...; `gap`: time since the
        request's previous token (None for its first token)."""

    def switched(self, inst: Instance, model: str, t: float) -> None:
        """`model` became resident on `inst` at `t` (a scale-up)."""

    def busy(self, inst: Instance, seconds: float) -> None:
        """`inst` computed for `seconds` (GPU-seconds = seconds x inst.tp)."""

    def failed(self, req: Request) -> None:
        """The policy gave up on `req`."""


class Backend(ABC):
    """Operations a policy can run on instances; completions arrive as `Done`.

    Subclasses implement the clock, the run loop and the operations; `emit_tokens`,
    `fail` and construction of `instances` are shared.
    """

    def __init__(self, cluster: Cluster, sink: MetricsSink):
        self.cluster = cluster
        self.sink = sink
        insts: list[Instance] = []
        for role, n in cluster.roles():
            insts += [Instance(len(insts) + k, cluster.tp, role) for k in range(n)]
        self.instances: tuple[Instance, ...] = tuple(insts)

    def role(self, role: Role) -> list[Instance]:
        """The instances of one role, in id order."""
        return [i for i in self.instances if i.role == role]

    # --- clock and run loop --------------------------------------------------------------
    @abstractmethod
    def now(self) -> float:
        """Seconds since the run started."""

    @abstractmethod
    def call_at(self, t: float, fn: Callable[..., object], *args: object) -> None:
        """Run `fn(*args)` at time `t` (at once, after the current callback, if past)."""

    @abstractmethod
    def run(
        self, arrivals: Sequence[Request], on_arrival: Callable[[Request], None], until: float
    ) -> None:
        """Deliver each request to `on_arrival` at its arrival time; serve until `until`."""

    # --- weights -------------------------------------------------------------------------
    @abstractmethod
    def load(self, inst: Instance, model: str, on_done: OnDone) -> None:
        """Make `model` resident on `inst` (scaling the old one down); done at once if it
        already is. Uses the pre-loaded copy when `inst.prefetched == model`."""

    @abstractmethod
    def prefetch(self, inst: Instance, model: str) -> bool:
        """Start pre-loading `model` behind the resident one if memory allows; True if
        `model` is (now) pre-loading or pre-loaded."""

    def evict(self, inst: Instance) -> None:
        """Drop the instance's weights at once (an engine stopped); the next `load` pays in
        full. Only when the instance is not busy."""
        inst.resident, inst.models, inst.prefetched = None, frozenset(), None

    def place(self, inst: Instance, model: str) -> None:
        """Weights resident before the run starts (static placement; no time charged);
        several models may be placed on one instance (multiplexing)."""
        inst.models = inst.models | {model}
        if inst.resident is None:
            inst.resident = model

    # --- compute -------------------------------------------------------------------------
    @abstractmethod
    def prefill(self, inst: Instance, reqs: list[Request], on_done: OnDone) -> None:
        """Prefill same-model requests (one token each); their model is in `inst.models`."""

    @abstractmethod
    def decode(
        self,
        inst: Instance,
        batches: list[list[Request]],
        budget: float | None,
        on_done: OnDone,
        stop_on_finish: bool = False,
    ) -> None:
        """Decode steps over `batches` (same-model lists, interleaved step by step; models
        in `inst.models`, KV on `inst`) until `budget` seconds pass after the end of the
        first step (a quota is wall-clock time counted from the end of the turn's first
        step), every request finishes, or (with `stop_on_finish`) one finishes.
        `budget=None`: no time limit."""

    @abstractmethod
    def interrupt(self, inst: Instance) -> None:
        """End the running decode operation at its next step boundary (no-op otherwise)."""

    def step_end(self, inst: Instance) -> float | None:
        """End of the last step of the running decode operation that has completed by now;
        None when no decode operation runs or none of its steps has ended yet (a backend
        that cannot tell answers None)."""
        return None

    @abstractmethod
    def join(self, inst: Instance, reqs: list[Request], index: int = 0) -> bool:
        """Add `reqs` (KV on `inst`) to batch `index` of the running decode operation from
        its next step boundary, keeping its budget; False if the operation ends there."""

    # --- KV cache ------------------------------------------------------------------------
    @abstractmethod
    def move_kv(
        self, reqs: list[Request], src: Instance | None, dst: Instance | None, on_done: OnDone
    ) -> None:
        """Copy the KV cache of `reqs` from `src` to `dst` (None = host memory)."""

    # --- shared --------------------------------------------------------------------------
    def emit_tokens(self, req: Request, t_first: float, step: float, n: int) -> None:
        """Record `n` tokens of `req` at t_first, t_first + step, ... (the one token path)."""
        gap = None if req.generated == 0 else t_first - req.last_t
        req.emit(t_first, step, n)
        self.sink.tokens(req, t_first, step, n, gap)

    def fail(self, req: Request) -> None:
        """The policy gives up on a request (it scores 0 attainment)."""
        req.failed = True
        self.sink.failed(req)
