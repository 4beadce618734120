"""Long single commands: a progress bar on a terminal's stderr (never on stdout, nothing off a
terminal), and Ctrl-C: one line ``interrupted``, exit 130, nothing written."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DP_STEP = str(REPO / "examples/failures/dp-step.toml")
FAULT = "link:host=1,nic=0,at=1s,repair=5s"
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def _env(tmp_path: Path) -> dict[str, str]:
    src = str(REPO / "src")
    path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYTHONPATH=path, HPN_RUNS_DIR=str(tmp_path / "store"), COLUMNS="100")


def _start(args: list[str], tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """``hpn ARGS`` with stderr on a pseudo-terminal and stdout on a pipe."""
    master, slave = pty.openpty()
    p = subprocess.Popen(
        [sys.executable, "-m", "hpn", *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=tmp_path,
        env=_env(tmp_path),
        # a shell's background jobs ignore SIGINT; a user's Ctrl-C is not ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(slave)
    return p, master


def _read(master: int, until: bytes | None, p: subprocess.Popen, limit: float) -> bytes:
    got, t0 = b"", time.monotonic()
    while time.monotonic() - t0 < limit:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            got += chunk
        if until is not None and until in got:
            break
        if p.poll() is not None and not ready:
            break
    return got


def test_bar_on_terminal_stderr_and_json_stdout_clean(tmp_path):
    args = ["fail", DP_STEP, "--fault", FAULT, "--duration", "30s", "--json"]
    p, master = _start(args, tmp_path)
    err = _read(master, None, p, 240)
    out = p.communicate(timeout=240)[0]
    os.close(master)
    assert p.returncode == 0, err[-500:]
    assert b"simulating" in err and b"%" in err  # rich's bar
    import json

    assert json.loads(out)["horizon_s"] == 30  # stdout: exactly one JSON object


def test_no_bar_off_a_terminal(tmp_path):
    args = ["fail", DP_STEP, "--fault", FAULT, "--duration", "30s", "--json"]
    r = subprocess.run(
        [sys.executable, "-m", "hpn", *args],
        capture_output=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        timeout=240,
    )
    assert r.returncode == 0 and r.stderr == b""


def test_ctrl_c_is_one_line_exit_130_and_nothing_written(tmp_path):
    out = tmp_path / "run"
    args = ["fail", DP_STEP, "--fault", FAULT, "--duration", "20h", "--out", str(out)]
    p, master = _start(args, tmp_path)
    assert b"simulating" in _read(master, b"simulating", p, 120)
    p.send_signal(signal.SIGINT)
    err = _read(master, None, p, 60)
    p.wait(timeout=60)
    os.close(master)
    lines = [ln for ln in ANSI.sub(b"", err).replace(b"\r", b"\n").split(b"\n") if ln.strip()]
    assert p.returncode == 130, err[-500:]
    assert lines[-1].strip() == b"interrupted" and b"Traceback" not in err
    assert not out.exists()
    store = tmp_path / "store"
    assert not store.exists() or not [x for x in store.iterdir() if x.is_dir()]
