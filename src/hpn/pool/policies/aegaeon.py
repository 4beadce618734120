"""Aegaeon (SOSP 2025): token-level autoscaling over a prefill and a decode partition.

Prefill (A §4.2, Alg 1): grouped FCFS. A request joins a queued group of its model that has
had fewer than MAX_GPSIZE requests, else opens a group on the least-loaded prefill instance
(load = estimated time of its queued groups, switches included). Each instance prefills one
request at a time from its head group, switching models at group boundaries and pre-loading
the next group's model. The KV then moves to host memory for the decode partition.

``prefill_dispatch = "artifact"`` (opt-in; `aegaeon-artifact` sets it) dispatches as the
authors' simulator's MixServe does instead (Art ``aegaeon/sim/scheduler.py``
`MixServePolicy._schedule_prefill_fcfs`, ``worker.py`` `PrefillWorker.run`):

- **Join the first fitting group.** An arriving request joins the first queued group of its
  model, prefill instances in order and each one's groups in order, whose remaining
  requests' prompts plus its own fit the simulator's KV budget of one instance
  (``max_num_tokens``: 141,236 / 67,720 / 56,623 tokens for the 7B / 9B / 13B on an 80 GB
  GPU; no group-size limit); a group
  stays open while it has requests left, the one being prefilled included.
- **Else the instance with the fewest queued groups** (first on ties) gets a new group: the
  load is the count of groups, not their estimated time.
- **Same millisecond.** An idle instance takes its request only after every arrival of
  that millisecond is dispatched (the simulator wakes its worker with an event behind them),
  so for those arrivals its queue still holds the group.
- **Switch credit.** An instance prefills its head group's requests one at a time (BS1);
  a model switch costs the weights' swap time less the prefill time run since the
  instance's last switch, at least 10 ms (the simulator's ``PF``), instead of a pre-load.

Decode (A §4.3, Alg 2): a request joins a same-model batch on any decode instance if its KV
fits (64-token look-ahead), else a new batch on the instance with the fewest batches. Each
round orders batches by model, gives batch i the quota q_i of Eq. 2-3 and runs the batches
in turns; at a turn the instance switches model if needed, swaps the batch's KV in (decoding
starts once one request is resident; the others, and requests dispatched to the batch while
it runs, join at the next step once their KV lands), decodes for q_i counted from the end of
the first step (Art), and swaps it out if other batches wait. The next turn's model is
pre-loaded behind the running one, after the turn's KV swap-in, when memory allows. A lone
batch runs until work for another batch arrives.
"""

from __future__ import annotations

from collections import deque
from typing import Literal, cast

from pydantic import Field

from hpn.config import Model
from hpn.pool.backend import Done, Instance
from hpn.pool.costs import BLOCK_TOKENS
from hpn.pool.policies.base import Policy, PolicyContext
from hpn.pool.policies.quotas import Q_MAX, quotas
from hpn.pool.requests import Request

MAX_GPSIZE = 8
LOOKAHEAD = 64
MAX_BATCH = 256
# Art aegaeon/sim/__init__.py ModelType.max_num_tokens: (GPU GB - model GB) * 0.8 / KV GB
# per token, KV 4 * layers * hidden bytes; by layer count: (model GB, hidden)
SIM_MODELS = {28: (14, 3584), 48: (18, 4096), 40: (26, 5120)}


class _Group:
    __slots__ = ("model", "reqs", "size", "inst")

    def __init__(self, model: str, inst: Instance):
        self.model, self.size, self.inst = model, 0, inst
        self.reqs: deque[Request] = deque()


class _Batch:
    __slots__ = ("model", "reqs", "inst", "kv_tokens")

    def __init__(self, model: str, inst: Instance):
        self.model, self.inst, self.kv_tokens = model, inst, 0
        self.reqs: list[Request] = []


class _Decoder:
    __slots__ = ("batches", "round", "pos", "running", "open_ended", "dirty", "current")

    def __init__(self):
        self.current: _Batch | None = None  # the batch whose decode operation is running
        self.dirty = False
        self.batches: list[_Batch] = []
        self.round: list[tuple[_Batch, float | None]] = []
        self.pos = 0
        self.running = False
        self.open_ended = False

    @staticmethod
    def of(inst: Instance) -> _Decoder:
        """The state of decode instance `inst`."""
        return cast(_Decoder, inst.state)


