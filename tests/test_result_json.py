"""The JSON form of results stays byte-identical when their types change.

The golden files under ``tests/golden/`` are the output of these runs before their nested
parts were typed (``TypedDict`` rows in place of ``dict[str, Any]``); the stored
``result.json`` of a run must match them byte for byte, its wall time aside. A change to a
model that changes its results must update them deliberately.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import run_cli

GOLDEN = Path(__file__).parent / "golden"


def _no_wall_time(text: str) -> str:
    return re.sub(r'"wall_s": [0-9.eE+-]+', '"wall_s": 0', text)


def test_stored_collective_result_is_unchanged(tmp_path):
    out = tmp_path / "run"
    r = run_cli(
        "collective",
        "--preset", "hpn", "--segments", "1", "--set", "gpus_per_host=2",
        "--gpus", "4", "--sizes", "1M,64M", "--algo", "auto", "--jobs", "2",
        "--out", str(out),
    )  # fmt: skip
    assert r.code == 0, r.err
    stored = (out / "result.json").read_text()
    assert _no_wall_time(stored) == (GOLDEN / "collective-result.json").read_text()


def test_topo_bom_json_is_unchanged():
    r = run_cli("topo", "bom", "--preset", "hpn", "--segments", "1", "--json")
    assert r.code == 0, r.err
    assert r.out == (GOLDEN / "topo-bom.json").read_text()
