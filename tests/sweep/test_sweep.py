"""Sweeps: points from grids and zips, reuse on rerun, and resuming after kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpn.errors import InputError
from hpn.store import Index, runs_root
from hpn.sweep import SweepSpec, load_sweep, points, run_sweep
from tests.conftest import assert_input_error

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _plugin(plugin):
    """The plug-in command ``test square``, installed (an entry point)."""


def _spec(n: int, sleep: float = 0.0, name: str = "sq", **extra) -> SweepSpec:
    return SweepSpec(
        name=name,
        command="test square",
        base={"p": {"sleep": sleep}},
        grid={"p.x": list(range(n))},
        **extra,
    )


def test_points_grid_times_zip_with_stable_keys():
    spec = SweepSpec(
        command="topo summary",
        grid={"fabric.segments": [1, 2], "fabric.dual_plane": [True, False]},
        zip={"fabric.chip": ["51.2T", "102.4T"], "fabric.uplink_speed": ["400G", "800G"]},
    )
    pts = points(spec)
    assert len(pts) == 8 and len({p.key for p in pts}) == 8
    assert pts[0].config == {
        "fabric": {"chip": "51.2T", "uplink_speed": "400G", "segments": 1, "dual_plane": True}
    }
    assert pts[0].label == "chip=51.2T uplink_speed=400G segments=1 dual_plane=True"
    # adding a value keeps the keys of the points that were there
    spec2 = spec.model_copy(update={"grid": {**spec.grid, "fabric.segments": [1, 2, 4]}})
    assert {p.key for p in pts} < {p.key for p in points(spec2)}


def test_bad_sweep_files(tmp_path: Path, cli):
    f = tmp_path / "s.toml"
    f.write_text('command = "topo summary"\n[zip]\n"a" = [1, 2]\n"b" = [1]\n')
    with pytest.raises(InputError, match="equal lengths"):
        load_sweep(f)
    assert_input_error(cli("sweep", str(f)), "zip")
    f.write_text('command = "nope"\n')
    assert_input_error(cli("sweep", str(f)), "command", "unknown command")
    f.write_text('command = "topo summary"\n[grid]\n"a b" = [1]\n')
    assert_input_error(cli("sweep", str(f)), "grid")
    f.write_text('command = "topo summary"\n')
    assert_input_error(cli("sweep", str(f), "--dask", "http://x"), "--dask")


def test_rerun_reuses_and_a_failing_point_fails_alone():
    spec = _spec(4, zip={"p.fail": [False]})
    first = run_sweep(spec)
    assert (first["computed"], first["reused"], first["failed"]) == (4, 0, 0)
    again = run_sweep(_spec(6, zip={"p.fail": [False]}))
    assert (again["computed"], again["reused"]) == (2, 4)
    bad = run_sweep(_spec(2, name="bad", zip={"p.fail": [True]}))
    assert bad["failed"] == 2 and "asked to fail" in next(iter(bad["errors"].values()))
    rows = Index(runs_root()).rows("sweep = 'sq'")
    assert sorted(r["figures"]["y"] for r in rows) == [0, 1, 4, 9, 16, 25]
    assert {r["computed"] for r in rows} == {1}


def test_recovers_a_point_finished_but_not_indexed():
    run_sweep(_spec(3))
    os.remove(runs_root() / "index.sqlite")
    out = run_sweep(_spec(3))
    assert (out["recovered"], out["reused"], out["computed"]) == (3, 3, 0)


def _done(sweep: str) -> list[dict]:
    return Index(runs_root()).rows("sweep = ? AND status = 'done'", (sweep,))


@pytest.mark.parametrize("workers", [1, 2])
def test_kill_9_then_resume_loses_nothing_and_computes_nothing_twice(tmp_path: Path, workers):
    n = 12
    f = tmp_path / "kill.toml"
    f.write_text(
        f'name = "kill"\ncommand = "test square"\n[base.p]\nsleep = 0.25\n'
        f'[grid]\n"p.x" = {list(range(n))}\n'
    )
    cmd = [sys.executable, "-m", "hpn", "sweep", str(f), "--workers", str(workers)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while len(_done("kill")) < 3 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {r["point"] for r in _done("kill")}
    assert 3 <= len(before) < n, "the kill should land mid-sweep"
    time.sleep(0.5)  # orphaned pool workers finish their point and drop it
    r = subprocess.run([*cmd, "--json"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    import json

    out = json.loads(r.stdout)
    rows = _done("kill")
    assert len(rows) == n == len({r["point"] for r in rows})  # none lost
    assert {r["computed"] for r in rows} == {1}  # none computed twice
    assert out["reused"] + out["recovered"] >= len(before)
    assert out["reused"] + out["computed"] == n
    assert sorted(r["figures"]["y"] for r in rows) == [x * x for x in range(n)]
    assert _orphans() == []  # pool workers of the killed driver exited


def _orphans() -> list[int]:
    """Processes (other than this one) started with this test's store."""
    mark = f"HPN_RUNS_DIR={runs_root()}".encode()
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark + b"\0" in env.read_bytes() + b"\0" and int(env.parent.name) != os.getpid():
                found.append(int(env.parent.name))
        except OSError:
            pass
    return found


def test_dask_local_cluster():
    pytest.importorskip("dask.distributed")
    out = run_sweep(_spec(4, name="dask"), workers=2, dask="local")
    assert (out["computed"], out["failed"]) == (4, 0)
    assert out["executor"] == "dask local"
    assert len(_done("dask")) == 4


def test_cli_sweep_on_topo_summary(cli):
    r = cli("sweep", str(REPO / "examples" / "sweeps" / "segments.toml"), "--json")
    assert r.code == 0, r.err
    out = r.json()
    assert (out["points"], out["computed"], out["failed"]) == (8, 8, 0)
    rows = Index(runs_root()).rows("sweep = 'hpn-segments'")
    gpus = sorted(r["figures"]["gpus"] for r in rows)
    assert gpus == sorted([1024, 2048, 4096, 7168] * 2)
    assert (
        cli("sweep", str(REPO / "examples" / "sweeps" / "segments.toml"), "--json").json()["reused"]
        == 8
    )
