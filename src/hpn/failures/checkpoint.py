"""Crash and checkpoint/restart arithmetic.

A job writes a checkpoint every ``interval`` seconds of wall time; writing takes ``cost``
seconds, during which it trains no further (P §2.3: every 2-4 h, ~30 GB per GPU, ~100 s). A
cut-off that lasts longer than ``timeout`` crashes the job (P §9.3: training recovered when
the link came back within ~1 min, never after ~2 min); it then restarts (``restart``: re-
scheduling onto healthy hosts and loading the checkpoint, an assumption: the paper gives no
figure) and redoes the training since the last completed checkpoint (the lost work).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hpn.errors import InputError


@dataclass(frozen=True)
class Recovery:
    """Crash and restart parameters (seconds); ``since_checkpoint`` is the age of the last
    completed checkpoint at simulated time 0 (default: half an interval, the expectation)."""

    timeout: float = 60.0
    interval: float = 3 * 3600.0
    cost: float = 100.0
    restart: float = 600.0
    since_checkpoint: float | None = None

    def __post_init__(self) -> None:
        for name in ("timeout", "interval", "cost", "restart"):
            v = getattr(self, name)
            if not (v >= 0 and math.isfinite(v)):
                raise InputError(name, f"must be a finite number of seconds >= 0, got {v!r}")
        if not self.interval > self.cost:
            raise InputError("checkpoint_interval", "must exceed the checkpoint cost")
        s = self.since_checkpoint
        if s is not None and not 0 <= s < self.interval:
            raise InputError("since_checkpoint", f"must be in [0, interval), got {s!r}")

    @property
    def age0(self) -> float:
        return self.interval / 2 if self.since_checkpoint is None else self.since_checkpoint

    def lost_work(self, t: float) -> float:
        """Training seconds lost by a crash at time ``t``: the training done since the last
        completed checkpoint (a write in progress at ``t`` is lost too)."""
        since = (self.age0 + t) % self.interval  # time since the last completed checkpoint
        return min(since, self.interval - self.cost)

    @property
    def mean_lost_work(self) -> float:
        """E[lost work] for a crash at a uniformly random time: (I^2 - c^2) / (2 I)."""
        i, c = self.interval, self.cost
        return (i * i - c * c) / (2 * i)

    @property
    def overhead(self) -> float:
        """Share of wall time spent writing checkpoints (faults or not)."""
        return self.cost / self.interval

    def crash_cost(self, t: float) -> float:
        """Job seconds a crash costs: halted until the timeout, restart, lost work."""
        return self.timeout + self.restart + self.lost_work(t)
