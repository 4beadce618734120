"""Dedicated serving: each model on its own instances, no switching, no sharing.

Every model gets one instance (most popular first when instances are short; the rest are
unserved and their requests fail); spare instances go, one at a time, to the model with the
highest expected rate per instance.
"""

from __future__ import annotations

from typing import Any

from hpn.pool.policies.base import PolicyContext
from hpn.pool.policies.colocated import Colocated
from hpn.pool.requests import Request


def spread(rates: dict[str, float], n: int) -> dict[str, int]:
    """Instances per model: one each by popularity, extras by rate per instance.

    Parameters
    ----------
    rates
        Forecast rate of each model, req/s.
    n
        Instances to hand out (models beyond ``n`` get none).

    Returns
    -------
    dict
        Instances per model.

    Examples
    --------
    >>> spread({"a": 3.0, "b": 1.0, "c": 0.1}, 5)
    {'a': 3, 'b': 1, 'c': 1}
    """
    order = sorted(rates, key=lambda m: (-rates[m], m))
    count = {m: 1 for m in order[:n]}
    for _ in range(max(0, n - len(order))):
        m = max(count, key=lambda m: (rates[m] / count[m], m))
        count[m] += 1
    return count


class Dedicated(Colocated):
    """Every model on its own instances; no switching."""

    name = "dedicated"
    summary = "each model on its own GPUs (no sharing)"

    def __init__(self, ctx: PolicyContext, **kw: Any) -> None:
        super().__init__(ctx, **kw)
        backend, rates = ctx.backend, ctx.rates
        self.home: dict[str, list] = {}
        it = iter(self.workers)
        for m, k in spread(rates, len(self.workers)).items():
            for _ in range(k):
                inst = next(it)
                backend.place(inst, m)
                self.home.setdefault(m, []).append(inst)
        self.unserved = [m for m in rates if m not in self.home]

    def on_arrival(self, req: Request) -> None:
        """To the least-loaded instance of the request's model, or fail it."""
        insts = self.home.get(req.model)
        if not insts:
            self.backend.fail(req)
            return
        self.admit(min(insts, key=lambda i: i.state.assigned), req)
