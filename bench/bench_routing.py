"""Routing speed: hashing 5-tuples, and HPN source-port selection over a full pod.

Targets (issue 4): >= 10 M 5-tuples hashed per second; source-port selection for every GPU pair
of a ring over the 15,360-GPU pod with 8 connections each in <= 2 s. References in the same
run: zlib.crc32 called once per tuple (the obvious Python loop), and plain hash-ECMP routing
of the same connections (what selection costs on top of routing).

Issue 17: the compiled walk and candidate search (numba) against the numpy code in the same
run, CPU seconds (the machine may be shared), with a check that the paths are identical;
``--scale`` adds the permutation over the 122,880 GPUs of 8 pods (minutes for numpy). Calls of
at least ``parallel.SPLIT_MIN`` flows also compare the threaded kernels (one thread per core)
with one thread, alternating, wall clock.

    .venv/bin/python bench/bench_routing.py [--scale]
"""

from __future__ import annotations

import argparse
import os
import time
import zlib

import numpy as np

from hpn.routing import make_router, parallel
from hpn.routing.hashing import TupleBytes, crc16_ccitt, crc32, pack_5tuples
from hpn.topology import NodeKind, build


def best(fn, repeat=3):
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def cpu(fn, repeat=1):
    """Best CPU time (user + sys of this process) of ``repeat`` calls, and the last result."""
    t, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        t = min(t, time.process_time() - t0)
    return t, out


def threads_vs_one(label, name, router, fabric, src, dst, keys, repeat=5) -> None:
    """The compiled call in threads (hpn.routing.parallel's default) against one thread,
    alternating, wall clock (medians): what the threads save on this machine now."""
    k = parallel.threads()
    if k < 2:
        print(f"{label}, {name}: one core, no threads to compare")
        return
    walls: dict[int, list[float]] = {1: [], k: []}
    out = {}
    for _ in range(repeat):
        for n in (1, k):
            os.environ[parallel.ENV] = str(n)
            t0 = time.perf_counter()
            out[n] = router.route(fabric, src, dst, keys)
            walls[n].append(time.perf_counter() - t0)
    os.environ.pop(parallel.ENV)
    one, many = (float(np.median(walls[n])) for n in (1, k))
    same = np.array_equal(out[1].links, out[k].links)
    print(
        f"{label}, {name}: {k} threads {many:.2f} s wall, one thread {one:.2f} s "
        f"-> {one / many:.2f}x (medians of {repeat}, alternating); paths identical: {same}"
    )


def compiled_vs_numpy(label, fabric, src, dst, keys, policies=("ecmp", "hpn")) -> None:
    for name in policies:
        fast, ref = make_router(name, seed=1), make_router(name, seed=1)
        ref.compiled = False
        fast.route(fabric, src[:100], dst[:100])  # load the compiled kernels (cached)
        t_fast, a = cpu(lambda f=fast: f.route(fabric, src, dst, keys), 2)
        t_ref, b = cpu(lambda r=ref: r.route(fabric, src, dst, keys))
        same = np.array_equal(a.offsets, b.offsets) and np.array_equal(a.links, b.links)
        print(
            f"{label}, {name}: compiled ({fast.kernel}) {t_fast:.2f} s CPU, numpy "
            f"{t_ref:.2f} s CPU -> {t_ref / t_fast:.1f}x; paths identical: {same}"
        )
        if len(src) >= parallel.SPLIT_MIN:
            threads_vs_one(label, name, fast, fabric, src, dst, keys)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", action="store_true", help="also the 8-pod permutation")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    n = 10_000_000
    src = rng.integers(0, 2**32, n, dtype=np.uint32)
    dst = rng.integers(0, 2**32, n, dtype=np.uint32)
    sport = rng.integers(49152, 65536, n).astype(np.uint32)
    tuples = TupleBytes(src, dst, sport, 4791)
    t32 = best(lambda: crc32(tuples), 2)
    t16 = best(lambda: crc16_ccitt(tuples), 2)
    m = 200_000
    rows = pack_5tuples(src[:m], dst[:m], sport[:m], 4791)
    t_ref = best(lambda: [zlib.crc32(r.tobytes()) for r in rows], 1) * n / m
    print(f"crc32 : {n / t32 / 1e6:6.1f} M tuples/s (target >= 10)")
    print(f"crc16 : {n / t16 / 1e6:6.1f} M tuples/s")
    print(
        f"reference: zlib.crc32 per tuple in Python {n / t_ref / 1e6:.2f} M/s "
        f"-> vectorized is {t_ref / t32:.0f}x faster"
    )

    pod = build("hpn")
    gpus = pod.nodes_of(NodeKind.GPU)
    gpus = gpus[~pod.nodes.backup[gpus]].reshape(-1, 8)
    ring_src = np.repeat(gpus.ravel(), 8)  # rail rings: GPU r of host h -> GPU r of host h+1
    ring_dst = np.repeat(np.roll(gpus, -1, axis=0).ravel(), 8)
    keys = np.tile(np.arange(8), len(gpus.ravel()))
    hpn, ecmp = make_router("hpn", seed=1), make_router("ecmp", seed=1)
    t_sel = best(lambda: hpn.select(pod, ring_src, ring_dst, keys), 2)
    t_ecmp = best(lambda: ecmp.route(pod, ring_src, ring_dst, keys), 2)
    print(
        f"HPN selection, ring over {gpus.size:,} GPUs x 8 connections "
        f"({len(ring_src):,} connections): {t_sel:.2f} s (target <= 2 s)"
    )
    print(
        f"reference: hash-ECMP routing of the same connections {t_ecmp:.2f} s "
        f"-> selection costs {t_sel / t_ecmp:.1f}x routing"
    )
    compiled_vs_numpy("pod ring x 8", pod, ring_src, ring_dst, keys)
    if a.scale:
        fabric = build("hpn", pods=8)
        ends = fabric.nodes_of(NodeKind.GPU)
        ends = ends[~fabric.nodes.backup[ends]]
        perm = np.random.default_rng(1).permutation(ends)
        keep = perm != ends
        compiled_vs_numpy("8-pod permutation", fabric, ends[keep], perm[keep], None)


if __name__ == "__main__":
    main()
