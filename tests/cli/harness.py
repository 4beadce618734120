"""Running ``hpn`` in-process for the bad-input corpus: argv in, (exit code, stdout, stderr)
out, each case in its own working folder and store, with a time limit.

In-process is what ``python -m hpn`` does (it calls :func:`hpn.cli.main`), minus the
interpreter start: the corpus runs in seconds instead of minutes.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import traceback
from pathlib import Path

from tests.conftest import CliResult


class TooSlow(BaseException):
    """A case ran past its time limit: the command computed instead of refusing at once."""


def _alarm(signum, frame):
    raise TooSlow


def invoke(args: list[str], cwd: Path, env: dict[str, str], limit_s: int = 20) -> CliResult:
    """``hpn ARGS`` in this process, in ``cwd``, with ``env`` set; an escaped exception is
    reported as a traceback on stderr and exit code 1, as the interpreter would."""
    from hpn.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env = {k: os.environ.get(k) for k in env}
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    os.environ.update(env)
    sys.argv = ["hpn", *args]
    os.chdir(cwd)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit_s)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except TooSlow:
                code = 124
                err.write(f"(ran past {limit_s} s instead of refusing at once)\n")
            except BaseException:  # noqa: BLE001 - what a user would see
                code = 1
                err.write(traceback.format_exc())
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return CliResult(code, out.getvalue(), err.getvalue())


def snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``roots`` with its size and mtime (folders: that they exist), what
    "nothing written" compares. A folder's own mtime is left out: opening the SQLite index
    to read it creates and removes its journal files."""
    seen: dict[str, tuple[int, int]] = {}
    for root in roots:
        if not root.exists():
            continue
        for p in [root, *root.rglob("*")]:
            st = p.lstat()
            seen[str(p)] = (0, 0) if p.is_dir() else (st.st_size, st.st_mtime_ns)
    return seen
