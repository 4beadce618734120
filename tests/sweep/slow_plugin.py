"""A runnable for sweep tests (loaded through $HPN_PLUGINS): sleeps, then squares x."""

from __future__ import annotations

import time

from hpn.store.runnable import Outcome, register


def square(config: dict) -> Outcome:
    p = config.get("p", {})
    time.sleep(float(p.get("sleep", 0.0)))
    if p.get("fail"):
        raise ValueError("asked to fail")
    x = p["x"]
    return Outcome({"x": x, "y": x * x}, {"t": {"i": list(range(3))}})


register("test square", "tests.sweep.slow_plugin:square", "x -> x^2, slowly")
