"""Sampling parameters and the sampler: one token (and its log-probabilities) per row.

The order is vLLM's (v1 `Sampler`, `vllm/v1/sample/sampler.py`): log-probabilities of the
raw logits first (vLLM's default ``logprobs_mode="raw_logprobs"``), then logit bias,
``min_tokens`` (EOS masked), repetition, frequency and presence penalties, then greedy
argmax at temperature 0, else temperature, ``min_p``, ``top_k``, ``top_p`` and a seeded
multinomial draw. Penalties as OpenAI and vLLM define them: frequency and presence count
output tokens only; repetition (vLLM's, from CTRL) counts prompt and output tokens and
divides positive logits, multiplies negative ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_LOGPROBS = 20  # OpenAI's top_logprobs bound (vLLM's default max_logprobs is 20)


@dataclass(frozen=True)
class SamplingParams:
    """How one request picks its tokens (defaults: greedy, nothing else)."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0  # 0 or -1: every token
    min_p: float = 0.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    logit_bias: dict[int, float] = field(default_factory=dict)
    seed: int | None = None
    logprobs: int | None = None  # None: none; k: the sampled token's and the top k
    min_tokens: int = 0

    @property
    def plain_greedy(self) -> bool:
        """Argmax of the raw logits is the answer (no penalty, bias or logprobs)."""
        return (
            self.temperature <= 0
            and self.presence_penalty == 0
            and self.frequency_penalty == 0
            and self.repetition_penalty == 1
            and not self.logit_bias
            and self.logprobs is None
            and self.min_tokens == 0
        )


GREEDY = SamplingParams()

# what a sampled token carries back: (token, (its logprob, [(token, logprob), ...]) or None)
Sampled = tuple[int, Any]


def sample(logits, seqs) -> list[Sampled]:
    """One token per row of `logits` [rows, vocab] for `seqs` (each has `.sampling`,
    `.prompt`, `.out`, `.eos` and `.generator(device)`)."""
    import torch

    if all(s.sampling.plain_greedy for s in seqs):
        return [(int(t), None) for t in logits.argmax(dim=-1).tolist()]
    out: list[Sampled] = []
    for i, s in enumerate(seqs):
        p: SamplingParams = s.sampling
        x = logits[i].float()
        lp = None
        if p.logprobs is not None:
            raw = torch.log_softmax(x, dim=-1)
        if p.logit_bias:
            ids = torch.tensor(list(p.logit_bias), device=x.device)
            x = x.clone()
            x[ids] += torch.tensor(list(p.logit_bias.values()), device=x.device)
        if p.min_tokens and len(s.out) < p.min_tokens and s.eos:
            x = x.clone()
            x[torch.tensor(sorted(s.eos), device=x.device)] = -torch.inf
        x = _penalised(x, p, s)
        if p.temperature <= 0:
            tok = int(x.argmax().item())
        else:
            tok = _draw(x / p.temperature, p, s.generator(x.device))
        if p.logprobs is not None:
            top = []
            if p.logprobs > 0:
                v, ix = raw.topk(p.logprobs)
                top = list(zip(ix.tolist(), v.tolist(), strict=True))
            lp = (float(raw[tok].item()), top)
        out.append((tok, lp))
    return out


def _penalised(x, p: SamplingParams, s):
    import torch

    if p.repetition_penalty != 1:
        seen = torch.tensor(sorted(set(s.prompt) | set(s.out)), device=x.device)
        v = x[seen]
        x = x.clone()
        x[seen] = torch.where(v > 0, v / p.repetition_penalty, v * p.repetition_penalty)
    if (p.frequency_penalty or p.presence_penalty) and s.out:
        counts = torch.bincount(torch.tensor(s.out, device=x.device), minlength=x.shape[0])
        counts = counts[: x.shape[0]].to(x.dtype)
        x = x - p.frequency_penalty * counts - p.presence_penalty * (counts > 0).to(x.dtype)
    return x


def _draw(x, p: SamplingParams, gen) -> int:
    import torch

    probs = torch.softmax(x, dim=-1)
    if p.min_p > 0:
        probs = torch.where(probs < p.min_p * probs.max(), 0.0, probs)
    if 0 < p.top_k < probs.shape[0]:
        kth = probs.topk(p.top_k).values[-1]
        probs = torch.where(probs < kth, 0.0, probs)
    if p.top_p < 1:
        sp, order = probs.sort(descending=True)
        cum = sp.cumsum(0) / sp.sum()
        drop = (cum - sp / sp.sum()) >= p.top_p  # keep the smallest prefix reaching top_p
        sp[drop] = 0.0
        probs = torch.zeros_like(probs).scatter(0, order, sp)
    return int(torch.multinomial(probs, 1, generator=gen).item())
