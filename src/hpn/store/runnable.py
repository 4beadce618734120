"""The registry of runnable commands: name -> ``function(config dict) -> Outcome``.

Sweeps and the dashboard run commands in-process through it (never through a shell). Targets
are ``"module:function"`` strings, imported only when run, so listing them is cheap. Modules
named in ``$HPN_PLUGINS`` (comma-separated) are imported first and may call :func:`register`.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hpn.errors import InputError
from hpn.store.dotted import get_path


@dataclass
class Outcome:
    """What a command computed: its JSON result, its tables, its resolved config."""

    result: dict[str, Any]
    tables: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] | None = None  # resolved (defaults filled); None: as given
    wall_s: float = 0.0


@dataclass(frozen=True)
class Runnable:
    name: str
    target: str
    summary: str = ""
    example: dict[str, Any] = field(default_factory=dict)  # a config to start from
    limits: dict[str, tuple[float, float]] = field(default_factory=dict)  # for the dashboard

    def load(self) -> Callable[[dict[str, Any]], Outcome]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def __call__(self, config: dict[str, Any]) -> Outcome:
        t0 = time.perf_counter()
        out = self.load()(config)
        if isinstance(out, tuple):
            out = Outcome(*out)
        if out.config is None:
            out.config = config
        out.wall_s = time.perf_counter() - t0
        return out

    def check_limits(self, config: dict[str, Any]) -> None:
        """Refuse configs outside the bounded sizes (used where others start runs)."""
        for path, (lo, hi) in self.limits.items():
            v = get_path(config, path)
            if v is None:
                continue
            if not isinstance(v, int | float) or isinstance(v, bool) or not lo <= v <= hi:
                raise InputError(path, f"must be a number in [{lo:g}, {hi:g}], got {v!r}")


RUNNABLES: dict[str, Runnable] = {}
_plugins_loaded = False


def register(name: str, target: str, summary: str = "", **kw: Any) -> None:
    RUNNABLES[name] = Runnable(name, target, summary, **kw)


def load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for mod in filter(None, (m.strip() for m in os.environ.get("HPN_PLUGINS", "").split(","))):
        importlib.import_module(mod)


def get(name: str) -> Runnable:
    load_plugins()
    if name not in RUNNABLES:
        raise InputError("command", f"unknown command {name!r}; choose from {', '.join(RUNNABLES)}")
    return RUNNABLES[name]


def names() -> list[str]:
    load_plugins()
    return list(RUNNABLES)


# One line per computing command.
register(
    "topo summary",
    "hpn.cli.topo:run_summary",
    "Counts, oversubscription, paths and limits of a fabric.",
    example={"fabric": {"preset": "hpn"}},
    limits={"fabric.pods": (1, 16), "fabric.segments": (1, 64), "fabric.k": (2, 64)},
)
register(
    "traffic",
    "hpn.cli.traffic:run_config",
    "A traffic pattern on a fabric, simulated at flow level.",
    example={
        "fabric": {"preset": "hpn", "segments": 2},
        "traffic": {"pattern": "permutation", "size": "2MB", "seed": 1},
    },
    limits={"fabric.pods": (1, 1), "fabric.segments": (1, 15), "traffic.endpoints": (2, 4096)},
)
_POOL_LIMITS = {"pool.models": (1, 200), "pool.gpus": (1, 512), "pool.rate": (0.001, 10)}
register(
    "pool simulate",
    "hpn.cli.pool:run_simulate",
    "A serving pool: a trace through a policy; SLO attainment, TTFT/TBT, switches.",
    example={"pool": {"policy": "aegaeon", "models": 20, "gpus": 8, "duration": "120s"}},
    limits=_POOL_LIMITS,
)
register(
    "pool goodput",
    "hpn.cli.pool:run_goodput",
    "Most models at a rate each that a pool serves at >= 90 % SLO attainment.",
    example={"pool": {"policy": "aegaeon", "rate": 0.1, "gpus": 8, "duration": "120s"}},
    limits=_POOL_LIMITS,
)
register(
    "pool capacity",
    "hpn.cli.pool:run_capacity",
    "Fewest GPUs that keep every model of a mix at >= 90 % SLO attainment.",
    example={"pool": {"mix": "production", "policy": "aegaeon", "duration": "10min"}},
)
register(
    "collective",
    "hpn.cli.collective:run_config",
    "An nccl-tests-style sweep of one collective (algbw, busbw per size).",
    example={
        "fabric": {"preset": "hpn", "segments": 1},
        "collective": {"op": "allreduce", "gpus": 64, "sizes": "1M,64M,1G"},
    },
    limits={"fabric.pods": (1, 1), "fabric.segments": (1, 15), "collective.gpus": (2, 4096)},
)
register(
    "route polarization",
    "hpn.cli.route:run_polarization",
    "Hash polarization: ToR-port and Agg-downlink balance of cross-segment DP traffic.",
    example={
        "fabric": {"preset": "hpn", "segments": 2, "dual_plane": False},
        "polarization": {"routing": "ecmp", "seed": 1},
    },
    limits={"fabric.pods": (1, 1), "fabric.segments": (2, 15)},
)
register(
    "train",
    "hpn.cli.train:run_config",
    "One LLM training iteration (1F1B, TP/PP/DP/EP) of one or more jobs on a fabric.",
    example={
        "fabric": {"preset": "hpn", "segments": 1},
        "train": {"routing": "ecmp", "seed": 1},
        "job": [
            {
                "name": "llama-7b",
                "model": {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 2048},
                "parallel": {"tp": 8, "pp": 2, "dp": 4, "global_batch": 32},
            }
        ],
    },
    limits={"fabric.pods": (1, 1), "fabric.segments": (1, 15)},
)
register(
    "fail",
    "hpn.cli.fail:run_fail_config",
    "A job's iterations across injected faults: throughput, halts, crashes.",
    example={
        "fabric": {"preset": "hpn", "segments": 1},
        "iteration": {"gpus": 32, "compute": "100ms", "allreduce": "1GB"},
        "fail": {"faults": ["link:host=1,nic=3,port=0,at=2s,repair=5s"], "routing": "hpn"},
    },
    limits={"fabric.pods": (1, 1), "fabric.segments": (1, 15), "iteration.gpus": (2, 4096)},
)
register(
    "reliability",
    "hpn.cli.fail:run_reliability_config",
    "Monte Carlo of failures over months: crashes, degraded hours, goodput loss, cost.",
    example={"fabric": {"preset": "hpn"}, "reliability": {"gpus": 3072, "months": 12}},
    limits={"reliability.trials": (1, 100_000), "reliability.months": (0.01, 120)},
)
