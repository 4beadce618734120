"""A stand-in for the Aegaeon artifact's simulator profiles (``aegaeon/sim/simdata/execution/
<model>/<gpu>/i<L>b<B>.json``), written from known linear latencies so a fit's coefficients
are known exactly; and a metrics sink that keeps every token's time."""

from __future__ import annotations

import json
from pathlib import Path

from hpn.pool.artifact_costs import BATCHES, LENS

# (prefill a, b per token, c per token^2), (decode a, b per context token, c per sequence)
PREFILL = (0.0205, 1e-5, 0.0)
DECODE = (0.0105, 0.0, 0.0)


def write_profiles(
    root: Path,
    model: str = "qwen2.5-7b",
    gpu: str = "h100",
    prefill: tuple[float, float, float] = PREFILL,
    decode: tuple[float, float, float] = DECODE,
    max_seq_len: int = 8192,
    outlier: float | None = None,
) -> Path:
    """Profiles of `model` on `gpu` under ``root/aegaeon/sim/simdata/execution``; every
    point of the simulator's test split (index divisible by 3) gets `outlier` seconds added
    when given (the fit must not see them). Returns `root`."""
    d = root / "aegaeon" / "sim" / "simdata" / "execution" / model / gpu
    d.mkdir(parents=True, exist_ok=True)
    grid = [(n, b) for n in LENS for b in BATCHES if n * b <= max_seq_len and (n + 10) * b < 10240]
    for i, (n, b) in enumerate(grid):
        t, s = n * b, n * n * b
        pre = prefill[0] + prefill[1] * t + prefill[2] * s
        dec = decode[0] + decode[1] * t + decode[2] * b
        if outlier is not None and i % 3 == 0:
            pre, dec = pre + outlier, dec + outlier
        (d / f"i{n}b{b}.json").write_text(
            json.dumps({"avg_prefill_latency": pre, "avg_decode_latency": dec})
        )
    return root


class TokenSink:
    """A `backend.MetricsSink` that keeps each request's token times (``t[rid]``)."""

    def __init__(self):
        self.t: dict[int, list[float]] = {}

    def tokens(self, req, t_first, step, n, gap):
        self.t.setdefault(req.rid, []).extend(t_first + i * step for i in range(n))

    def switched(self, *a):
        pass

    def busy(self, *a):
        pass

    def failed(self, *a):
        pass
