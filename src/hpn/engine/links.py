"""Per-link accounting: bytes carried, busy time and peak utilization, booked lazily.

A link costs work only when its load changes: :meth:`LinkLedger.set` first books the old
load over the time since the last change, then records the new one. The ledger remembers
which links carry a load, so :meth:`loaded` lists them without comparing floats.
"""

from __future__ import annotations

import numpy as np


class LinkLedger:
    """Per-link bytes, busy time and peak utilization, booked when a link's load changes.

    Parameters
    ----------
    cap
        Capacity of each directed link, bytes/s (shared with the simulator: capacity events
        change it in place).
    """

    compiled = True  # book with the compiled kernel when numba is there (same arithmetic)

    def __init__(self, cap: np.ndarray) -> None:
        nl = len(cap)
        self.cap = cap  # bytes/s now, shared with the simulator (capacity events change it)
        self.load = np.zeros(nl)  # bytes/s carried per link
        # the fields a booking touches, one row per link (a booking reads one or two cache
        # lines of them, not five: links are booked in random order)
        self.rows = np.zeros((nl, 5))
        self.bytes = self.rows[:, 0]
        self.busy = self.rows[:, 1]
        self.peak = self.rows[:, 2]
        self.since = self.rows[:, 3]  # when each link's load last changed
        self.cap_at = self.rows[:, 4]  # capacity when it last changed (for utilization)
        self.cap_at[:] = cap
        self.on = np.zeros(nl, bool)  # load > 0
        self.raised = False  # set() ran (a load may have risen from 0) since it was cleared

    def set(self, links: np.ndarray, new: np.ndarray, now: float) -> None:
        """At ``now``, change the load of distinct ``links`` to ``new`` (bytes/s)."""
        from hpn.engine import kernels

        self.raised = True
        if self.compiled and kernels._use():
            kernels.ledger_set(self, links, new, now)
            return
        old = self.load[links]
        dt = now - self.since[links]
        carried = (old > 0) & (dt > 0)
        self.bytes[links] += old * dt
        self.busy[links[carried]] += dt[carried]
        cap = self.cap_at[links[carried]]
        util = np.divide(old[carried], cap, out=np.zeros(len(cap)), where=cap > 0)
        self.peak[links[carried]] = np.maximum(self.peak[links[carried]], util)
        new = np.where(new < 1e-12 * self.cap[links], 0.0, new)
        self.load[links] = new
        self.since[links] = now
        self.cap_at[links] = self.cap[links]
        self.on[links] = new > 0

    def loaded(self) -> np.ndarray:
        """The links with a non-zero load, sorted."""
        return np.flatnonzero(self.on)
