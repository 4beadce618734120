"""Runs with every plot table, written through the store (the numbers are made up)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpn.store import record_run


def traffic_like(seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    times = np.repeat(np.linspace(0, 1e-3, 6), 3)
    tiers = np.tile(["nic_tor", "tor_agg", "agg_core"], 6)
    return record_run(
        "traffic",
        {"fabric": {"preset": "hpn"}, "traffic": {"seed": seed, "size": "2MB"}},
        {"makespan_s": 1e-3 * (1 + seed), "flows": 100},
        {
            "tier_util": {"time_s": times, "tier": tiers, "util": rng.uniform(0, 1, 18)},
            "flows": {"fct_s": rng.exponential(1e-4, 100)},
        },
    )


def everything() -> Path:
    sizes = np.array([1e3, 1e6, 1e9] * 2)
    return record_run(
        "collective",
        {"seed": 1},
        {"busbw_max_gbps": 360.0},
        {
            "busbw": {
                "fabric": ["hpn"] * 3 + ["dcn-plus"] * 3,
                "size_bytes": sizes,
                "busbw_gbps": [1.0, 200.0, 360.0, 1.0, 150.0, 300.0],
            },
            "timeline": {
                "row": ["stage 0", "stage 0", "stage 1"],
                "group": ["compute", "dp", "pp"],
                "start_s": [0.0, 1.0, 0.5],
                "end_s": [1.0, 1.5, 0.7],
            },
            "throughput": {"time_s": [0, 1, 2, 3], "throughput": [1.0, 1.0, 0.5, 1.0]},
            "events": {"time_s": [1.5], "label": ["ToR link down"]},
            "slo": {
                "policy": ["aegaeon"] * 2 + ["serverless"] * 2,
                "load": [0.1, 0.2, 0.1, 0.2],
                "slo_attainment": [0.99, 0.95, 0.9, 0.6],
            },
        },
    )
