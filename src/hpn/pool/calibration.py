"""Fitted latency coefficients and their refit from the shared profile table.

The coefficients live in ``hpn/pool/data/latency_fits.json``. They were fitted by this module
(``python -m hpn.pool.calibration ../shared/data/profiles/vllm_eager_profiles.csv``) on the
Aegaeon artifact's vLLM eager-mode profiles (TP=1, FP16; rows with clean=1), using
non-negative least squares so that no fitted latency can decrease with load:

- prefill batch:  T = a + b*sum(l) + c*sum(l^2)        (l = prompt lengths)
- decode step:    T = a + b*sum(ctx) + c*B             (ctx taken as (L+5)*B per profile point)

All coefficients are stored in SI seconds (per token, per token^2, per sequence).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TypedDict

import numpy as np

from hpn.errors import InputError

FITS_FILE = "latency_fits.json"


@cache
def fits() -> dict[str, dict]:
    """``{"<profile>/<GPU>": {"prefill": [a, b, c], "decode": [a, b, c], ...}}``."""
    text = resources.files("hpn.pool").joinpath("data", FITS_FILE).read_text()
    return json.loads(text)["fits"]


def _nnls_fit(x: np.ndarray, y: np.ndarray) -> tuple[list[float], float]:
    from scipy.optimize import nnls

    # scale columns so NNLS is well conditioned, then undo the scaling
    scale = np.maximum(np.abs(x).max(axis=0), 1e-30)
    coef, _ = nnls(x / scale, y)
    coef = coef / scale
    pred = x @ coef
    ss_res = float(((y - pred) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum()) or 1.0
    return [float(c) for c in coef], 1.0 - ss_res / ss_tot


class LatencyFit(TypedDict):
    """A (model, GPU)'s fitted latencies: prefill ``a + b*L*B + c*L^2*B`` and decode step
    ``a + b*(L+5)*B + c*B`` seconds (non-negative least squares), their R^2, the points."""

    prefill: list[float]
    decode: list[float]
    r2_prefill: float
    r2_decode: float
    points: int


def fit_profiles(path: str | Path) -> dict[str, LatencyFit]:
    """Fit every (model, GPU) set of a `vllm_eager_profiles.csv` table.

    Parameters
    ----------
    path
        The profiles CSV (rows with ``clean=1`` are fitted).

    Returns
    -------
    dict
        ``{"<model>/<GPU>": {"prefill": [a, b, c], "decode": [a, b, c], ...}}``: non-negative
        least-squares coefficients and their R^2.
    """
    rows: dict[str, list[tuple[int, int, float, float]]] = {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        for line, r in enumerate(reader, start=2):
            try:
                if int(r["clean"]) != 1:
                    continue
                key = f"{r['model']}/{r['gpu']}"
                rows.setdefault(key, []).append(
                    (
                        int(r["input_len"]),
                        int(r["batch_size"]),
                        float(r["prefill_ms"]) / 1e3,
                        float(r["decode_step_ms"]) / 1e3,
                    )
                )
            except (KeyError, ValueError) as e:
                raise InputError(f"{path}:{line}", f"bad profile row: {e}") from None
    out: dict[str, LatencyFit] = {}
    for key, pts in sorted(rows.items()):
        a = np.array(pts, dtype=float)
        L, B, pre, dec = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
        one = np.ones_like(L)
        p_coef, p_r2 = _nnls_fit(np.column_stack([one, L * B, L * L * B]), pre)
        d_coef, d_r2 = _nnls_fit(np.column_stack([one, (L + 5) * B, B]), dec)
        out[key] = LatencyFit(
            prefill=p_coef,
            decode=d_coef,
            r2_prefill=round(p_r2, 4),
            r2_decode=round(d_r2, 4),
            points=len(pts),
        )
    return out


def main(argv: list[str]) -> int:
    """Refit: ``python -m hpn.pool.calibration PROFILES_CSV [SYNTH_CSV ...]``.

    Parameters
    ----------
    argv
        The profiles CSV, then optional Aegaeon synthetic traces for the length tables.

    Returns
    -------
    int
        The exit status.
    """
    if len(argv) < 1:
        print("usage: python -m hpn.pool.calibration PROFILES_CSV [SYNTH_CSV ...]", file=sys.stderr)
        return 2
    doc = {
        "source": (
            "Aegaeon artifact vLLM eager profiles (MachineLearningSystem/25SOSP-Aegaeon, "
            "aegaeon/profiles/<model>/<GPU>/i<L>b<B>.json) as tabulated in "
            "shared/data/profiles/vllm_eager_profiles.csv; clean=1 rows; NNLS fit by "
            "hpn.pool.calibration"
        ),
        "units": "seconds; prefill [a, b per prompt token, c per token^2]; "
        "decode [a, b per context token, c per sequence]",
        "fits": fit_profiles(argv[0]),
    }
    target = Path(__file__).parent / "data" / FITS_FILE
    target.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(doc['fits'])} fits to {target}")
    if len(argv) > 1:
        target = Path(__file__).parent / "data" / LENGTHS_FILE
        target.write_text(json.dumps(fit_lengths(argv[1:]), indent=1) + "\n")
        print(f"wrote length quantiles to {target}")
    return 0


LENGTHS_FILE = "sharegpt_lengths.json"
LENGTH_QUANTILES = [round(0.025 * i, 3) for i in range(40)] + [0.99, 0.995, 0.999]
"""Up to p99.9: draws above it take the p99.9 value (no extrapolation into the far tail)."""


@cache
def length_quantiles() -> dict[str, list[float]]:
    """Quantile tables of ShareGPT-like input and output lengths (``input``, ``output``)."""
    text = resources.files("hpn.pool").joinpath("data", LENGTHS_FILE).read_text()
    return json.loads(text)


def fit_lengths(paths: Sequence[str | Path]) -> dict:
    """Quantile tables of prompt/output lengths of Aegaeon synthetic traces (ShareGPT-sampled).

    Parameters
    ----------
    paths
        Aegaeon trace CSVs.

    Returns
    -------
    dict
        Input and output length quantiles.
    """
    from hpn.pool.traces.aegaeon import read_aegaeon

    ins, outs = [], []
    for p in paths:
        t = read_aegaeon(p)
        ins.append(t.input_len)
        outs.append(t.output_len)
    i, o = np.concatenate(ins), np.concatenate(outs)
    q = np.array(LENGTH_QUANTILES)
    return {
        "source": "Aegaeon artifact aegaeon/sim/simdata/synth-*-1.0-1.0.csv (ShareGPT V3 "
        f"lengths), {len(i)} requests; fitted by hpn.pool.calibration",
        "quantiles": LENGTH_QUANTILES,
        "input": [float(x) for x in np.quantile(i, q)],
        "output": [float(x) for x in np.quantile(o, q)],
    }


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
