"""The corpus's second table: the operating system's refusals, the store's faults, numbers
that are not numbers, files past their limits, and the dashboard's start (issue 28).

Same rules as :mod:`tests.cli.corpus` (exit 2, one line with the fragments, nothing written);
:mod:`tests.cli.corpus` adds :data:`INPUTS`, :data:`SETUPS` and :data:`CASES` to its own.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli.case import cases

TRACE_HEAD = "Request Time,Model Name,Input Length,Output Length\n"

_JOB = (
    '[[job]]\nname = "j"\n[job.model]\nlayers = 2\nhidden = {hidden}\nheads = 2\n'
    "seq_len = 64\n[job.parallel]\ntp = 1\npp = 1\ndp = 8\nglobal_batch = 8\n"
)
INPUTS: dict[str, str] = {
    "segments-true.toml": '[fabric]\npreset = "hpn"\nsegments = true\n',
    "segments-float.toml": '[fabric]\npreset = "hpn"\nsegments = 2.0\n',
    "segments-huge.toml": '[fabric]\npreset = "hpn"\nsegments = 1' + "0" * 30 + "\n",
    "dual-plane-1.toml": '[fabric]\npreset = "hpn"\ndual_plane = 1\n',
    "speed-bare.toml": '[fabric]\npreset = "fat-tree"\nk = 4\nspeed = 100\n',
    "speed-text.toml": '[fabric]\npreset = "fat-tree"\nk = 4\nspeed = "100"\n',
    "oversub-inf.toml": '[fabric]\npreset = "hpn"\nagg_oversubscription = inf\n',
    "oversub-nan.toml": '[fabric]\npreset = "hpn"\nagg_oversubscription = nan\n',
    "prices-nan.toml": '[prices.switch]\n"51.2T" = nan\n',
    "prices-negative.toml": '[prices.switch]\n"51.2T" = -5.0\n',
    "prices-inf.toml": '[prices.transceiver]\n"400G" = inf\n',
    "hidden-float.toml": _JOB.format(hidden="1e9"),
    "hidden-huge.toml": _JOB.format(hidden="1000000000"),
    "bucket-bare.toml": _JOB.format(hidden=64) + "[job.comm]\nbucket = 1000\n",
    "mix-count-float.toml": '[[model]]\nmodel = "qwen2.5-7b"\nrate = 0.1\ncount = 1e9\n',
    "mix-count-huge.toml": '[[model]]\nmodel = "qwen2.5-7b"\nrate = 0.1\ncount = 1000000000\n',
    "mix-many.toml": '[[model]]\nmodel = "qwen2.5-7b"\nrate = 0.001\ncount = 5000\n',
    "mix-rate-inf.toml": '[[model]]\nmodel = "qwen2.5-7b"\nrate = inf\n',
    "trace-models.csv": TRACE_HEAD
    + "".join(f"00:00:{i % 60:02d}.000,m{i},10,10\n" for i in range(1_500)),
    "trace-month.csv": TRACE_HEAD + "00:00:00.000,m,10,10\n720:00:00.000,m,10,10\n",
    "aicb-many.txt": "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 "
    "pp: 1 vpp: 1 ga: 1 all_gpus: 8\n200000\n",
    "aicb-ga.txt": "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 "
    "pp: 1 vpp: 1 ga: 1000000000 all_gpus: 8\n0\n",
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "badindex/index.sqlite": "this is not a database, just text\n" * 10,
    "dirindex/index.sqlite/x": "",
}
AICB_JOB = '[[job]]\nname = "j"\naicb = "{aicb}"\n'


def make_inputs(folder: Path) -> None:
    """The few inputs that are not plain text files: AICB jobs naming their workload."""
    for name in ("aicb-many", "aicb-ga"):
        (folder / f"job-{name}.toml").write_text(AICB_JOB.format(aicb=folder / f"{name}.txt"))


def _loop(cwd: Path) -> None:
    os.symlink("loop-b", cwd / "loop-a")
    os.symlink("loop-a", cwd / "loop-b")


def _dangling(cwd: Path) -> None:
    os.symlink(cwd / "nowhere" / "at-all", cwd / "dangling")


SETUPS = {"loop": _loop, "dangling": _dangling}
BAD_INDEX = {"env": {"HPN_RUNS_DIR": "{F}/badindex"}}
DIR_INDEX = {"env": {"HPN_RUNS_DIR": "{F}/dirindex"}}
LONG = "x" * 300

CASES = []
CASES += cases(
    "topo summary",
    [
        # the operating system: checked before the compute, one line naming the path
        (f"--out {LONG}", ("--out", "too long")),
        (f"--out {'d/' * 2100}x", ("--out", "too long")),
        ("--out /proc/hpn-run", ("--out", "/proc", "not writable")),
        ("--out loop-a", ("--out", "loop-a", "looping symlink"), {"setup": "loop"}),
        ("--out dangling", ("--out", "dangling", "broken"), {"setup": "dangling"}),
        ("", ("index.sqlite", "reindex"), BAD_INDEX),
        ("", ("index.sqlite", "folder"), DIR_INDEX),
        ("--out {F}/badindex", ("--out", "not a run folder")),
        # numbers: ints and bools strict, no inf or nan, sizes and bandwidths with units
        ("--config {F}/segments-true.toml", ("fabric.segments", "whole number")),
        ("--config {F}/segments-float.toml", ("fabric.segments", "whole number")),
        ("--config {F}/segments-huge.toml", ("segments",)),
        ("--config {F}/dual-plane-1.toml", ("dual_plane", "true or false")),
        ("--config {F}/speed-bare.toml", ("speed", "unit", "100G")),
        ("--config {F}/speed-text.toml", ("speed", "unit")),
        ("--preset fat-tree --k 4 --speed 100", ("speed", "unit")),
        ("--set segments=true", ("segments", "whole number")),
        ("--set dual_plane=1", ("dual_plane", "true or false")),
        ("--set agg_oversubscription=1e309", ("agg_oversubscription", "finite")),
        ("--agg-oversubscription inf", ("agg_oversubscription",)),
        ("--agg-oversubscription -inf", ("agg_oversubscription",)),
        ("--config {F}/oversub-inf.toml", ("agg_oversubscription", "finite")),
        ("--config {F}/oversub-nan.toml", ("agg_oversubscription", "finite")),
        ("--config /dev/zero", ("/dev/zero", "larger than")),
        ("", ("HPN_RUNS_DIR", "is a file"), {"env": {"HPN_RUNS_DIR": "/dev/null"}}),
    ],
)
CASES += cases(
    "topo bom",
    [
        ("--prices {F}/prices-nan.toml", ("switch", "finite")),
        ("--prices {F}/prices-negative.toml", ("switch", ">= 0|greater than or equal to 0")),
        ("--prices {F}/prices-inf.toml", ("transceiver", "finite")),
    ],
)
CASES += cases(
    "topo import",
    [
        ("{F}/deep.json", ("deep.json", "nested")),
        ("/dev/zero --format simai", ("/dev/zero", "larger than")),
    ],
)
CASES += cases(
    "topo export",
    [(f"--out {LONG}.json", ("--out", "too long")), ("--out /proc/x.json", ("--out", "/proc"))],
)
CASES += cases(
    "topo draw",
    [(f"--out {LONG}.png", ("--out", "too long")), ("--out /proc/x.png", ("--out", "/proc"))],
)
CASES += cases(
    "pool simulate",
    [
        ("--models 2 --gpus 2 --cv inf", ("cv", "finite")),
        ("--models 2 --gpus 2 --cv nan", ("cv", "finite")),
        ("--models 2 --gpus 2 --rate inf", ("rate", "finite")),
        ("--models 2 --gpus 2 --zipf nan", ("zipf",)),
        ("--trace {F}/trace-models.csv --gpus 8", ("trace", "trace models", "1,000")),
        ("--trace {F}/trace-month.csv --gpus 8", ("trace", "trace span", "24h")),
        ("--trace /dev/zero --gpus 8", ("/dev/zero",)),
    ],
)
CASES += cases(
    "pool capacity",
    [
        ("--mix {F}/mix-count-float.toml", ("count", "whole number")),
        ("--mix {F}/mix-count-huge.toml", ("count", "100000")),
        ("--mix {F}/mix-many.toml --duration 10min", ("mix", "models in the mix", "1,000")),
        ("--mix {F}/mix-rate-inf.toml", ("rate", "finite")),
    ],
)
CASES += cases(
    "train",
    [
        ("{F}/hidden-float.toml", ("hidden", "whole number")),
        ("{F}/hidden-huge.toml", ("hidden",)),
        ("{F}/bucket-bare.toml", ("bucket", "unit")),
        ("{F}/job-aicb-many.toml", ("aicb-many.txt", "100,000")),
        ("{F}/job-aicb-ga.toml", ("aicb-ga.txt", "ga")),
    ],
)
CASES += cases(
    "reliability",
    [
        ("--price inf --json", ("price", "finite")),
        ("--price nan", ("price", "finite")),
        ("--price -1", ("price",)),
    ],
)
CASES += cases("collective", [("--gpus 8.0", ("--gpus", "integer"))])
CASES += cases(
    "runs list",
    [("", ("index.sqlite", "reindex"), BAD_INDEX), ("", ("index.sqlite", "folder"), DIR_INDEX)],
)
CASES += cases("runs show", [("x" * 5000, ("RUN", "no run"))])
CASES += cases(
    "runs query",
    [
        (("select 1", "--timeout", "nan"), ("--timeout",)),
        (("select 1", "--timeout", "0"), ("--timeout",)),
        (("select 1", "--timeout", "1e9"), ("--timeout",)),
    ],
)
CASES += cases(
    "dash",
    [
        ("--host 0.0.0.0", ("--host", "--allow-remote")),
        ("--host 10.0.0.1", ("--host", "--allow-remote")),
        ("--data {F}/missing", ("--data", "not a folder")),
        ("--data {F}/afile", ("--data", "not a folder")),
    ],
)
