"""Batched prefill and decode steps on transformers' model classes over paged KV.

A request's KV lives in the blocks of its instance's `KVManager` (`hpn.serve.paged`), or,
between turns, in host memory (``Seq.kv``: its blocks' rows). A prefill left-pads its
prompts (with an attention mask and true position ids, as `generate()` does for a padded
batch) and writes their K/V into their slots; a decode step feeds each request's last
token at its true position and attends to its context read through its block table.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any

from hpn.serve.sampling import GREEDY, Sampled, SamplingParams, sample


@dataclass(eq=False)
class Seq:
    """Engine-side state of one request: tokens, sampling and its KV cache."""

    rid: int
    model: str
    prompt: list[int]
    max_new: int
    eos: frozenset[int] = frozenset()  # empty: ignore EOS
    sampling: SamplingParams = GREEDY
    out: list[int] = field(default_factory=list)
    lps: list = field(default_factory=list)  # per output token: (logprob, top) or None
    kv: Any = None  # in host memory: its blocks' rows [blocks, elems]; None on a device
    kv_on: int | None = None  # instance whose blocks hold the KV, None = host
    finished: bool = False
    on_token: Any = None  # callback(req, seq, token, t) on the scheduler thread
    moving: Any = None  # threading.Event of the last KV move started (set when it lands)
    cancelled: bool = False  # aborted by its client: leaves at the next step boundary
    preempted: bool = False  # KV dropped for lack of blocks: recomputed when they free
    end_reason: str = ""  # why it was aborted (abort, or stop: a stop string matched)
    cancel_step: int = -1  # the engine's step count when aborted, and when it left
    drop_step: int = -1
    _gen: Any = None

    @property
    def kv_tokens(self) -> int:
        """Tokens in the KV cache (the last generated token is not in it yet)."""
        return len(self.prompt) + max(0, len(self.out) - 1)

    def wait_kv(self) -> None:
        """Block until every KV move started for this request has landed."""
        m = self.moving
        if m is not None:
            m.wait()

    def take(self, token: int, lp=None) -> None:
        self.out.append(token)
        self.lps.append(lp)
        if len(self.out) >= self.max_new or (
            token in self.eos and len(self.out) > self.sampling.min_tokens
        ):
            self.finished = True

    def generator(self, device):
        import torch

        if self._gen is None:
            g = torch.Generator(device=device)
            seed = self.sampling.seed
            g.manual_seed(self.rid if seed is None else seed)
            self._gen = g
        return self._gen


def cache_kw(module) -> str:
    """The forward argument that takes the KV cache (`cache` in newer transformers)."""
    name = getattr(module, "_hpn_cache_kw", None)
    if name is None:
        params = inspect.signature(module.forward).parameters
        name = "cache" if "cache" in params else "past_key_values"
        module._hpn_cache_kw = name
    return name


def prefill(module, seqs: list[Seq], kv, recompute: bool = False) -> list[Sampled]:
    """One forward over the (left-padded) prompts, their K/V written into their blocks of
    `kv` (a `KVManager` with a store; blocks taken here when not yet); the first tokens.

    `recompute`: rebuild the KV of preempted seqs (prompt and every output token but the
    last, which the next decode step feeds); nothing is sampled."""
    import torch

    from hpn.serve.paged import prefill_cache

    ctxs = [s.prompt + s.out[:-1] if recompute else s.prompt for s in seqs]
    lens = [len(c) for c in ctxs]
    for s, n in zip(seqs, lens, strict=True):
        if not kv.allocate_slots(s.rid, n):
            raise RuntimeError(f"request {s.rid}: no free KV blocks for {n} tokens")
    P = max(lens)
    ids = torch.zeros(len(seqs), P, dtype=torch.long)
    mask = torch.zeros(len(seqs), P, dtype=torch.long)
    for i, c in enumerate(ctxs):
        ids[i, P - lens[i] :] = torch.tensor(c)
        mask[i, P - lens[i] :] = 1
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    device = kv.store.device
    ids, mask, pos = ids.to(device), mask.to(device), pos.to(device)
    cache = prefill_cache(kv, module, [s.rid for s in seqs], lens, P)
    with torch.inference_mode():
        out = module(
            input_ids=ids,
            attention_mask=mask,
            position_ids=pos,
            use_cache=True,
            logits_to_keep=1,
            **{cache_kw(module): cache},
        )
        if recompute:
            return []
        return sample(out.logits[:, -1, :], seqs)


class DecodeBatch:
    """Same-model requests decoding together; membership changes between steps.

    The batch holds no KV: each step reads the requests' contexts through their block
    tables in `kv` and writes the fed tokens' K/V into their slots (`hpn.serve.paged`), so
    joining and leaving cost nothing."""

    def __init__(self, module, seqs: list[Seq], kv):
        self.module, self.kv = module, kv
        self.device = kv.store.device
        self.seqs: list[Seq] = list(seqs)
        self.forward_s = 0.0  # time inside the model's forward (for the overhead figure)

    def assemble(self, seqs: list[Seq]) -> None:
        """The batch is now `seqs` (their KV in the blocks of `kv`)."""
        self.seqs = list(seqs)

    def split(self) -> list[Seq]:
        """Empty the batch; its seqs (their KV stays in their blocks)."""
        seqs, self.seqs = self.seqs, []
        return seqs

    def drop(self, keep: list[int]) -> None:
        """Keep only rows `keep` (finished requests leave the batch)."""
        self.seqs = [self.seqs[i] for i in keep]

    def step(self) -> list[Sampled]:
        """One forward over the batch: each seq's last token in, one new token out (the
        slot of the fed token is taken here when not yet)."""
        import torch

        from hpn.serve.paged import decode_cache

        positions = [s.kv_tokens for s in self.seqs]
        for s, n in zip(self.seqs, positions, strict=True):
            if not self.kv.allocate_slots(s.rid, n + 1):
                raise RuntimeError(f"request {s.rid}: no free KV block for token {n}")
        ids = torch.tensor([[s.out[-1]] for s in self.seqs], device=self.device)
        cache, mask = decode_cache(self.kv, self.module, [s.rid for s in self.seqs], positions)
        pos = torch.tensor(positions, device=self.device).view(-1, 1)
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.module(
                input_ids=ids,
                attention_mask=mask,
                position_ids=pos,
                use_cache=True,
                **{cache_kw(self.module): cache},
            )
            logits = out.logits[:, -1, :]
            if logits.is_cuda:
                torch.cuda.synchronize()
        self.forward_s += time.perf_counter() - t0
        return sample(logits, self.seqs)