def _groups(inst: Instance) -> deque[_Group]:
    """The queued groups of prefill instance `inst` (its state)."""
    return cast("deque[_Group]", inst.state)


class AegaeonKnobs(Model):
    """`aegaeon` (A §4, Alg 1-2)."""

    q_max: float = Field(Q_MAX, gt=0, le=3_600.0, description="longest decode quota, s (A Eq. 2-3)")
    max_group: int = Field(MAX_GPSIZE, ge=1, description="prefill group size limit")
    prefetch: bool = Field(True, description="pre-load the next model behind the running one")
    prefill_dispatch: Literal["alg1", "artifact"] = Field(
        "alg1",
        description="prefill dispatch: alg1 (A Alg 1: least estimated queued time) or "
        "artifact (the authors' simulator's MixServe: first fitting group, fewest groups, "
        "switch credit)",
    )


class Aegaeon(Policy):
    """Token-level autoscaling: grouped FCFS prefill, weighted round-robin decode."""

    name = "aegaeon"
    split = True
    summary = "token-level autoscaling: grouped FCFS prefill, weighted round-robin decode"
    Knobs = AegaeonKnobs

    def __init__(
        self,
        ctx: PolicyContext,
        q_max: float = Q_MAX,
        max_group: int = MAX_GPSIZE,
        prefetch: bool = True,
        prefill_dispatch: str = "alg1",
    ) -> None:
        super().__init__(ctx)
        self.artifact_prefill = prefill_dispatch == "artifact"
        self.credit: dict[int, float] = {}  # artifact: prefill s since the last switch
        self.swapping: set[int] = set()  # artifact: instances in a timed switch
        backend = ctx.backend
        self.tbt_slo = self.slo.tbt
        self.q_max, self.max_group, self.use_prefetch = q_max, max_group, prefetch
        self.prefillers = backend.role("prefill")
        self.decoders = backend.role("decode")
        for i in self.prefillers:
            i.state = deque()
        for i in self.decoders:
            i.state = _Decoder()
        self.open_group: dict[str, _Group] = {}
        self.open_batches: dict[str, list[_Batch]] = {}
        self.kv_cap: dict[str, int] = {}

    # --- prefill ---------------------------------------------------------------------------
    def on_arrival(self, req: Request) -> None:
        """Join a queued group of the model, or open one on the least-loaded prefill instance."""
        if self.artifact_prefill:
            self._arrival_artifact(req)
            return
        g = self.open_group.get(req.model)
        if g is None or g.size >= self.max_group:
            inst = min(self.prefillers, key=self._prefill_load)
            g = _Group(req.model, inst)
            _groups(inst).append(g)
            self.open_group[req.model] = g
        g.reqs.append(req)
        g.size += 1
        self._kick_prefill(g.inst)

    def _sim_cap(self, model: str) -> int:
        """The simulator's KV budget of one instance for `model` (its ``max_num_tokens``;
        this model's own, `_cap`, for a kind it does not know)."""
        layers = self.predictor.layers.get(model)
        if layers not in SIM_MODELS:
            return self._cap(model)
        size, hidden = SIM_MODELS[layers]
        per_token = 4 * layers * hidden / 1024**3
        return int((self.predictor.gpu_memory / 1e9 - size) * 0.8 / per_token)

    def _arrival_artifact(self, req: Request) -> None:
        """Art MixServe: the first fitting queued group, else fewest groups (docstring)."""
        cap = self._sim_cap(req.model)
        for inst in self.prefillers:
            for g in _groups(inst):
                if g.model == req.model and sum(r.input_len for r in g.reqs) + req.input_len <= cap:
                    g.reqs.append(req)
                    g.size += 1
                    self._wake(inst)
                    return
        inst = min(self.prefillers, key=lambda i: len(_groups(i)))
        g = _Group(req.model, inst)
        g.reqs.append(req)
        g.size = 1
        _groups(inst).append(g)
        self._wake(inst)

    def _wake(self, inst: Instance) -> None:
        """Art: an arrival wakes an idle worker, which runs after every event already due
        at this time, the arrivals of the same millisecond included (SimPy's order)."""
        if not inst.busy and inst.iid not in self.swapping:
            self.backend.call_at(self.backend.now(), self._kick_prefill, inst)

    def _kick_artifact(self, inst: Instance) -> None:
        """Art PrefillWorker.run: pop the head group's first request (the group leaves the
        queue with its last one), switch with the prefill-time credit, prefill it."""
        if inst.busy or inst.iid in self.swapping:
            return
        queue = _groups(inst)
        if not queue:
            return
        g = queue[0]
        req = g.reqs.popleft()
        if not g.reqs:
            queue.popleft()
        if inst.resident == req.model:
            self._prefill_one(inst, req)
            return
        wait = max(0.010, self.predictor.switch_time(req.model) - self.credit.get(inst.iid, 0.0))
        self.backend.evict(inst)
        self.swapping.add(inst.iid)
        self.backend.call_at(self.backend.now() + wait, self._switched, inst, req)

    def _switched(self, inst: Instance, req: Request) -> None:
        self.swapping.discard(inst.iid)
        self.credit[inst.iid] = 0.0
        self.backend.place(inst, req.model)
        self.backend.sink.switched(inst, req.model, self.backend.now())
        self._prefill_one(inst, req)

    def _prefill_one(self, inst: Instance, req: Request) -> None:
        t0 = self.backend.now()

        def done(d: Done) -> None:
            self.credit[inst.iid] = self.credit.get(inst.iid, 0.0) + self.backend.now() - t0
            self._prefilled(d)

        self.backend.prefill(inst, [req], done)

    def _prefill_load(self, inst: Instance) -> float:
        """Estimated time of the instance's queued groups, switches included (A Alg 1)."""
        p = self.predictor
        load, model = 0.0, inst.resident
        for g in _groups(inst):
            if g.model != model:
                load += p.switch_time(g.model)
                model = g.model
            load += sum(p.prefill_time(g.model, [r.input_len]) for r in g.reqs)
        return load

    def _kick_prefill(self, inst: Instance) -> None:
        if self.artifact_prefill:
            self._kick_artifact(inst)
            return
        if inst.busy:
            return
        queue = _groups(inst)
        while queue and not queue[0].reqs:
            g = queue.popleft()
            if self.open_group.get(g.model) is g:
                del self.open_group[g.model]
        if not queue:
            return
        req = queue[0].reqs.popleft()
        self.backend.load(inst, req.model, lambda d: self._run_prefill(d.instance, req))

    def _run_prefill(self, inst: Instance, req: Request) -> None:
        if self.use_prefetch:
            nxt = next((g.model for g in _groups(inst) if g.model != req.model and g.reqs), None)
            if nxt is not None:
                self.backend.prefetch(inst, nxt)
        self.backend.prefill(inst, [req], self._prefilled)

    def _prefilled(self, done: Done) -> None:
        live = [r for r in done.reqs if r.done_t < 0]
        if live:
            self.backend.move_kv(live, done.inst, None, lambda d: self._to_decode(d.reqs))
        self._kick_prefill(done.instance)

    # --- decode dispatch -------------------------------------------------------------------
    def _cap(self, model: str) -> int:
        """KV tokens a decode instance holds for one batch of `model`."""
        if model not in self.kv_cap:
            p = self.predictor
            free = p.memory_budget(self.cluster.tp) - p.weights[model]
            self.kv_cap[model] = int(free / p.kv_bytes_per_token[model])
        return self.kv_cap[model]

    @staticmethod
    def _need(r: Request) -> int:
        return -(-(r.input_len + r.generated + LOOKAHEAD) // BLOCK_TOKENS) * BLOCK_TOKENS

    def _to_decode(self, reqs: tuple[Request, ...]) -> None:
        for r in reqs:
            need, cap = self._need(r), self._cap(r.model)
            batches = self.open_batches.setdefault(r.model, [])
            b = next(
                (b for b in batches if len(b.reqs) < MAX_BATCH and b.kv_tokens + need <= cap),
                None,
            )
            if b is None:
                inst = min(self.decoders, key=lambda i: len(_Decoder.of(i).batches))
                b = _Batch(r.model, inst)
                _Decoder.of(inst).batches.append(b)
                batches.append(b)
            b.reqs.append(r)
            b.kv_tokens += need
            st = _Decoder.of(b.inst)
            if st.current is b:  # Art: joins the running same-model batch at its next step
                self._join(b.inst, b, [r])
            elif not st.running:
                self._start_round(b.inst)
            elif st.open_ended and st.round[0][0] is not b:  # a lone batch yields to new work
                st.dirty = True
                self.backend.interrupt(b.inst)

    # --- decode rounds ---------------------------------------------------------------------
    def _start_round(self, inst: Instance) -> None:
        st = _Decoder.of(inst)
        for b in st.batches:
            if not b.reqs:
                self.open_batches[b.model].remove(b)
        st.batches = [b for b in st.batches if b.reqs]
        if not st.batches:
            st.running = False
            return
        order = {inst.resident: -1}
        for b in st.batches:
            order.setdefault(b.model, len(order))
        batches = sorted(st.batches, key=lambda b: order[b.model])
        p = self.predictor
        if len(batches) == 1:
            st.round, st.open_ended = [(batches[0], None)], True
        else:
            d = [
                p.decode_step(b.model, len(b.reqs), sum(r.input_len + r.generated for r in b.reqs))
                for b in batches
            ]
            switch = sum(p.switch_time(m) for m in {b.model for b in batches})
            q, _ = quotas(d, switch, self.tbt_slo, self.q_max)
            st.round, st.open_ended = list(zip(batches, q, strict=True)), False
        st.pos = 0
        st.running = True
        st.dirty = False
        self._next_turn(inst)

    def _next_turn(self, inst: Instance) -> None:
        st = _Decoder.of(inst)
        while st.pos < len(st.round) and not st.round[st.pos][0].reqs:
            st.pos += 1
        if st.pos >= len(st.round):
            self._start_round(inst)
            return
        b, q = st.round[st.pos]
        st.pos += 1
        self.backend.load(inst, b.model, lambda d: self._swap_in(d.instance, b, q))

    def _swap_in(self, inst: Instance, b: _Batch, q: float | None) -> None:
        st = _Decoder.of(inst)
        # Art: decoding starts as soon as any request of the batch is resident; the others
        # join the running turn as their KV arrives
        here = [r for r in b.reqs if r.kv_at is inst]
        need = [r for r in b.reqs if r.kv_at is not inst]
        if here:
            self._decode(inst, b, here, q)
        else:
            first, need = need[:1], need[1:]
            self.backend.move_kv(first, None, inst, lambda _: self._decode(inst, b, first, q))
        if need:  # queued on the host link ahead of any pre-load
            self._join(inst, b, need)
        # the next model is pre-loaded behind the running one, after this turn's KV swap-in
        if self.use_prefetch:
            nxt = next(
                (x.model for x, _ in st.round[st.pos :] if x.model != b.model and x.reqs), None
            )
            if nxt is not None:
                self.backend.prefetch(inst, nxt)

    def _decode(self, inst: Instance, b: _Batch, reqs: list[Request], q: float | None) -> None:
        st = _Decoder.of(inst)
        if q is None and st.dirty:  # work arrived while this lone batch was loading
            q = 0.0
        self.backend.decode(inst, [reqs], q, lambda d: self._turn_done(d.instance, b, d.reqs))
        st.current = b
        # dispatched to this batch during the swap-in (moves already under way join by
        # themselves when they land)
        late = [r for r in b.reqs if r.kv_at is not inst and r.done_t < 0]
        if late:
            self._join(inst, b, late)

    def _join(self, inst: Instance, b: _Batch, reqs: list[Request]) -> None:
        def joined(_done: Done) -> None:
            if _Decoder.of(inst).current is b:
                self.backend.join(inst, reqs)

        self.backend.move_kv(reqs, None, inst, joined)

    def _turn_done(self, inst: Instance, b: _Batch, finished: tuple[Request, ...]) -> None:
        st = _Decoder.of(inst)
        st.current = None
        if finished:
            b.reqs = [r for r in b.reqs if r.done_t < 0]
        b.kv_tokens = sum(self._need(r) for r in b.reqs)
        if b.reqs and sum(1 for x in st.batches if x.reqs) > 1:
            self.backend.move_kv(list(b.reqs), inst, None, _noop)
        self._next_turn(inst)


def _noop(_done: Done) -> None:
    return None
