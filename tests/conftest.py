"""Shared test helpers."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, cwd: str | None = None, timeout: float = 300) -> CliResult:
    """Run ``hpn ARGS`` in a fresh interpreter, as a user would."""
    p = subprocess.run(
        [sys.executable, "-m", "hpn", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )
    return CliResult(p.returncode, p.stdout, p.stderr)


def assert_input_error(r: CliResult, *fragments: str) -> None:
    """Exit code 2, one line on stderr naming what was wrong, no traceback, nothing on stdout."""
    assert r.code == 2, (r.code, r.out, r.err)
    assert "Traceback" not in r.err
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1, r.err
    for frag in fragments:
        assert frag in lines[0], lines[0]
    assert r.out == ""


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path_factory, monkeypatch):
    """Every run a test makes (in-process or through the CLI) goes to a temporary store."""
    monkeypatch.setenv("HPN_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))


REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


def install_plugin(monkeypatch, tmp_path, groups: dict[str, dict[str, str]]) -> None:
    """Make ``groups`` (group -> name -> ``"module:attr"``) an installed distribution's entry
    points: a ``.dist-info`` folder on ``sys.path`` and on ``PYTHONPATH`` (for the processes a
    test starts), found through ``importlib.metadata`` as a pip-installed plug-in is."""
    site = tmp_path / "plugin-site"
    info = site / "hpn_test_plugin-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hpn-test-plugin\nVersion: 0.1\n")
    lines = []
    for group, entries in groups.items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in entries.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(REPO))
    import os

    path = os.pathsep.join(filter(None, [str(site), str(REPO), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    from hpn.app import COMMANDS
    from hpn.pool.policies import POLICIES
    from hpn.topology.presets import PRESETS

    for reg in (COMMANDS, POLICIES, PRESETS):  # found anew here, forgotten after the test
        for attr in ("_items", "_lazy", "_summaries", "_found"):
            monkeypatch.setattr(reg, attr, type(getattr(reg, attr))(getattr(reg, attr)))
        monkeypatch.setattr(reg, "_scanned", False)


@pytest.fixture
def plugin(monkeypatch, tmp_path):
    """The test plug-in command ``test square`` (:mod:`tests.sweep.slow_plugin`), installed."""
    square = {"test square": "tests.sweep.slow_plugin:SQUARE"}
    install_plugin(monkeypatch, tmp_path, {"hpn.commands": square})


# The suite compares every compiled kernel with its numpy twin on small fabrics, which a
# user's run of that size would give to the twins alone (hpn.jit.kernels_for): the tests run
# the kernels unless one asks otherwise (tests/test_jit.py checks the size rule).
__import__("os").environ.setdefault("HPN_KERNELS", "numba")
