"""When the switches' kernels re-routed during a failure: ``ip -ts monitor route`` runs in
every switch namespace while the flows run, and ``ip`` stamps each route change as the kernel
announces it (microseconds, local wall-clock time, ``[YYYY-MM-DDTHH:MM:SS.ffffff]``).

A switch that loses a link's carrier skips that next hop in its kernel at once; a switch that
only hears of the failure through BGP (a ToR whose uplinks all live, toward a NIC behind an
Agg that lost its link to the NIC's ToR) re-routes when the withdrawal has crossed two bgpd
and a zebra: that time is the control plane's, and it grows with the machine's load.
"""

from __future__ import annotations

import datetime
import re
import subprocess
from types import TracebackType

from hpn.lab.plan import LabPlan

_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\]")


class RouteWatch:
    """``ip -ts monitor route`` in every switch namespace of ``plan`` for a ``with`` block;
    ``texts`` (switch name -> what ``ip`` printed) once the block is left."""

    def __init__(self, plan: LabPlan) -> None:
        self._plan = plan
        self._procs: dict[str, subprocess.Popen] = {}
        self.texts: dict[str, str] = {}

    def __enter__(self) -> RouteWatch:
        p = self._plan
        for ns, role in zip(p.namespaces, p.ns_role, strict=True):
            if role != "host":
                self._procs[ns.removeprefix(p.prefix + "-")] = subprocess.Popen(
                    ["ip", "-n", ns, "-ts", "monitor", "route"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for proc in self._procs.values():
            proc.terminate()
        self.texts = {name: proc.communicate()[0] for name, proc in self._procs.items()}


def stamp(line: str) -> float | None:
    """Seconds since the epoch of one ``ip -ts`` line (None for a line without a stamp)."""
    m = _STAMP.match(line)
    return datetime.datetime.fromisoformat(m.group(1)).timestamp() if m else None


def last_changes(texts: dict[str, str], start: float, end: float) -> dict[str, float]:
    """Per switch, seconds from ``start`` to its last route change before ``end`` (wall-clock
    seconds since the epoch); switches whose routes did not change in between are left out."""
    out: dict[str, float] = {}
    for name, text in texts.items():
        times = [t for t in map(stamp, text.splitlines()) if t is not None and start <= t < end]
        if times:
            out[name] = round(max(times) - start, 4)
    return out
