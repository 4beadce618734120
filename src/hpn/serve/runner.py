"""Batched prefill and decode steps on transformers' model classes, with per-request KV.

A request's KV cache is one tensor ``[layers, 2, kv_heads, tokens, head_dim]`` (on its
instance's device, or in host memory between turns). A decode batch left-pads the caches
of its requests into a transformers `DynamicCache` with an attention mask and true position
ids (as `generate()` does for a padded batch), runs one forward per step, and splits the
caches back per request when its membership changes or the operation ends.
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
    kv: Any = None  # tensor [layers, 2, H, tokens, D]
    kv_on: int | None = None  # instance id holding `kv`, None = host
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


def prefill(module, seqs: list[Seq], device, recompute: bool = False) -> list[Sampled]:
    """One forward over the (left-padded) prompts; sets each seq's KV; the first tokens.

    `recompute`: rebuild the KV of preempted seqs (prompt and every output token but the
    last, which the next decode step feeds); nothing is sampled."""
    import torch
    from transformers import DynamicCache

    ctxs = [s.prompt + s.out[:-1] if recompute else s.prompt for s in seqs]
    lens = [len(c) for c in ctxs]
    P = max(lens)
    ids = torch.zeros(len(seqs), P, dtype=torch.long)
    mask = torch.zeros(len(seqs), P, dtype=torch.long)
    for i, c in enumerate(ctxs):
        ids[i, P - lens[i] :] = torch.tensor(c)
        mask[i, P - lens[i] :] = 1
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    ids, mask, pos = ids.to(device), mask.to(device), pos.to(device)
    with torch.inference_mode():
        out = module(
            input_ids=ids,
            attention_mask=mask,
            position_ids=pos,
            use_cache=True,
            logits_to_keep=1,
            **{cache_kw(module): DynamicCache()},
        )
        layers = out.past_key_values.layers
        for i, s in enumerate(seqs):
            s.kv = torch.stack(
                [
                    torch.stack((ly.keys[i, :, P - lens[i] :], ly.values[i, :, P - lens[i] :]))
                    for ly in layers
                ]
            )
        if recompute:
            return []
        return sample(out.logits[:, -1, :], seqs)


class DecodeBatch:
    """Same-model requests decoding together; membership changes between steps."""

    def __init__(self, module, seqs: list[Seq], device):
        self.module, self.device = module, device
        self.seqs: list[Seq] = []
        self.cache: Any = None  # transformers DynamicCache of the batch
        self.mask: Any = None  # attention mask tensor [batch, tokens]
        self.forward_s = 0.0  # time inside the model's forward (for the overhead figure)
        self.assemble(seqs)

    def assemble(self, seqs: list[Seq]) -> None:
        """Left-pad the seqs' KV caches into one batch cache."""
        import torch
        from transformers import DynamicCache

        self.seqs = list(seqs)
        if not seqs:
            self.cache = self.mask = None
            return
        lens = [s.kv.shape[3] for s in seqs]
        L = max(lens)
        n_layers, _, H, _, D = seqs[0].kv.shape
        t = torch.zeros(n_layers, 2, len(seqs), H, L, D, dtype=seqs[0].kv.dtype, device=self.device)
        mask = torch.zeros(len(seqs), L, dtype=torch.long, device=self.device)
        for i, s in enumerate(seqs):
            t[:, :, i, :, L - lens[i] :] = s.kv
            mask[i, L - lens[i] :] = 1
            s.kv = None  # now held by the batch
        self.cache = DynamicCache(ddp_cache_data=[(t[j, 0], t[j, 1]) for j in range(n_layers)])
        self.mask = mask
        self.lens = torch.tensor(lens, device=self.device)

    def split(self) -> list[Seq]:
        """Give each seq back its own (unpadded) KV; the batch is empty afterwards."""
        import torch

        seqs = self.seqs
        if not seqs:
            return []
        layers = self.cache.layers
        L = layers[0].keys.shape[2]
        lens = self.lens.tolist()
        for i, s in enumerate(seqs):
            a = L - lens[i]
            s.kv = torch.stack(
                [torch.stack((ly.keys[i, :, a:], ly.values[i, :, a:])) for ly in layers]
            )
        self.seqs, self.cache, self.mask = [], None, None
        return seqs

    def drop(self, keep: list[int]) -> None:
        """Keep only rows `keep` (finished requests leave the batch)."""
        import torch

        if len(keep) == len(self.seqs):
            return
        if not keep:
            self.seqs, self.cache, self.mask = [], None, None
            return
        idx = torch.tensor(keep, device=self.device)
        for ly in self.cache.layers:
            ly.keys = ly.keys.index_select(0, idx)
            ly.values = ly.values.index_select(0, idx)
        self.mask = self.mask.index_select(0, idx)
        self.lens = self.lens.index_select(0, idx)
        self.seqs = [self.seqs[i] for i in keep]
        # trim columns that are padding in every remaining row
        pad = int((self.mask.shape[1] - self.lens.max()).item())
        if pad > 0:
            for ly in self.cache.layers:
                ly.keys = ly.keys[:, :, pad:]
                ly.values = ly.values[:, :, pad:]
            self.mask = self.mask[:, pad:]

    def step(self) -> list[Sampled]:
        """One forward over the batch: each seq's last token in, one new token out."""
        import torch

        ids = torch.tensor([[s.out[-1]] for s in self.seqs], device=self.device)
        self.mask = torch.cat(
            [self.mask, torch.ones(len(self.seqs), 1, dtype=torch.long, device=self.device)], 1
        )
        pos = self.lens.view(-1, 1)
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.module(
                input_ids=ids,
                attention_mask=self.mask,
                position_ids=pos,
                use_cache=True,
                **{cache_kw(self.module): self.cache},
            )
            logits = out.logits[:, -1, :]
            if logits.is_cuda:
                torch.cuda.synchronize()
        self.forward_s += time.perf_counter() - t0
        toks = sample(logits, self.seqs)
        self.lens = self.lens + 1
        return toks
