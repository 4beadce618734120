"""The headline figures of a run: the few key figures that tell what it found, per command.

Used where runs are listed (the dashboard's runs index, ``hpn runs list``). Commands not
named here show their first figures that are not settings (preset, seed, routing, ...). Each
name is a dotted path of the command's result (``breakdown.exposed_comm_s``);
``tests/test_result_types.py`` checks that the result class declares it.
"""

from __future__ import annotations

from typing import Any

HEADLINE: dict[str, list[str]] = {
    "topo summary": ["gpus", "tor_oversubscription", "agg_oversubscription", "switches.tor"],
    "traffic": ["flows", "fct_s.p99", "fct_over_ideal.p99", "makespan_s"],
    "collective": ["op", "algo", "gpus", "jobs"],  # its figures are per size (a list)
    "route polarization": ["tor_port_load_ratio", "agg_downlink_max_over_mean", "idle_port_nics"],
    "train": ["iteration_s", "samples_per_s", "tokens_per_s", "breakdown.exposed_comm_s"],
    "fail": ["design", "throughput_loss", "halted_s", "crashes"],
    "reliability": [
        "design",
        "crashes_per_month.mean",
        "halted_hours_per_month.mean",
        "goodput_loss_fraction.mean",
    ],
    "pool simulate": ["policy", "slo_attainment", "ttft_p99_s", "tbt_p99_s"],
    "pool goodput": ["policy", "max_models", "rate", "attainment_at_max"],
    "pool capacity": ["policy", "gpus", "models", "gpu"],
}
SETTINGS = {"preset", "seed", "routing", "wall_s", "peak_rss_mb", "rate_computations", "pattern"}


def headline(command: str, figures: dict[str, Any], most: int = 4) -> dict[str, Any]:
    """Up to ``most`` figures: the command's headline ones present, then others."""
    keys = [k for k in HEADLINE.get(command, []) if k in figures]
    keys += [k for k in figures if k not in keys and k not in SETTINGS]
    return {k: figures[k] for k in keys[:most]}
