"""Measure this device's prefill, decode-step and switch latencies and fit the cost model.

The grid's points are written as rows of the vLLM profile table (`input_len`,
`batch_size`, `prefill_ms`, `decode_step_ms`) and fitted by `hpn.pool.calibration`'s own
`fit_profiles`, the code that fits the Aegaeon artifact's vLLM profiles, so the engine's
coefficients mean exactly what the simulator's do. Models of one shape (same config
apart from the seed) are measured once. A switch is timed as the real scale-up (copy of
the weights over the instance's link into the device pool, skeleton bound).

Instances of one device share it (CPU instances are threads sharing the cores and the
interpreter; CUDA instances share one GPU), so a step takes longer the more instances
compute at once. `contention` measures that: the same prefill and decode step with
k = 1..n instances computing together, as times relative to the grid's concurrency; the
simulator's prediction of a replay charges it (`hpn.serve.compare.SharedDeviceBackend`).

Two costs of a decode turn are measured on the engine's own code paths too, at the grid's
concurrency: a KV copy over the link (`kv_copy`: base + bytes x per_byte, the engine's
block-by-block copy, whose pacing and thread hand-offs cost more than bytes / link when
the instances compute), and the decode warm-up (`decode_warmup_s`): the extra seconds of
a model's first decode steps after its weights were copied in (on CPU the weights and
the KV are not yet in the caches) over the same steps once warm.

A profile feeds both sides of the check: `predictor` (what a policy estimates with on the
engine) and `cost_model` (the simulator's ground truth for a prediction of a replay).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hpn.errors import InputError

if TYPE_CHECKING:
    from hpn.pool.calibration import LatencyFit
from hpn.serve.device import DeviceSpec, Link
from hpn.serve.kv import blocks_for
from hpn.serve.weights import DeviceModel, HostModel

LENS = (16, 64, 256)
BATCHES = (1, 4, 8)
DECODE_STEPS = 10  # mean context over the steps is L + 5, as the fit assumes
WARM_STEPS = 3  # decode steps after a scale-up that run slower (CPU: 1.9x, 1.5x, 1.3x)
MAX_POINTS = 64


def shape_key(host: HostModel) -> str:
    c = host.config
    return "-".join(
        str(getattr(c, k, None))
        for k in (
            "model_type",
            "num_hidden_layers",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
            "intermediate_size",
            "vocab_size",
        )
    )


def measure(
    hosts: dict[str, HostModel],
    spec: DeviceSpec,
    lens=LENS,
    batches=BATCHES,
    repeats: int = 2,
    concurrent: int = 1,
) -> dict:
    """Time the grid on `concurrent` instances of `spec` running it at once (threads, as
    the engine's instances do; on CPU they share the cores and the interpreter, so a
    profile for N instances is measured with N busy); returns the profile dict."""
    if len(lens) * len(batches) > MAX_POINTS:
        raise InputError("grid", f"at most {MAX_POINTS} (length, batch) points")
    if not 1 <= concurrent <= 64:
        raise InputError("concurrent", f"must be 1..64, got {concurrent}")
    shapes: dict[str, list[str]] = {}
    for name, h in hosts.items():
        shapes.setdefault(shape_key(h), []).append(name)
    rows, switch, switch_cold, fits_by_model = [], {}, {}, {}
    warmup: dict[str, float] = {}
    kv_points: list[tuple[int, float]] = []
    for key, names in sorted(shapes.items()):
        host = hosts[names[0]]
        results: list = [None] * concurrent

        def work(k: int, host=host, results=results) -> None:
            results[k] = _measure_shape(host, spec, lens, batches, repeats, seed=k)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(concurrent)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sw = statistics.median(r[0] for r in results)
        sw_cold = statistics.median(r[2] for r in results)
        kv_points += [p for r in results for p in r[3]]
        warm = statistics.median(r[4] for r in results)
        for i, (L, B, _, _) in enumerate(results[0][1]):
            p = statistics.median(r[1][i][2] for r in results)
            d = statistics.median(r[1][i][3] for r in results)
            rows.append((key, L, B, p, d))
        for n in names:
            switch[n] = sw
            switch_cold[n] = sw_cold
            warmup[n] = warm
    fitted = fit_rows(rows, spec)
    first = hosts[sorted(shapes.values())[0][0]]
    for key, names in shapes.items():
        for n in names:
            fits_by_model[n] = fitted[key]
    return {
        "device": {
            "kind": spec.kind,
            "memory_bytes": spec.memory_bytes,
            "link_bps": spec.link_bps,
            "threads": spec.threads,
            "dtype": spec.dtype,
            "concurrent": concurrent,
        },
        "grid": {"input_len": list(lens), "batch_size": list(batches)},
        "points": [
            {"shape": k, "input_len": L, "batch_size": B, "prefill_s": p, "decode_step_s": d}
            for k, L, B, p, d in rows
        ],
        "fits": fits_by_model,
        "switch_s": switch,
        "cold_switch_s": switch_cold,
        "decode_warmup_s": warmup,
        "kv_copy": fit_kv(kv_points),
        "weights": {n: h.nbytes for n, h in hosts.items()},
        "layers": {n: h.info.layers for n, h in hosts.items()},
        "contention": contention(first, spec, concurrent, repeats) if concurrent > 1 else None,
    }


PROBE_LEN, PROBE_BATCH = 64, 4


def contention(host: HostModel, spec: DeviceSpec, n: int, repeats: int = 2) -> dict:
    """Prefill (`PROBE_BATCH` x `PROBE_LEN`), decode-step and cold scale-up (a model built
    afresh, as an engine start-up) times with k = 1..n instances of `host` computing at
    once, relative to k = n (the grid's concurrency).

    Returns {"k": [1..n], "prefill" / "decode" / "load": [t_k / t_n], "prefill_s",
    "decode_step_s", "cold_load_s": [t_k]} (medians over the instances and repeats)."""
    pre_s, dec_s, cold_s = [], [], []
    for k in range(1, n + 1):
        results: list = [None] * k

        def work(j: int, results=results) -> None:
            pts = _measure_shape(
                host, spec, (PROBE_LEN,), (PROBE_BATCH,), repeats, seed=j, loads=False
            )[1]
            dm, link = DeviceModel(host, spec), Link(spec)
            cold = []
            for _ in range(repeats + 1):
                cold.append(dm.load(link, cold=True))
                dm.evict()
            results[j] = (*pts[0], statistics.median(cold[1:]))

        threads = [threading.Thread(target=work, args=(j,)) for j in range(k)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pre_s.append(statistics.median(r[2] for r in results))
        dec_s.append(statistics.median(r[3] for r in results))
        cold_s.append(statistics.median(r[4] for r in results))
    return {
        "k": list(range(1, n + 1)),
        "prefill": [p / pre_s[-1] for p in pre_s],
        "decode": [d / dec_s[-1] for d in dec_s],
        "load": [c / cold_s[-1] for c in cold_s],
        "prefill_s": pre_s,
        "decode_step_s": dec_s,
        "cold_load_s": cold_s,
    }


def _measure_shape(
    host: HostModel, spec: DeviceSpec, lens, batches, repeats: int, seed: int, loads: bool = True
):
    """(median switch seconds, [(L, B, prefill s, decode step s)], median cold switch
    seconds, [(bytes, seconds)] of KV copies, decode warm-up seconds after a scale-up) on
    one instance (`loads=False`: no switch or warm-up timing, those are 0)."""
    import torch

    from hpn.serve.paged import kv_pool
    from hpn.serve.runner import DecodeBatch, Seq, prefill

    torch.set_num_threads(spec.threads)
    dev = spec.torch_device
    rng = np.random.default_rng(seed)
    dm = DeviceModel(host, spec)
    link = Link(spec)
    took, cold = [0.0, 0.0], [0.0, 0.0]
    if loads:
        took, cold = [], []
        for _ in range(repeats + 1):
            dm.evict()
            cold.append(dm.load(link, cold=True))
            dm.evict()
            took.append(dm.load(link))
    else:
        dm.load(link)
    pts = []
    kv_pts: list[tuple[int, float]] = []  # (bytes, seconds) of one request's KV copy
    for L in lens:
        for B in batches:
            if L + DECODE_STEPS + 1 > host.info.max_len:
                continue
            pre, steps = [], []
            blocks = blocks_for(L + DECODE_STEPS + 1)
            for rep in range(repeats + 1):
                seqs = [
                    Seq(i, host.info.name, rng.integers(10, host.info.vocab, L).tolist(), 10**6)
                    for i in range(B)
                ]
                kv = kv_pool(dm.module.config, B * blocks, dev, spec.torch_dtype)
                _sync(spec)
                t0 = time.perf_counter()
                for s, tok in zip(seqs, prefill(dm.module, seqs, kv), strict=True):
                    s.take(*tok)
                _sync(spec)
                pre.append(time.perf_counter() - t0)
                db = DecodeBatch(dm.module, seqs, kv)
                for _ in range(DECODE_STEPS):
                    t0 = time.perf_counter()
                    for s, tok in zip(db.seqs, db.step(), strict=True):
                        s.take(*tok)
                    _sync(spec)
                    steps.append(time.perf_counter() - t0)
                if rep and B == batches[0]:
                    kv_pts += _kv_copies(kv, seqs[0], spec)
            pts.append((L, B, statistics.median(pre[1:]), statistics.median(steps[DECODE_STEPS:])))
    warm = _warmup(dm, host, spec, rng, repeats) if loads else 0.0
    dm.evict()
    return statistics.median(took[1:]), pts, statistics.median(cold[1:]), kv_pts, warm


def _kv_copies(kv, seq, spec: DeviceSpec) -> list[tuple[int, float]]:
    """One request's KV blocks copied out to host memory and back over the instance's
    link, as the engine's `move_kv` does (`paged.swap`: block by block): (bytes, seconds)
    of each direction."""
    import torch

    data = kv.store.data
    rows = kv.tables[seq.rid][: blocks_for(seq.kv_tokens, kv.block_tokens)]
    host = torch.empty(len(rows), data.shape[1], dtype=data.dtype, pin_memory=spec.kind == "cuda")
    nbytes = host.numel() * host.element_size()
    out = Link(spec).copy([(host[i], data[b]) for i, b in enumerate(rows)])
    back = Link(spec).copy([(data[b], host[i]) for i, b in enumerate(rows)])
    return [(nbytes, out), (nbytes, back)]


def _warmup(dm: DeviceModel, host: HostModel, spec: DeviceSpec, rng, repeats: int) -> float:
    """Extra seconds of a decode's first `WARM_STEPS` steps right after a scale-up (the
    weights freshly copied in; a decode instance's first forward of the model, its KV
    prefilled elsewhere) over warm steps of the same decode (median over repeats: the
    sum of a few steps' differences is noisy when other processes run)."""
    from hpn.serve.paged import kv_pool
    from hpn.serve.runner import DecodeBatch, Seq, prefill

    L = PROBE_LEN
    extra = []
    for _ in range(2 * repeats + 1):
        seqs = [Seq(0, host.info.name, rng.integers(10, host.info.vocab, L).tolist(), 10**6)]
        kv = kv_pool(
            dm.module.config,
            blocks_for(L + 2 * DECODE_STEPS + 1),
            spec.torch_device,
            spec.torch_dtype,
        )
        for s, tok in zip(seqs, prefill(dm.module, seqs, kv), strict=True):
            s.take(*tok)
        dm.evict()
        dm.load(Link(dataclasses.replace(spec, link_bps=None)))  # the scale-up
        db = DecodeBatch(dm.module, seqs, kv)
        steps = []
        for _ in range(2 * DECODE_STEPS):
            t0 = time.perf_counter()
            for s, tok in zip(db.seqs, db.step(), strict=True):
                s.take(*tok)
            _sync(spec)
            steps.append(time.perf_counter() - t0)
        warm = statistics.median(steps[DECODE_STEPS:])
        extra.append(max(0.0, sum(steps[:WARM_STEPS]) - WARM_STEPS * warm))
    return statistics.median(extra[1:])


def fit_kv(points: list[tuple[int, float]]) -> dict | None:
    """Seconds of one KV copy as base + bytes x per_byte (least squares over `points`,
    both terms >= 0); None without two sizes."""
    if len({b for b, _ in points}) < 2:
        return None
    from scipy.optimize import nnls

    A = np.array([[1.0, float(b)] for b, _ in points])
    (base, per_byte), _ = nnls(A, np.array([t for _, t in points]))
    return {"base_s": float(base), "s_per_byte": float(per_byte), "points": len(points)}


def _sync(spec: DeviceSpec) -> None:
    if spec.kind == "cuda":
        import torch

        torch.cuda.synchronize()


def fit_rows(rows, spec: DeviceSpec) -> dict[str, LatencyFit]:
    """Fit (shape, L, B, prefill s, step s) rows with `calibration.fit_profiles`."""
    from hpn.pool.calibration import fit_profiles

    gpu = f"{spec.kind}-{spec.dtype}"
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "profile.csv"
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(
                ["model", "gpu", "input_len", "batch_size", "prefill_ms", "decode_step_ms", "clean"]
            )
            for key, L, B, p, s in rows:
                w.writerow([key, gpu, L, B, p * 1e3, s * 1e3, 1])
        fitted = fit_profiles(path)
    return {k.rsplit("/", 1)[0]: v for k, v in fitted.items()}


def save(profile: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(profile, indent=1) + "\n")


def load(path: str | Path) -> dict:
    p = Path(path)
    if not p.is_file():
        raise InputError("profile", f"{path}: no such file")
    try:
        doc = json.loads(p.read_text())
        doc["fits"], doc["switch_s"], doc["device"]  # noqa: B018
    except (ValueError, KeyError) as e:
        raise InputError("profile", f"{path}: not a profile ({e})") from None
    return doc


def predictor(
    profile: dict, kv_bytes_per_token: dict[str, float], cold: bool = False, startup: float = 0.0
):
    """The policies' estimates (`pool.Predictor`) from a fitted profile: the engine's and
    the simulator's prediction of it use this same one. `cold`: scale-ups start the model
    afresh (`cold_switch_s`), lasting at least `startup` seconds before the copy."""
    from hpn.pool.predictor import Predictor

    names = sorted(kv_bytes_per_token)
    missing = [m for m in names if m not in profile["fits"] or m not in profile["switch_s"]]
    if missing:
        raise InputError("profile", f"no fit for {', '.join(missing)}; run hpn serve profile")
    dev = profile["device"]
    link = dev.get("link_bps") or _measured_bps(profile)
    kvb = {m: float(kv_bytes_per_token[m]) for m in names}
    return Predictor(
        prefill={m: tuple(profile["fits"][m]["prefill"]) for m in names},
        decode={m: tuple(profile["fits"][m]["decode"]) for m in names},
        switch_s={m: switch_seconds(profile, m, cold, startup) for m in names},
        kv_s_per_token={m: kvb[m] / link for m in names},
        weights={m: float(profile["weights"][m]) for m in names},
        kv_bytes_per_token=kvb,
        layers={m: int(profile.get("layers", {}).get(m, 0)) for m in names},
        memory_per_gpu=float(dev["memory_bytes"]),
        gpu_memory=float(dev["memory_bytes"]),
    )


def switch_seconds(
    profile: dict, model: str, cold: bool = False, startup: float = 0.0, build_factor=1.0
) -> float:
    """Measured scale-up seconds of `model` (cold: with the model built afresh, its build
    x `build_factor` (contention), and the whole start-up at least `startup` seconds
    before the weights' copy, as `DeviceModel.load` waits)."""
    if cold:
        if model not in profile.get("cold_switch_s", {}):
            raise InputError("profile", "no cold_switch_s: profile again (hpn serve profile)")
        t = float(profile["cold_switch_s"][model]) * build_factor
        if startup > 0:
            return max(t, startup + float(profile["switch_s"][model]))
        return t
    return float(profile["switch_s"][model])


def _measured_bps(profile: dict) -> float:
    w = profile["weights"]
    rates = [w[m] / s for m, s in profile["switch_s"].items() if m in w and s > 0]
    return statistics.median(rates) if rates else 1e9


def profile_models(
    models: str,
    out: str | Path,
    device: str | None = None,
    memory: int | None = None,
    link_bps: float | None = None,
    threads: int | None = None,
    concurrent: int = 1,
    lens=LENS,
    batches=BATCHES,
) -> dict:
    """The service behind ``hpn serve profile``: measure, fit, write `out` (JSON)."""
    from hpn.serve.device import default_spec
    from hpn.serve.hosts import load_hosts

    spec = default_spec(device, concurrent, memory_bytes=memory, link_bps=link_bps, threads=threads)
    hosts = load_hosts(models, spec)
    prof = measure(hosts, spec, lens, batches, concurrent=concurrent)
    save(prof, out)
    return prof
