"""Request state and token accounting in closed form (no per-token objects).

Tokens are emitted in runs: n tokens, the first at `t1`, then every `d` seconds. Each run
updates the request's SLO credit in O(1) (see `metrics.slo_attainment` for the definition):
token k (k = 1 the first) is due at arrival + TTFT_SLO + (k-1)*TBT_SLO; when it is on time,
the time since the previous token (or since arrival for k = 1) counts as on-schedule time.
"""

from __future__ import annotations

import math

EPS = 1e-9


class Request:
    """One request: identity, lengths, progress and SLO accounting in closed form."""

    __slots__ = (
        "rid",
        "model",
        "arrival",
        "input_len",
        "output_len",
        "generated",
        "last_t",
        "first_t",
        "credit",
        "due0",
        "tbt",
        "done_t",
        "failed",
        "kv_at",
        "a_start",
        "a_target",
        "a_credit",
        "a_total",
    )

    def __init__(self, rid, model, arrival, input_len, output_len, ttft_slo, tbt_slo):
        self.rid = rid
        self.model = model  # catalog model name
        self.arrival = arrival
        self.input_len = input_len
        self.output_len = output_len
        self.generated = 0
        self.last_t = arrival
        self.first_t = -1.0
        self.credit = 0.0
        self.due0 = arrival + ttft_slo
        self.tbt = tbt_slo
        self.done_t = -1.0
        self.failed = False
        self.kv_at = None  # set by the backend: instance holding the KV, None = host
        self.a_start = arrival  # artifact-style accounting (see emit_artifact)
        self.a_target = ttft_slo
        self.a_credit = 0.0
        self.a_total = 0.0

    @property
    def ctx(self) -> int:
        """Tokens in the KV cache: prompt plus generated tokens."""
        return self.input_len + self.generated

    @property
    def remaining(self) -> int:
        """Tokens still to generate."""
        return self.output_len - self.generated

    def emit(self, t1: float, d: float, n: int) -> None:
        """Record n tokens at t1, t1+d, ..., t1+(n-1)d (backends call it through
        `Backend.emit_tokens`, which also reports them to the metrics sink)."""
        g = self.generated
        tbt = self.tbt
        first_gap = t1 - self.last_t
        slack = self.due0 + g * tbt - t1  # of the run's first token
        diff = d - tbt
        if slack >= -EPS:
            lo = 1
            hi = n if diff <= EPS else min(n, 1 + math.floor((slack + EPS) / diff))
        elif diff < -EPS:
            lo = 1 + math.ceil((-slack - EPS) / -diff)
            hi = n
        else:
            lo, hi = 1, 0
        if hi >= lo:
            self.credit += (hi - lo + 1) * d + ((first_gap - d) if lo == 1 else 0.0)
        self._emit_artifact(t1, d, n)
        if g == 0:
            self.first_t = t1
        self.generated = g + n
        self.last_t = t1 + (n - 1) * d
        if self.generated >= self.output_len:
            self.done_t = self.last_t

    def _emit_artifact(self, t1: float, d: float, n: int) -> None:
        """The artifact's accounting (`compute_request_metrics`): an on-time token sets the
        credit to its target (measured from `start`); a late token banks the credit, becomes
        the new `start` and resets the credit; the target grows by TBT per token either way."""
        tbt = self.tbt
        start, target, credit, total = self.a_start, self.a_target, self.a_credit, self.a_total
        j = 0
        while j < n:
            tj = t1 + j * d
            s = target - (tj - start)
            if s >= -EPS:
                m = n - 1 - j
                if d > tbt:
                    m = min(m, math.floor((s + EPS) / (d - tbt)))
                credit = target + m * tbt
                target += (m + 1) * tbt
                j += m + 1
            else:
                total += credit
                start, credit = tj, 0.0
                target += tbt
                j += 1
        self.a_start, self.a_target, self.a_credit, self.a_total = start, target, credit, total

    def attainment_artifact(self) -> float:
        """The artifact's attainment of the request; 0 if unfinished or failed."""
        if self.done_t < 0 or self.failed:
            return 0.0
        span = self.done_t - self.arrival
        if span <= 0:
            return 1.0
        total = self.a_total + min(self.a_target, self.done_t - self.a_start)
        return min(1.0, total / span)

    def attainment(self) -> float:
        """Share of the request's generation time that was on schedule; 0 if unfinished."""
        if self.done_t < 0 or self.failed:
            return 0.0
        span = self.done_t - self.arrival
        return min(1.0, self.credit / span) if span > 0 else 1.0
