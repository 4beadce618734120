"""The model catalog: weights, KV bytes per token, default tensor parallelism.

Parameter counts and attention shapes are from the models' published configs; KV bytes per
token = 2 (K, V) x layers x KV heads x head dim x 2 bytes (BF16) (aegaeon-facts §12.5).
`profile` names the key of the latency profile set (vLLM eager, TP=1) when one exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from hpn.errors import InputError


@dataclass(frozen=True)
class LLM:
    """A catalog model: parameters, attention shape, default TP, latency profile key."""

    name: str
    n_params: float
    layers: int
    kv_heads: int
    head_dim: int
    tp: int = 1
    profile: str | None = None
    max_len: int = 4096

    @property
    def weight_bytes(self) -> float:
        """FP16/BF16 weights, all shards together."""
        return 2.0 * self.n_params

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token (K and V, all layers, BF16)."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * 2.0


MODELS: dict[str, LLM] = {
    m.name: m
    for m in (
        LLM("qwen1.5-1.8b", 1.84e9, 24, 16, 128, max_len=32768),
        LLM("qwen2.5-3b", 3.09e9, 36, 2, 128, max_len=32768),
        LLM("yi-1.5-6b", 6.06e9, 32, 4, 128, profile="yi1_5_6b_chat"),
        LLM("llama-2-7b", 6.74e9, 32, 32, 128, profile="llama2_7b"),
        LLM("qwen2.5-7b", 7.62e9, 28, 4, 128, profile="qwen2_5_7b", max_len=32768),
        LLM("yi-1.5-9b", 8.83e9, 48, 4, 128, profile="yi1_5_9b_chat"),
        LLM("llama-2-13b", 13.0e9, 40, 40, 128, profile="llama2_13b_chat"),
        LLM("qwen1.5-14b", 14.2e9, 40, 40, 128, profile="qwen1_5_14b_chat", max_len=32768),
        LLM("qwen2.5-32b", 32.8e9, 64, 8, 128, tp=4, max_len=32768),
        LLM("qwen2.5-72b", 72.7e9, 80, 8, 128, tp=4, max_len=32768),
    )
}

ALIASES = {
    "1.8b": "qwen1.5-1.8b",
    "3b": "qwen2.5-3b",
    "6b": "yi-1.5-6b",
    "7b": "qwen2.5-7b",
    "9b": "yi-1.5-9b",
    "13b": "llama-2-13b",
    "14b": "qwen1.5-14b",
    "32b": "qwen2.5-32b",
    "72b": "qwen2.5-72b",
}

# The Aegaeon artifact maps synthetic model NN to a real model by NN mod 10:
# 0-5 Qwen2.5-7B, 6-7 Yi-1.5-9B, 8-9 Llama-2-13B (aegaeon/aegaeon/models.py): a 60/20/20 mix.
ARTIFACT_MIX = ("qwen2.5-7b",) * 6 + ("yi-1.5-9b",) * 2 + ("llama-2-13b",) * 2


def artifact_model(index: int) -> str:
    """Catalog model of synthetic model `index` (the artifact's mod-10 mapping).

    Parameters
    ----------
    index
        Synthetic model number.

    Returns
    -------
    str
        Catalog model name.
    """
    return ARTIFACT_MIX[index % 10]


def get_model(name: str, field: str = "model") -> LLM:
    """Catalog model by name or alias; InputError naming `field` if unknown.

    Parameters
    ----------
    name
        Model name or alias (case-insensitive).
    field
        Field named in the error.

    Returns
    -------
    LLM
        The catalog entry.
    """
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in MODELS:
        known = ", ".join(list(MODELS) + list(ALIASES))
        raise InputError(field, f"unknown model {name!r}; known: {known}")
    return MODELS[key]
