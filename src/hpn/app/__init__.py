"""The application layer: one service per command, a config model in, a typed result out.

:data:`COMMANDS` lists every command (lazily: a module is imported when its command is used),
the built-in ones registered below and plug-ins through the ``hpn.commands`` entry-point group
(an installed package's ``"name" = "pkg.mod:COMMAND"``, a :class:`~hpn.app.base.Command`). The
CLI, the store, sweeps, the dashboard and the demo all run commands through it: :func:`run`
(a plain config dict in, an :class:`~hpn.app.base.Outcome` out); commands with an example
(:func:`runnables`) are those the dashboard offers. See :mod:`hpn.app.base` for the shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpn.app.limits import limits_of
from hpn.registry import Registry

if TYPE_CHECKING:
    from hpn.app.base import Command, Outcome, Result

__all__ = ["COMMANDS", "Command", "Outcome", "Result", "command", "example", "run", "runnables"]

COMMANDS: Registry[Command[Any]] = Registry("command", group="hpn.commands")
"""Every command, by its CLI path (``"pool simulate"``). Listing it imports no command module
(nor pydantic): ``hpn --help`` reads the names and summaries from here."""

_EXAMPLES: dict[str, dict[str, Any]] = {}


def __getattr__(name: str) -> Any:  # Command, Outcome, Result, imported on first use
    if name in ("Command", "Outcome", "Result"):
        from hpn.app import base

        return getattr(base, name)
    raise AttributeError(f"module 'hpn.app' has no attribute {name!r}")


def command(name: str) -> Command[Any]:
    """The command ``name`` (an InputError naming the known ones otherwise)."""
    return COMMANDS.get(name)


def run(name: str, config: dict[str, Any]) -> Outcome[Any]:
    """Run command ``name`` on a plain config dict (a TOML document): parsed, limits checked,
    computed (sweeps, the dashboard, the demo).

    Parameters
    ----------
    name
        The command (``"traffic"``).
    config
        Its config tables.

    Returns
    -------
    Outcome
        The typed result, its tables and the resolved config.
    """
    return command(name).run_config(config)


def example(name: str) -> dict[str, Any] | None:
    """A config to start from for command ``name`` (None: it has none)."""
    if name in _EXAMPLES:
        return _EXAMPLES[name]
    return None if name not in COMMANDS or name in _BUILTIN else command(name).example


def runnables() -> list[str]:
    """The commands with an example: those the dashboard offers (plug-ins' included)."""
    return [n for n in COMMANDS if example(n) is not None]


def limits_text(name: str) -> tuple[str, ...]:
    """Command ``name``'s stated size limits, one text each."""
    return tuple(lim.text() for lim in limits_of(name))


_BUILTIN: set[str] = set()


def _add(
    name: str,
    target: str,
    summary: str,
    example: dict[str, Any] | None = None,
) -> None:
    COMMANDS.lazy(name, target, summary)
    _BUILTIN.add(name)
    if example is not None:
        _EXAMPLES[name] = example


_add(
    "topo summary",
    "hpn.app.topo:SUMMARY",
    "Counts, oversubscription, paths and limits of a fabric.",
    example={"fabric": {"preset": "hpn"}},
)
_add(
    "traffic",
    "hpn.app.traffic:COMMAND",
    "A traffic pattern on a fabric, simulated at flow level.",
    example={
        "fabric": {"preset": "hpn", "segments": 2},
        "traffic": {"pattern": "permutation", "size": "2MB", "seed": 1},
    },
)
_add(
    "pool simulate",
    "hpn.app.pool:SIMULATE",
    "A serving pool: a trace through a policy; SLO attainment, TTFT/TBT, switches.",
    example={"pool": {"policy": "aegaeon", "models": 20, "gpus": 8, "duration": "120s"}},
)
_add(
    "pool goodput",
    "hpn.app.pool:GOODPUT",
    "Most models at a rate each that a pool serves at >= 90 % SLO attainment.",
    example={"pool": {"policy": "aegaeon", "rate": 0.1, "gpus": 8, "duration": "120s"}},
)
_add(
    "pool capacity",
    "hpn.app.pool:CAPACITY",
    "Fewest GPUs that keep every model of a mix at >= 90 % SLO attainment.",
    example={"pool": {"mix": "production", "policy": "aegaeon", "duration": "10min"}},
)
_add(
    "pool validate",
    "hpn.app.pool_validate:VALIDATE",
    "Every policy on every Aegaeon workload file of a folder, beside a reference.",
)
_add(
    "pool replay",
    "hpn.app.serve:REPLAY",
    "Replay a trace against an OpenAI-compatible server; the simulator's metrics of it.",
)
_add("pool policies", "hpn.app.pool:POLICIES", "List the registered pool policies.")
_add("serve make-models", "hpn.app.serve:MAKE_MODELS", "Write seeded random checkpoints.")
_add("serve profile", "hpn.app.serve:PROFILE", "Fit this device's latencies (cost model).")
_add("serve start", "hpn.app.serve:SERVE", "Serve a model folder over HTTP (127.0.0.1).")
_add("topo import", "hpn.app.topo:IMPORT", "Read a fabric file and print its summary.")
_add(
    "topo export",
    "hpn.app.topo:EXPORT",
    "Write a fabric as JSON (lossless), GraphML or a SimAI/ns-3 topology file.",
)
_add(
    "topo bom",
    "hpn.app.topo:BOM",
    "Bill of materials: switches, optics, cables, switch power, heat-sink check, cost.",
    example={"fabric": {"preset": "hpn"}},
)
_add(
    "topo draw",
    "hpn.app.topo:DRAW",
    "Draw one segment: hosts, ToRs by rail and plane, the Aggs above.",
)
_add(
    "route paths",
    "hpn.app.route:PATHS",
    "Equal-cost path counts between NIC pairs, and the path-search space (P Table 1).",
    example={"fabric": {"preset": "hpn"}},
)
_add(
    "route select",
    "hpn.app.route:SELECT",
    "HPN precise path selection: a UDP source port per connection, on distinct paths.",
)
_add(
    "collective",
    "hpn.app.collective:COMMAND",
    "An nccl-tests-style sweep of one collective (algbw, busbw per size).",
    example={
        "fabric": {"preset": "hpn", "segments": 1},
        "collective": {"op": "allreduce", "gpus": 64, "sizes": "1M,64M,1G"},
    },
)
_add(
    "route polarization",
    "hpn.app.route:POLARIZATION",
    "Hash polarization: ToR-port and Agg-downlink balance of cross-segment DP traffic.",
    example={
        "fabric": {"preset": "hpn", "segments": 2, "dual_plane": False},
        "polarization": {"routing": "ecmp", "seed": 1},
    },
)
_add(
    "train",
    "hpn.app.train:COMMAND",
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
)
_add(
    "fail",
    "hpn.app.fail:FAIL",
    "A job's iterations across injected faults: throughput, halts, crashes.",
    example={
        "fabric": {"preset": "hpn", "segments": 1},
        "iteration": {"gpus": 32, "compute": "100ms", "allreduce": "1GB"},
        "fail": {"faults": ["link:host=1,nic=3,port=0,at=2s,repair=5s"], "routing": "hpn"},
    },
)
_add(
    "reliability",
    "hpn.app.fail:RELIABILITY",
    "Monte Carlo of failures over months: crashes, degraded hours, goodput loss, cost.",
    example={"fabric": {"preset": "hpn"}, "reliability": {"gpus": 3072, "months": 12}},
)

_add(
    "reproduce",
    "hpn.app.reproduce:REPRODUCE",
    "Every claim of both papers the model covers: paper vs model, band, verdict, figure.",
)

_add("lab up", "hpn.app.lab:UP", "Build the fabric for real in network namespaces (root).")
_add("lab status", "hpn.app.lab:STATUS", "What a lab has up: namespaces, links, daemons.")
_add("lab down", "hpn.app.lab:DOWN", "Remove a lab, also one a killed up left behind.")
_add("lab traffic", "hpn.app.lab:TRAFFIC", "Real UDP flows in a lab: counters vs the model.")
_add("lab fail", "hpn.app.lab:FAIL", "Break a link or ToR under traffic: gaps, losses.")
_add("lab configs", "hpn.app.lab:CONFIGS", "Per-switch FRR configurations and static routes.")
_add("lab export", "hpn.app.lab:EXPORT", "The lab's fabric for containerlab, FRR or as JSON.")
_add("lab repair", "hpn.app.lab:REPAIR", "Bring up every link a killed fail left down.")
_add("lab exec", "hpn.app.lab_tools:EXEC", "Run a command inside one node's namespace.")
_add("lab vtysh", "hpn.app.lab_tools:VTYSH", "A vtysh command on one switch's FRR daemons.")
_add("lab capture", "hpn.app.lab_tools:CAPTURE", "tcpdump on a lab interface to a pcap, bounded.")
