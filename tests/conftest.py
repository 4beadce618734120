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
