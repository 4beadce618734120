"""Start-up: a small run takes the numpy twins (no numba, no scipy import) and gives what the
compiled kernels give; ``hpn.jit.kernels_for`` chooses by size, ``HPN_KERNELS`` overrides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from hpn import jit
from hpn.errors import InputError

SRC = str(Path(__file__).resolve().parents[1] / "src")
SMALL = ["traffic", "--preset", "fat-tree", "--k", "8", "--speed", "100G", "--json"]
VARYING = {"wall_s", "peak_rss_mb"}

# the CLI in this interpreter, then which heavy packages it imported
_RUN = """
import sys
from hpn.cli import main
sys.argv = ["hpn", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
import json
heavy = sorted(m for m in ("numba", "scipy", "llvmlite") if m in sys.modules)
print(json.dumps(heavy), file=sys.stderr)
"""


def _run(args: list[str], kernels: str, tmp_path: Path) -> tuple[dict, list[str]]:
    env = {**os.environ, "PYTHONPATH": SRC, "HPN_KERNELS": kernels}
    env["HPN_RUNS_DIR"] = str(tmp_path / "runs")
    p = subprocess.run(
        [sys.executable, "-c", _RUN, *args], capture_output=True, text=True, env=env, timeout=600
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), json.loads(p.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("pattern", ["permutation", "all-to-all"])
def test_a_small_run_imports_neither_numba_nor_scipy_and_matches_the_kernels(pattern, tmp_path):
    args = [*SMALL, "--pattern", pattern]
    ours, heavy = _run(args, "auto", tmp_path)
    assert heavy == []
    if not jit.HAVE_NUMBA:
        return
    theirs, heavy = _run(args, "numba", tmp_path)
    assert "numba" in heavy  # the other side did run the compiled kernels
    assert {k: v for k, v in ours.items() if k not in VARYING} == {
        k: v for k, v in theirs.items() if k not in VARYING
    }


_UNUSED = """
import sys
from hpn.cli import main
sys.argv = ["hpn", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
import json
names = ("typer._adapters", "tomllib", "hpn.topology.hpn", "hpn.topology.dcn_plus")
print(json.dumps(sorted(m for m in names if m in sys.modules)), file=sys.stderr)
"""


def test_a_fat_tree_run_imports_no_other_preset_no_toml_reader_and_no_typer_adapter(tmp_path):
    """Issue 26: what a small fat-tree run does not use, it does not import: the HPN and DCN+
    builders, the TOML reader (it reads no file), typer's pydantic adapters (every value given
    is a text typer keeps as it is or hands to the flag's parser)."""
    env = {**os.environ, "PYTHONPATH": SRC, "HPN_RUNS_DIR": str(tmp_path / "runs")}
    p = subprocess.run(
        [sys.executable, "-c", _UNUSED, *SMALL, "--seed", "3", "--size", "1MB"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stderr.strip().splitlines()[-1]) == []
    assert json.loads(p.stdout)["seed"] == 3 and json.loads(p.stdout)["size_bytes"] == 1e6


def test_kernels_for_chooses_by_size(monkeypatch):
    monkeypatch.setattr(jit, "HAVE_NUMBA", True)
    monkeypatch.setenv(jit.ENV, "auto")
    with jit.kernels_for(jit.SMALL_WORK - 1) as compiled:
        assert not compiled and not jit.enabled()
        with jit.kernels_for(10 * jit.SMALL_WORK) as inner:  # a larger run inside: still off
            assert not inner
        assert not jit.enabled()
    assert jit.enabled()
    with jit.kernels_for(jit.SMALL_WORK) as compiled:
        assert compiled


def test_below_the_cold_size_uncompiled_kernels_stay_uncompiled(monkeypatch):
    monkeypatch.setattr(jit, "HAVE_NUMBA", True)
    monkeypatch.setenv(jit.ENV, "auto")
    warm = {"now": False}
    monkeypatch.setattr(jit, "cached", lambda fns: warm["now"])
    with jit.kernels_for(jit.SMALL_WORK) as compiled:
        assert not compiled  # compiling would cost more than the twins' work
    with jit.kernels_for(jit.COLD_WORK) as compiled:
        assert compiled  # large enough to pay for the compile
    warm["now"] = True
    with jit.kernels_for(jit.SMALL_WORK) as compiled:
        assert compiled


def test_a_long_cold_run_on_a_terminal_says_once_how_to_compile(monkeypatch, capsys):
    monkeypatch.setattr(jit, "HAVE_NUMBA", True)
    monkeypatch.setenv(jit.ENV, "auto")
    monkeypatch.setattr(jit, "cached", lambda fns: False)
    monkeypatch.setattr(jit, "_hinted", False)
    clock = iter([0.0, 1.0, 10.0, 20.0, 30.0, 40.0])
    monkeypatch.setattr(jit.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(jit.sys.stderr, "isatty", lambda: True)
    with jit.kernels_for(jit.SMALL_WORK):  # 1 s: too short to matter
        pass
    assert capsys.readouterr().err == ""
    for _ in range(2):  # 10 s each: said once
        with jit.kernels_for(jit.SMALL_WORK):
            pass
    err = capsys.readouterr().err
    assert err.count(jit.COLD_HINT) == 1 and "HPN_KERNELS=numba" in err


_CACHED = """
import sys
sys.path.insert(0, sys.argv[1])
from hpn import jit
import k3
before = jit.cached((k3.triple,))
fn = jit.Kernel(jit.keyed_jit(k3.triple))
print(before, fn(2), jit.cached((k3.triple,)))
"""


def test_cached_sees_a_compiled_kernel_without_importing_numba(tmp_path):
    pytest.importorskip("numba")
    (tmp_path / "k3.py").write_text("def triple(x):\n    return 3 * x\n")
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "NUMBA_CACHE_DIR": str(tmp_path)}
    run = [sys.executable, "-c", _CACHED, str(tmp_path)]
    first = subprocess.run(run, capture_output=True, text=True, check=True, env=env)
    assert first.stdout.split() == ["False", "6", "True"]
    check = "import sys; sys.path.insert(0, sys.argv[1]); from hpn import jit; import k3; "
    check += "print(jit.cached((k3.triple,)), 'numba' in sys.modules)"
    again = subprocess.run(
        [sys.executable, "-c", check, str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert again.stdout.split() == ["True", "False"], again.stderr


def test_the_environment_overrides_the_size(monkeypatch):
    monkeypatch.setattr(jit, "HAVE_NUMBA", True)
    monkeypatch.setenv(jit.ENV, "numba")
    with jit.kernels_for(1) as compiled:
        assert compiled
    monkeypatch.setenv(jit.ENV, "NumPy")
    with jit.kernels_for(10 * jit.SMALL_WORK) as compiled:
        assert not compiled and not jit.enabled()
    monkeypatch.setenv(jit.ENV, "fast")
    with pytest.raises(InputError, match="HPN_KERNELS: numba, numpy or auto"):
        jit.enabled()


def test_without_numba_nothing_is_compiled(monkeypatch):
    monkeypatch.setattr(jit, "HAVE_NUMBA", False)
    monkeypatch.setenv(jit.ENV, "numba")
    with jit.kernels_for(10 * jit.SMALL_WORK) as compiled:
        assert not compiled


def test_the_choice_is_per_thread(monkeypatch):
    monkeypatch.setattr(jit, "HAVE_NUMBA", True)
    monkeypatch.setenv(jit.ENV, "auto")
    seen = []
    inside, done = threading.Event(), threading.Event()

    def small():
        with jit.kernels_for(1):
            inside.set()
            done.wait(10)

    t = threading.Thread(target=small)
    t.start()
    inside.wait(10)
    seen.append(jit.enabled())  # this thread is not in the small run's block
    done.set()
    t.join()
    assert seen == [True]


def test_the_numpy_twins_of_the_sparse_matrices_equal_scipy():
    sp = pytest.importorskip("scipy.sparse")
    from hpn.engine.maxmin import incidence, incidence_csr
    from hpn.routing.shortest import SwitchGraph

    rng = np.random.default_rng(5)
    for n_rows, n_cols, n in ((1, 1, 0), (3, 5, 4), (40, 30, 500), (7, 1, 20)):
        rows, cols = rng.integers(0, n_rows, n), rng.integers(0, n_cols, n)
        ref = sp.csr_matrix((np.ones(n), (rows, cols)), shape=(n_rows, n_cols))
        ref.sum_duplicates()
        ref.sort_indices()
        ours = incidence_csr(rows, cols, n_rows, n_cols)
        assert ours.shape == ref.shape
        for name in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(ours, name), getattr(ref, name), err_msg=name)
        assert (incidence(rows, cols, n_rows, n_cols) != ref).nnz == 0
        if n_rows == n_cols:
            g = SwitchGraph.of(rows, cols, n_rows)
            np.testing.assert_array_equal(g.indptr, ref.indptr)
            np.testing.assert_array_equal(g.indices, ref.indices)
