"""An Aegaeon workload file as the authors' simulator runs it (`aegaeon/sim/workload.py`,
`gen_workload`), to compare with that simulator request for request.

The simulator does not replay the file's lengths: it keeps the rows before 120 s, maps the
n-th distinct model name (in order of first appearance) to Qwen2.5-7B / Yi-1.5-9B /
Llama-2-13B by n mod 10 (6/2/2), and gives each request, taken model by model in that
order, a (prompt, output) pair drawn with replacement from the file's pairs
(`numpy.random.default_rng(seed).choice`, seed 0); a pair longer than the model's context
(`sim/__init__.py` `max_seq_len`: 8192 for Qwen2.5-7B, 4096 for the others) is scaled by
max_seq_len / max(length + 32, 16384). Arrivals are whole milliseconds, truncated from
the clock time in floating point as the simulator does (so 00:00:08.171 becomes 8170 ms).
"""

from __future__ import annotations

import numpy as np

from hpn.pool.models import artifact_model
from hpn.pool.traces.base import Trace

HORIZON_S = 120.0
SIM_MAX_SEQ = {"qwen2.5-7b": 8192, "yi-1.5-9b": 4096, "llama-2-13b": 4096}


def _sim_ms(t: float) -> int:
    """int((h * 3600 + m * 60 + float("SS.mmm")) * 1000), the simulator's arrival in ms."""
    ms = round(t * 1000.0)
    h, m, sec = ms // 3_600_000, (ms // 60_000) % 60, float(f"{(ms % 60_000) / 1000:.3f}")
    return int((h * 3600 + m * 60 + sec) * 1000)


def as_artifact_simulator(trace: Trace, seed: int = 0) -> Trace:
    """The requests the authors' simulator generates from the rows of `trace`.

    Parameters
    ----------
    trace
        A trace read from an artifact workload file.
    seed
        Seed of the length resampling.

    Returns
    -------
    Trace
        The simulator's requests.
    """
    keep = trace.arrival < HORIZON_S
    arrival = np.array([_sim_ms(a) / 1000.0 for a in trace.arrival[keep].tolist()])
    model = trace.model[keep]
    pairs = list(zip(trace.input_len[keep].tolist(), trace.output_len[keep].tolist(), strict=True))
    order: dict[int, int] = {}
    for m in model.tolist():
        order.setdefault(m, len(order))
    sample = np.random.default_rng(seed).choice(np.arange(len(pairs)), size=len(pairs))
    arr, mod, inp, out = [], [], [], []
    k = 0
    for m, n in order.items():
        kind = artifact_model(n)
        limit = SIM_MAX_SEQ.get(kind, 4096)
        for t in arrival[model == m].tolist():
            i, o = pairs[sample[k]]
            k += 1
            if i + o > limit:
                scale = limit / max(i + o + 32, 16384)
                i, o = int(i * scale), max(1, int(o * scale))
            arr.append(t)
            mod.append(n)
            inp.append(i)
            out.append(o)
    names = [trace.names[m] for m in order]
    kinds = [artifact_model(n) for n in range(len(order))]
    rates = None if trace.rates is None else [trace.rates[m] for m in order]
    return Trace.build(arr, mod, inp, out, names, kinds, rates)
