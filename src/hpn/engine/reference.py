"""The oracle the engine's exactness tests compare against: :func:`simulate_reference`.

It runs the same event loop as :func:`hpn.engine.simulate` with the shortcuts off: remaining
bytes decremented for every transmitting flow at every batch, transmission ends found by
dividing them by the rates and, with ``refill``, rates fully re-filled at every
recomputation (no partial re-fill after departures). Slow by design; for tests only.
"""

from __future__ import annotations

import numpy as np

from hpn.engine.dag import FlowDAG
from hpn.engine.events import CapacityEvents
from hpn.engine.rates import _TOL
from hpn.engine.result import Result
from hpn.engine.sim import Sim, run_sim
from hpn.routing.base import Router
from hpn.topology.fabric import Fabric


class ReferenceSim(Sim):
    """:class:`Sim` with eager byte bookkeeping and ends found by division."""

    refill = True

    def _full_refill(self) -> bool:
        return self.refill or super()._full_refill()

    def _advance(self, t_next: float) -> None:
        self.now = t_next
        if self.flow.n_act:
            self.flow.settle(self.flow.active(), self.now)

    def _next_end(self) -> float:
        fl = self.flow
        self._proj = None
        if not fl.n_act:
            return np.inf
        act = self._proj_act = fl.active()
        r = fl.rate[act]
        with np.errstate(divide="ignore"):
            self._proj = np.where(r > 0, fl.rem[act] / r, np.inf)
        return self.now + self._proj.min()

    def _end_transmissions(self, t_next: float, dt: float) -> None:
        if self._proj is None:
            return
        act, fl = self._proj_act, self.flow
        ended = self._proj <= dt * (1 + _TOL) + 1e-15
        ended |= fl.rem[act] <= fl.size[act] * 1e-12
        if ended.any():
            self._tx_done(act[ended])
            self.dirty = True


class _PartialRefill(ReferenceSim):
    refill = False


def simulate_reference(
    fabric: Fabric,
    dag: FlowDAG,
    router: Router | str | None = None,
    *,
    refill: bool = True,
    seed: int = 0,
    capacity_events: CapacityEvents | None = None,
    sample_interval: float | None = None,
    sample_links: np.ndarray | None = None,
) -> Result:
    """:func:`hpn.engine.simulate` with the shortcuts off (see the module docstring).

    Parameters
    ----------
    fabric
        The fabric.
    dag
        Flows and tasks.
    router
        Router, policy name, or None for the fabric's default.
    refill
        Refill every flow's rate at every event (False: only the affected ones).
    seed
        Router seed.
    capacity_events
        Link capacity changes over time.
    sample_interval
        Seconds between link-load samples; None: no sampling.
    sample_links
        Links sampled; None: all.

    Returns
    -------
    Result
        The run, which the fast engine must reproduce.
    """
    cls = ReferenceSim if refill else _PartialRefill
    return run_sim(
        cls, fabric, dag, router, seed, capacity_events, sample_interval, sample_links, None
    )
