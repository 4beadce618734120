"""Source ports of the lab's connections: random per connection (ecmp) or HPN's selection."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hpn.errors import InputError
from hpn.lab.plan import LabPlan
from hpn.routing.addressing import random_sports

if TYPE_CHECKING:
    from hpn.lab.select import SelectionInfo


def sports_for(
    plan: LabPlan, src, dst, routing: str, seed: int
) -> tuple[np.ndarray, SelectionInfo]:
    """Source ports: drawn per connection (``ecmp``) or by HPN's path selection (``hpn``)."""
    if routing == "hpn":
        from hpn.lab.select import select

        return select(plan, src, dst, seed)
    if routing != "ecmp":
        raise InputError("routing", f"the lab routes 'ecmp' or 'hpn', got {routing!r}")
    sp = random_sports(seed, len(src)).astype(np.int64)
    # a source address cannot bind one port twice: move duplicates to the next free port
    for s in np.unique(src):
        idx = np.flatnonzero(src == s)
        used: set[int] = set()
        for i in idx:
            while int(sp[i]) in used:
                sp[i] = 49152 + (int(sp[i]) - 49152 + 1) % 16384
            used.add(int(sp[i]))
    return sp.astype(np.uint32), {}
