"""A runnable for sweep and job tests (loaded through $HPN_PLUGINS): sleeps, then squares x."""

from __future__ import annotations

import time

from hpn.store.runnable import Outcome, register


def square(config: dict) -> Outcome:
    p = config.get("p", {})
    time.sleep(float(p.get("sleep", 0.0)))
    if p.get("alloc_gb"):  # grab memory (for the dashboard's memory cap)
        import numpy as np

        np.ones(int(float(p["alloc_gb"]) * 2**30 / 8)).sum()
    if p.get("fail"):
        raise ValueError("asked to fail")
    x = p["x"]
    return Outcome({"x": x, "y": x * x}, {"t": {"i": list(range(3))}})


register("test square", "tests.sweep.slow_plugin:square", "x -> x^2, slowly")
