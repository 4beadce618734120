# mypy: disable-error-code="safe-super"
# (Traced is a mixin put before a concrete backend class: its super() calls reach that class's
# operations, never Backend's abstract ones, which mypy cannot see from the mixin alone.)
"""Event timelines of a backend, to compare the engine with the simulator request by request.

`traced(cls)` is a subclass of a backend class (`EngineBackend`, `SimulatedBackend`) that
records every operation it is asked for and its completion: loads (scale-ups, with whether
a pre-loaded copy served it), evictions (scale-downs), prefills, decodes (steps run), KV
moves, and every request's arrival, token times and finish. The records are plain dicts,
so a replay's engine log and the simulator's prediction of it can be written as JSON and
lined up (`bench/serve_vs_sim.py --timeline DIR`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from hpn.pool.backend import Backend, Done, Instance
from hpn.pool.requests import Request


class Traced(Backend):
    """Mixin: log operations, completions and requests (put it before a backend class;
    never instantiated alone)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events: list[dict] = []
        self.requests: dict[int, Request] = {}
        self._decoding: dict[int, tuple[dict, list[Request]]] = {}  # iid: running decode
        self.token_times: dict[int, list[float]] = {}  # rid: every token's time

    # --- recording -------------------------------------------------------------------------
    def _ev(self, ev: str, inst: Instance | None, **kw) -> None:
        self.events.append(
            {"t": self.now(), "ev": ev, "iid": None if inst is None else inst.iid, **kw}
        )

    def _wrap(self, on_done, **kw):
        def done(d: Done) -> None:
            self._ev(f"{d.op}-done", d.inst, rids=[r.rid for r in d.reqs], **kw)
            on_done(d)

        return done

    def _seen(self, reqs) -> list[int]:
        for r in reqs:
            self.requests.setdefault(r.rid, r)
        return [r.rid for r in reqs]

    def emit_tokens(self, req, t_first, step, n):
        self.token_times.setdefault(req.rid, []).extend(t_first + i * step for i in range(n))
        super().emit_tokens(req, t_first, step, n)

    # --- the operations --------------------------------------------------------------------
    def load(self, inst, model, on_done):
        self._ev("load", inst, model=model, pre=inst.prefetched == model, had=inst.resident)
        super().load(inst, model, self._wrap(on_done, model=model))

    def evict(self, inst):
        self._ev("evict", inst, model=inst.resident)
        super().evict(inst)

    def prefetch(self, inst, model):
        ok = super().prefetch(inst, model)
        self._ev("prefetch", inst, model=model, ok=bool(ok))
        return ok

    def prefill(self, inst, reqs, on_done):
        self._ev("prefill", inst, rids=self._seen(reqs), lens=[r.input_len for r in reqs])
        super().prefill(inst, reqs, self._wrap(on_done))

    def decode(self, inst, batches, budget, on_done, stop_on_finish=False):
        rids = [self._seen(b) for b in batches]
        gen0 = [[r.generated for r in b] for b in batches]
        self._ev("decode", inst, rids=rids, budget=budget, gen0=gen0, joins=[])
        rec = self.events[-1]
        joiners: list[Request] = []
        self._decoding[inst.iid] = (rec, joiners)

        def done(d: Done) -> None:
            rec["gen1"] = [[r.generated for r in b] for b in batches]
            rec["joins_gen1"] = [r.generated for r in joiners]
            if self._decoding.get(inst.iid, (None,))[0] is rec:
                del self._decoding[inst.iid]
            self._ev("decode-done", d.inst, rids=[r.rid for r in d.reqs])
            on_done(d)

        super().decode(inst, batches, budget, done, stop_on_finish)

    def interrupt(self, inst):
        self._ev("interrupt", inst)
        super().interrupt(inst)

    def join(self, inst, reqs, index=0):
        ok = super().join(inst, reqs, index)
        self._ev("join", inst, rids=self._seen(reqs), ok=bool(ok))
        open_ = self._decoding.get(inst.iid)
        if ok and open_ is not None:  # into the running decode's record: [batch, rid, tokens, t]
            rec, joiners = open_
            rec["joins"] += [[index, r.rid, r.generated, self.now()] for r in reqs]
            joiners += reqs
        return ok

    def move_kv(self, reqs, src, dst, on_done):
        self._ev("move_kv", src, rids=self._seen(reqs), dst=None if dst is None else dst.iid)
        super().move_kv(reqs, src, dst, self._wrap(on_done))

    def fail(self, req):
        self._ev("fail", None, rids=self._seen([req]))
        super().fail(req)

    # --- output ----------------------------------------------------------------------------
    def dump(self) -> dict:
        """{"events": [...], "requests": [{rid, model, arrival, first_t, done_t, ...}]}."""
        for r in getattr(self, "reqs", {}).values():  # the engine's registered requests
            self.requests.setdefault(r.rid, r)
        reqs = [
            {
                "rid": r.rid,
                "model": r.model,
                "arrival": r.arrival,
                "input_len": r.input_len,
                "output_len": r.output_len,
                "first_t": r.first_t,
                "done_t": r.done_t,
                "generated": r.generated,
                "failed": bool(r.failed),
                "tokens": self.token_times.get(r.rid, []),
            }
            for r in sorted(self.requests.values(), key=lambda q: q.arrival)
        ]
        return {"events": self.events, "requests": reqs}

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.dump()) + "\n")


B = TypeVar("B", bound=Backend)


def traced(cls: type[B]) -> type[B]:
    """`cls` with a `Traced` event log (its instances are also `Traced`)."""
    return type(f"Traced{cls.__name__}", (Traced, cls), {})


def operations(log: dict) -> list[dict]:
    """The load, prefill and decode records of an event log (`Traced.dump`), each given
    its completion time (``end``) from the matching ``*-done`` event of its instance; a
    decode that is its instance's first forward of a model since that model was scaled
    up is marked ``fresh`` (its steps warm up first: `CostModel.decode_warmup`)."""
    open_: dict[tuple, list[dict]] = {}
    warm: dict[int, str | None] = {}  # iid: the model run since its last scale-up
    out = []
    for e in log["events"]:
        ev = e["ev"]
        if ev == "load" and e.get("had") != e.get("model"):
            warm[e["iid"]] = None
        if ev in ("load", "prefill", "decode"):
            rec = dict(e)
            if ev == "decode":
                rec["fresh"] = warm.get(e["iid"], "") is None
            if ev in ("prefill", "decode"):
                warm[e["iid"]] = "ran"
            open_.setdefault((ev, e["iid"]), []).append(rec)
            out.append(rec)
        elif ev in ("load-done", "prefill-done", "decode-done"):
            q = open_.get((ev[:-5], e["iid"]), [])
            if q:
                q.pop(0)["end"] = e["t"]
    return out
