"""The Aegaeon authors' simulator's latency model, evaluated as that simulator evaluates it.

The simulator (Art ``aegaeon/sim/estimator.py``, ``PrefillEstimator`` / ``DecodeEstimator``,
commit 1c3b110) fits, per (model, GPU), an ordinary least-squares line with an intercept
(sklearn ``LinearRegression``) to its vLLM profiles ``simdata/execution/<model>/<gpu>/
i<L>b<B>.json``: prefill ``a + b*t + c*s`` on ``avg_prefill_latency`` (t = L*B tokens,
s = L^2*B) and decode ``a + b*t + c*B`` on ``avg_decode_latency``, over the grid L in
{16, ..., 4096}, B in {1, 2, 4, 8, 16, 30, 40, ..., 200} with L*B <= the model's
``max_seq_len`` and (L+10)*B < 10240, keeping the points whose index in that grid is not a
multiple of 3 (its training split) and whose file exists. Its workers call the fits with
``predict(-1, -1, lens)`` (``worker.py``, ``Worker.do_batch``), so decode's batch term is
evaluated at B = -1, and take ``int(1000 * seconds)``: every prefill and decode step is
truncated to whole milliseconds. The fit is recomputed here in numpy from the artifact's
files (never shipped): `ArtifactLatency` reads them from the folder the user gives.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np

from hpn.errors import InputError
from hpn.gpus import GPU
from hpn.pool.costs import Latency
from hpn.pool.models import LLM

# catalog model -> (the simulator's profile folder, its ModelType.max_seq_len)
SIM_MODELS = {
    "qwen2.5-7b": ("qwen2.5-7b", 8192),
    "yi-1.5-9b": ("yi-9b", 4096),
    "llama-2-13b": ("llama2-13b", 4096),
}
LENS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
BATCHES = (1, 2, 4, 8, 16, *range(30, 210, 10))
DECODE_BATCH_AT = -1  # Art worker.py: decode_est.predict(-1, -1, decode_len_list)
_WHERE = ("", "simdata", "sim/simdata", "aegaeon/sim/simdata")
Coef = tuple[float, float, float]
FIELD = "pool.artifact"  # the [pool] knob naming the folder (errors name it)


def execution_dir(root: str | Path) -> Path:
    """The simulator's profile folder (``.../simdata/execution``) under `root`.

    Parameters
    ----------
    root
        The artifact's repository, its ``aegaeon`` folder, ``sim`` or ``simdata``.

    Returns
    -------
    Path
        The ``execution`` folder.

    Raises
    ------
    InputError
        (`FIELD`) when `root` holds no such folder.
    """
    base = Path(root)
    for sub in _WHERE:
        d = base / sub / "execution" if sub else base / "execution"
        if d.is_dir():
            return d
    raise InputError(
        FIELD,
        f"{root}: no simulator profiles (expected aegaeon/sim/simdata/execution/<model>/"
        "<gpu>/i<L>b<B>.json under the Aegaeon artifact's folder)",
    )


def _ols(x: np.ndarray, y: np.ndarray) -> Coef:
    """(intercept, coef 1, coef 2) of ordinary least squares with an intercept."""
    xm, ym = x.mean(axis=0), y.mean()
    coef = np.linalg.lstsq(x - xm, y - ym, rcond=None)[0]
    return float(ym - xm @ coef), float(coef[0]), float(coef[1])


@cache
def fit(folder: str, max_seq_len: int) -> tuple[Coef, Coef, int]:
    """The simulator's prefill and decode fits from one profile folder (module docstring).

    Parameters
    ----------
    folder
        ``execution/<model>/<gpu>``.
    max_seq_len
        The model's ``max_seq_len`` in the simulator (its grid's bound).

    Returns
    -------
    tuple
        Prefill (a, b, c), decode (a, b, c), seconds, and the number of points.

    Raises
    ------
    InputError
        (`FIELD`) when fewer than 3 training points are found or one is unreadable.
    """
    grid = [(n, b) for n in LENS for b in BATCHES if n * b <= max_seq_len and (n + 10) * b < 10240]
    px, py, dx, dy = [], [], [], []
    for i, (n, b) in enumerate(grid):
        f = Path(folder) / f"i{n}b{b}.json"
        if i % 3 == 0 or not f.is_file():
            continue
        try:
            data = json.loads(f.read_text())
            pre, dec = float(data["avg_prefill_latency"]), float(data["avg_decode_latency"])
        except (ValueError, KeyError, TypeError) as e:
            raise InputError(FIELD, f"{f}: not a simulator profile ({e})") from None
        px.append((n * b, n * n * b))
        py.append(pre)
        dx.append((n * b, b))
        dy.append(dec)
    if len(px) < 3:
        raise InputError(FIELD, f"{folder}: {len(px)} profile points; need at least 3")
    pre_fit = _ols(np.array(px, dtype=float), np.array(py))
    dec_fit = _ols(np.array(dx, dtype=float), np.array(dy))
    return pre_fit, dec_fit, len(px)


class ArtifactLatency:
    """`costs.LatencySource`: the simulator's fits from the artifact folder `root`.

    Parameters
    ----------
    root
        The Aegaeon artifact's folder (see `execution_dir`).
    """

    name = "artifact"

    def __init__(self, root: str | Path):
        self.root = execution_dir(root)

    def latency(self, model: LLM, gpu: GPU) -> Latency:
        """The simulator's latency of `model` on `gpu`: decode's batch term at -1, whole ms.

        Raises
        ------
        InputError
            (`FIELD`) for a model the simulator does not have or no profiles on `gpu`.
        """
        if model.name not in SIM_MODELS or model.tp != 1:
            known = ", ".join(SIM_MODELS)
            raise InputError(FIELD, f"the simulator profiles {known} at TP 1, not {model.name}")
        sim, max_len = SIM_MODELS[model.name]
        folder = self.root / sim / gpu.name.lower()
        if not folder.is_dir():
            raise InputError(FIELD, f"{folder}: no simulator profiles of {sim} on {gpu.name}")
        pre, dec, n = fit(str(folder), max_len)
        return Latency(
            pre,
            dec,
            f"artifact simulator fit {sim}/{gpu.name.lower()} ({n} points)",
            batch_at=DECODE_BATCH_AT,
            whole_ms=True,
        )
