"""A dashboard over a store holding a few runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpn.store import Run, record_run, runs_root


def links_table(n: int) -> dict:
    ids = np.arange(n)
    return {"link_id": ids, "util_mean": (ids % 10) / 10, "util_peak": np.ones(n) * 0.9}


@pytest.fixture
def store() -> dict[str, Run]:
    """Two topo summaries (HPN, DCN+) and a traffic-like HPN run with a links table."""
    pytest.importorskip("fastapi")
    from hpn.app import run

    out = {}
    for name, fields in (("hpn", {"preset": "hpn"}), ("dcn", {"preset": "dcn-plus"})):
        o = run("topo summary", {"fabric": fields})
        out[name] = Run(record_run("topo summary", o.config, o.result.to_json(), o.tables))
    from tests.plots.synthetic import traffic_like

    t = Run(traffic_like())
    from hpn.store.tables import write_table

    write_table(t.path / "tables", "links", links_table(130_000))
    out["traffic"] = t
    return out


@pytest.fixture
def root() -> Path:
    return runs_root()
