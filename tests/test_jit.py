"""`hpn.jit.Kernel`: a failed numba cache write leaves the kernel compiled and usable."""

from __future__ import annotations

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
