"""The small byte-level BPE tokenizer of generated models, built with `tokenizers`.

It is trained on a fixed corpus generated here (nothing is downloaded), so the same call
writes the same tokenizer. Byte-level: every UTF-8 string encodes, and decodes back.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

VOCAB_SIZE = 2048
BOS, EOS = "<|bos|>", "<|eos|>"
# role markers of the chat template (a Jinja template transformers applies)
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL = [BOS, EOS, "<|system|>", "<|user|>", "<|assistant|>"]

_WORDS = [
    "the",
    "a",
    "an",
    "of",
    "to",
    "in",
    "and",
    "is",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "that",
    "this",
    "be",
    "are",
    "was",
    "it",
    "or",
    "not",
    "model",
    "models",
    "token",
    "tokens",
    "request",
    "requests",
    "serve",
    "serving",
    "prefill",
    "decode",
    "batch",
    "cache",
    "switch",
    "gpu",
    "gpus",
    "instance",
    "pool",
    "time",
    "second",
    "seconds",
    "memory",
    "weights",
    "host",
    "device",
    "link",
    "network",
    "fabric",
    "switch",
    "rail",
    "plane",
    "pod",
    "segment",
    "host",
    "port",
    "flow",
    "rate",
    "latency",
    "throughput",
    "what",
    "why",
    "how",
    "when",
    "where",
    "which",
    "who",
    "can",
    "could",
    "would",
    "should",
    "will",
    "do",
    "does",
    "did",
    "have",
    "has",
    "hello",
    "world",
    "question",
    "answer",
    "please",
    "thank",
    "you",
    "explain",
    "describe",
    "list",
    "write",
    "short",
    "long",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "hundred",
    "thousand",
    "million",
    "number",
]


def corpus(lines: int = 4000, seed: int = 0) -> list[str]:
    """A deterministic synthetic corpus of words, numbers and punctuation."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        n = rng.randint(3, 18)
        words = [
            rng.choice(_WORDS) if rng.random() < 0.85 else str(rng.randint(0, 9999))
            for _ in range(n)
        ]
        s = " ".join(words)
        out.append(s[0].upper() + s[1:] + rng.choice([".", "?", "!", ",", ":"]))
    return out


def build_tokenizer(vocab_size: int = VOCAB_SIZE):
    """Train the byte-level BPE tokenizer (a `tokenizers.Tokenizer`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    return tok


def save_tokenizer(tok, folder: Path) -> None:
    """Write tokenizer.json and tokenizer_config.json (loadable by `AutoTokenizer`)."""
    tok.save(str(folder / "tokenizer.json"))
    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": EOS,
        "model_max_length": 1 << 20,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg, indent=1) + "\n")
