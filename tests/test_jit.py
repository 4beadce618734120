"""`hpn.jit.Kernel`: a failed numba cache write leaves the kernel compiled and usable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hpn.jit import Kernel


def test_other_errors_are_raised_as_they_are():
    def broken():
        raise RuntimeError("something else")

    with pytest.raises(RuntimeError, match="something else"):
        Kernel(broken)()


def test_a_real_dispatcher_whose_cache_write_fails_still_runs(tmp_path, monkeypatch):
    numba = pytest.importorskip("numba")
    from numba.core import caching

    saves = []

    def failing_save(self, sig, data):  # what numba raises in the race
        saves.append(sig)
        raise RuntimeError("no compiled object yet for <Library 'twice'>")

    monkeypatch.setattr(caching.Cache, "save_overload", failing_save)
    src = tmp_path / "k.py"  # a module of its own: its cache goes under tmp_path
    src.write_text("def twice(x):\n    return 2 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import k  # type: ignore[import-not-found]

    fn = numba.njit(cache=True)(k.twice)
    with pytest.raises(RuntimeError, match="no compiled object yet"):
        fn(3)  # numba itself fails the call ...
    fn2 = numba.njit(cache=True)(k.twice)
    assert Kernel(fn2)(21) == 42  # ... the kernel is compiled anyway: the retry runs it
    assert len(saves) == 2


_ANNOUNCE = """
import io, sys
sys.path.insert(0, sys.argv[1])
import numba
from hpn import jit

class Tty(io.StringIO):
    def isatty(self):
        return True

err = sys.stderr = Tty()
import k2
a, b = jit.Kernel(numba.njit(k2.thrice)), jit.Kernel(numba.njit(k2.half))
values = (a(2), b(3), a(4))  # two functions compiled
sys.stderr = sys.__stderr__
from hpn.jitnotice import NOTICE
print(values, err.getvalue().count(NOTICE))
"""


def test_a_compile_is_announced_once_on_a_terminal(tmp_path):
    pytest.importorskip("numba")
    (tmp_path / "k2.py").write_text(
        "def thrice(x):\n    return 3 * x\n\ndef half(x):\n    return x / 2\n"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run(
        [sys.executable, "-c", _ANNOUNCE, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin", "NUMBA_CACHE_DIR": str(tmp_path)},
    )
    assert out.stdout.split() == ["(6,", "1.5,", "12)", "1"]


_STALE = """
import sys
sys.path.insert(0, sys.argv[1])
from pkgx import kern
print(kern.K["run"](1), kern.K["run"].fn.stats.cache_hits.most_common(1))
"""


def test_an_edit_of_a_callee_in_another_module_recompiles_the_kernel(tmp_path):
    """numba's cache checks only the kernel's own file; the source key also sees its callee's."""
    pytest.importorskip("numba")
    pkg = tmp_path / "pkgx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def inc(x):\n    return x + 1\n")
    (pkg / "kern.py").write_text(
        "from hpn.jit import compile_in\n"
        "from pkgx import helpers\n\n"
        "inc = helpers.inc\n\n\n"
        "def run(x):\n    return inc(x) * 10\n\n\n"
        'K = compile_in(globals(), ("inc",), {"run": "run"})\n'
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {"PYTHONPATH": src, "PATH": "/usr/bin:/bin", "NUMBA_CACHE_DIR": str(tmp_path / "c")}

    def once() -> list[str]:
        p = subprocess.run(
            [sys.executable, "-c", _STALE, str(tmp_path)],
            capture_output=True, text=True, check=True, env=env,
        )  # fmt: skip
        return p.stdout.split(maxsplit=1)

    first = once()
    assert first[0] == "20" and first[1].strip() == "[]"  # compiled
    again = once()
    assert again[0] == "20" and "1)" in again[1]  # loaded from the cache
    (pkg / "helpers.py").write_text("def inc(x):\n    return x + 2\n")
    edited = once()
    assert edited[0] == "30" and edited[1].strip() == "[]"  # the callee's edit recompiled it
    assert once()[0] == "30"


def test_the_source_key_follows_callees_across_modules(tmp_path, monkeypatch):
    from hpn.jit import source_files

    (tmp_path / "keya.py").write_text("import keyb\n\ndef f(x):\n    return keyb.g(x)\n")
    (tmp_path / "keyb.py").write_text("from keyc import h\n\ndef g(x):\n    return h(x)\n")
    (tmp_path / "keyc.py").write_text("import numpy as np\n\ndef h(x):\n    return np.abs(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import keya  # type: ignore[import-not-found]

    names = {Path(p).name for p in source_files(keya.f)}
    assert names == {"keya.py", "keyb.py", "keyc.py"}


def test_old_key_folders_are_pruned(tmp_path):
    import os
    import time

    from hpn.jit import KEEP_DAYS, _prune

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (tmp_path / "timings.json").write_text("{}")
    past = time.time() - (KEEP_DAYS + 1) * 86_400
    os.utime(old, (past, past))
    _prune(str(tmp_path))
    assert not old.exists() and new.exists() and (tmp_path / "timings.json").exists()
