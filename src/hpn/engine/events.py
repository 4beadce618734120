"""``CapacityEvents``: link capacity changes over a simulation (the fault/repair hook)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError


@dataclass(frozen=True, eq=False)
class CapacityEvents:
    """At ``time[i]``, directed link ``link[i]`` gets ``capacity[i]`` bit/s (0 = down).

    With ``reroute``, flows whose path crosses a link at capacity 0 are re-routed (the router
    avoiding every such link) when the event fires; they keep the bytes already sent. An
    event with ``hold[i]`` takes its link down *held*: the flows crossing it are not re-routed
    but wait at rate 0 (a blackhole nobody has routed around yet) until a later event on that
    link (down without hold: they move; capacity back: they resume).
    """

    time: np.ndarray
    link: np.ndarray
    capacity: np.ndarray
    reroute: bool = False
    hold: np.ndarray | None = None

    @classmethod
    def of(
        cls,
        events: list[tuple[float, int, float]],
        reroute: bool = False,
        hold: list[bool] | None = None,
    ):
        """Events from ``(time, link, capacity)`` tuples.

        Parameters
        ----------
        events
            ``(time s, directed link id, capacity bit/s)`` each.
        reroute
            Re-route flows off links at capacity 0.
        hold
            Per event: a down event whose flows wait instead of moving.

        Returns
        -------
        CapacityEvents
            The events as arrays.
        """
        t, lk, c = zip(*events, strict=True) if events else ((), (), ())
        h = None if hold is None else np.asarray(hold, bool)
        if h is not None and len(h) != len(t):
            raise InputError("capacity event", "hold needs one flag per event")
        arr = np.asarray
        return cls(arr(t, float), arr(lk, np.int64), arr(c, float), reroute, h)
