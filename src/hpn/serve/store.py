"""The model store: Hugging Face causal-LM checkpoints in one local folder.

Each sub-folder holding a ``config.json`` and ``*.safetensors`` weights is one model, named
after the folder; Llama- and Qwen2-style configs (any `AutoModelForCausalLM` architecture
works the same way). `make_models` writes seeded, randomly initialised checkpoints of given
sizes, each with the project's small tokenizer beside its weights.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpn.errors import InputError

MIN_PARAMS, MAX_PARAMS = 1e6, 2e9
MAX_COUNT = 256
ARCHS = ("llama", "qwen2")
INIT_STD = 0.1  # wider than the usual 0.02 so greedy output varies from token to token
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmb]?)\s*$", re.I)


@dataclass(frozen=True)
class ModelInfo:
    """What the engine and the cost model need to know about one checkpoint."""

    name: str
    path: Path
    arch: str  # config model_type
    n_params: int
    layers: int
    kv_heads: int
    head_dim: int
    vocab: int
    max_len: int

    def kv_bytes_per_token(self, elem_bytes: int) -> int:
        """K and V of every layer for one token."""
        return 2 * self.layers * self.kv_heads * self.head_dim * elem_bytes

    def weight_bytes(self, elem_bytes: int) -> int:
        return self.n_params * elem_bytes


def parse_size(text: str) -> int:
    """'5m' -> 5_000_000; k, m, b suffixes; within [1M, 2B] parameters."""
    m = _SIZE.match(text)
    if not m:
        raise InputError("sizes", f"bad size {text!r}; use e.g. 5m, 20m, 0.2b")
    n = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "b": 1e9}[m.group(2).lower()]
    if not MIN_PARAMS <= n <= MAX_PARAMS:
        raise InputError("sizes", f"{text!r} is outside 1m..2b parameters")
    return int(n)


def shape_for(params: int, vocab: int) -> dict:
    """Layer count, width and heads whose parameter count is close to `params`.

    Depth grows with width (layers = hidden / 64, at least 2), the MLP is 8/3 x hidden
    (SwiGLU, rounded to 64) and KV heads are a quarter of the heads (GQA), as in the Llama
    and Qwen2 families.
    """
    best: tuple[int, int, int, int, int, int] | None = None
    for hidden in range(128, 4097, 64):
        layers = max(2, hidden // 64)
        heads = max(2, hidden // 64)
        kv = max(1, heads // 4)
        inter = 64 * round(hidden * 8 / 3 / 64)
        per_layer = 2 * hidden * hidden + 2 * hidden * kv * 64 + 3 * hidden * inter + 2 * hidden
        n = layers * per_layer + 2 * vocab * hidden + hidden
        if best is None or abs(n - params) < abs(best[0] - params):
            best = (n, hidden, layers, heads, kv, inter)
    if best is None:
        raise InputError("sizes", f"no shape for {params} parameters")
    _, hidden, layers, heads, kv, inter = best
    return {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": inter,
    }


def make_models(
    folder: str | Path,
    count: int,
    sizes: list[str],
    seed: int = 0,
    max_len: int = 2048,
) -> list[ModelInfo]:
    """Write `count` random checkpoints cycling over `sizes` and the Llama/Qwen2 configs.

    Model ``i`` is ``m{i:02d}-{arch}-{params}`` (its actual parameter count), initialised
    with seed ``seed + i`` (BF16 on disk). Existing model folders of the same name are replaced.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from hpn.serve.tokenizer import BOS, EOS, build_tokenizer, save_tokenizer

    if not 1 <= count <= MAX_COUNT:
        raise InputError("count", f"must be 1..{MAX_COUNT}, got {count}")
    if not sizes:
        raise InputError("sizes", "give at least one size")
    params = [parse_size(s) for s in sizes]
    hf_logging.disable_progress_bar()
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer()
    vocab = 64 * -(-tok.get_vocab_size() // 64)
    bos, eos = tok.token_to_id(BOS), tok.token_to_id(EOS)
    out = []
    for i in range(count):
        arch = ARCHS[i % len(ARCHS)]
        n = params[i % len(params)]
        shape = shape_for(n, vocab)
        cfg = AutoConfig.for_model(
            arch,
            vocab_size=vocab,
            max_position_embeddings=max_len,
            bos_token_id=bos,
            eos_token_id=eos,
            pad_token_id=eos,
            tie_word_embeddings=arch == "qwen2",
            rms_norm_eps=1e-6,
            initializer_range=INIT_STD,
            **shape,
        )
        torch.manual_seed(seed + i)
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
        model = model.to(torch.bfloat16)
        actual = model.num_parameters()
        label = f"{actual / 1e6:.3g}m" if actual < 1e9 else f"{actual / 1e9:.3g}b"
        target = root / f"m{i:02d}-{arch}-{label}"
        target.mkdir(exist_ok=True)
        model.save_pretrained(target, safe_serialization=True)
        save_tokenizer(tok, target)
        out.append(read_model(target))
    return out


def read_model(path: Path) -> ModelInfo:
    """Describe the checkpoint in `path` from its config and safetensors headers."""
    cfg_file = path / "config.json"
    files = sorted(path.glob("*.safetensors"))
    if not cfg_file.is_file() or not files:
        raise InputError(str(path), "not a checkpoint (needs config.json and *.safetensors)")
    try:
        cfg = json.loads(cfg_file.read_text())
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        info: dict[str, Any] = dict(
            arch=str(cfg.get("model_type", "?")),
            layers=int(cfg["num_hidden_layers"]),
            kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            vocab=int(cfg["vocab_size"]),
            max_len=int(cfg.get("max_position_embeddings", 2048)),
        )
    except (KeyError, ValueError, TypeError) as e:
        raise InputError(str(cfg_file), f"unreadable config: {e}") from None
    n = 0
    for f in files:
        n += _safetensors_params(f)
    return ModelInfo(name=path.name, path=path, n_params=n, **info)


def _safetensors_params(f: Path) -> int:
    """Element count of every tensor in a safetensors file, from its JSON header."""
    with open(f, "rb") as fh:
        size = int.from_bytes(fh.read(8), "little")
        if not 0 < size < 100 << 20:
            raise InputError(str(f), "not a safetensors file")
        header = json.loads(fh.read(size))
    n = 0
    for key, v in header.items():
        if key == "__metadata__":
            continue
        k = 1
        for d in v["shape"]:
            k *= int(d)
        n += k
    return n


def scan(folder: str | Path) -> dict[str, ModelInfo]:
    """Every checkpoint directly under `folder`, by name (sorted)."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("models", f"{folder} is not a folder")
    found = {
        p.name: read_model(p)
        for p in sorted(root.iterdir())
        if p.is_dir() and (p / "config.json").is_file()
    }
    if not found:
        raise InputError("models", f"no checkpoints (config.json + *.safetensors) in {folder}")
    return found
