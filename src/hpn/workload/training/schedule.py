"""The 1F1B pipeline schedule (PipeDream-flush, Megatron's default without virtual stages)."""

from __future__ import annotations


def one_f_one_b(stage: int, stages: int, micro: int) -> list[tuple[str, int]]:
    """The order of ('F'|'B', micro-batch) a stage runs: ``stages - stage - 1`` warm-up
    forwards, then one forward and one backward in turn, then the remaining backwards."""
    warm = min(stages - stage - 1, micro)
    order = [("F", i) for i in range(warm)]
    for i in range(micro - warm):
        order += [("F", warm + i), ("B", i)]
    order += [("B", i) for i in range(micro - warm, micro)]
    return order
