"""Paged KV (issue 25 part 3): memory per request vs block size, and what the gather costs.

1. Memory per request vs block size: requests of seeded lengths (prompt 20..`--max-prompt`,
   `--tokens` out) decoded in one batch on a real block pool per block size; the bytes of
   the blocks each request holds at its end vs its tokens' bytes (internal fragmentation:
   at most one block less a token per request), and the decode step time at that block
   size (a bigger block gathers more padding); the tokens must be identical at every size.
2. The gather: at batch b and context c, seconds of the block-table reads of one step
   (``index_select`` of K and V for every layer, as `hpn.serve.paged` does) vs the whole
   step, each the median of `--repeats` alternating runs in this process.

Usage: python bench/bench_kv.py [--size 20m] [--batch 8] [--tokens 32]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="20m")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--max-prompt", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hpn-bench-kv-") as tmp:
        return run(a, tmp)


def run(a, tmp: str) -> int:
    import numpy as np
    import torch

    from hpn.serve.device import Link, default_spec
    from hpn.serve.kv import blocks_for
    from hpn.serve.paged import kv_pool
    from hpn.serve.runner import DecodeBatch, Seq, prefill
    from hpn.serve.store import make_models
    from hpn.serve.weights import DeviceModel, HostModel

    torch.set_num_threads(1)
    (info,) = make_models(tmp, 1, [a.size], seed=0, max_len=a.max_prompt + a.tokens + 64)
    spec = default_spec("cpu", 1, link_bps=None, memory_bytes=4 << 30)
    host = HostModel(info, spec)
    dm = DeviceModel(host, spec)
    dm.load(Link(spec))
    per_tok = info.kv_bytes_per_token(spec.elem_bytes)
    rng = np.random.default_rng(0)
    lens = rng.integers(20, a.max_prompt + 1, a.batch).tolist()
    prompts = [rng.integers(10, info.vocab, n).tolist() for n in lens]
    print(
        f"model {info.name}: {info.layers} layers, {info.kv_heads} KV heads x {info.head_dim}; "
        f"{per_tok} B of KV per token ({spec.dtype}); batch {a.batch}, prompts {min(lens)}.."
        f"{max(lens)}, {a.tokens} tokens out"
    )

    # 1. memory per request vs block size ---------------------------------------------------
    print("block | bytes held / request | tokens' bytes | overhead | store MiB | step ms")
    ref = None
    for bt in (1, 4, 16, 32, 64, 128):
        need = sum(blocks_for(n + a.tokens, bt) for n in lens)
        kv = kv_pool(dm.module.config, need, spec.torch_device, spec.torch_dtype, bt)
        seqs = [Seq(i, info.name, p, a.tokens) for i, p in enumerate(prompts)]
        for s, t in zip(seqs, prefill(dm.module, seqs, kv), strict=True):
            s.take(*t)
        b = DecodeBatch(dm.module, seqs, kv)
        steps = []
        while not seqs[0].finished:
            t0 = time.perf_counter()
            for s, t in zip(b.seqs, b.step(), strict=True):
                s.take(*t)
            steps.append(time.perf_counter() - t0)
        held = [len(kv.tables[s.rid]) * bt * per_tok for s in seqs]
        exact = [s.kv_tokens * per_tok for s in seqs]
        outs = [s.out for s in seqs]
        if ref is None:
            ref = outs
        elif outs != ref:
            raise SystemExit(f"block size {bt}: tokens differ from block size 1")
        mh, me = statistics.mean(held), statistics.mean(exact)
        print(
            f"{bt:5d} | {mh / 1024:15.1f} KiB | {me / 1024:9.1f} KiB | "
            f"{100 * (mh / me - 1):6.2f} % | {kv.store.nbytes / 2**20:9.2f} | "
            f"{1e3 * statistics.median(steps):7.2f}"
        )

    # 2. the gather's share of a decode step ---------------------------------------------------
    print("batch | context | gather ms | step ms | gather share")
    bt = 16
    for batch in (1, 8, 32):
        for ctx in (64, 512):
            g, st = _gather_share(dm, batch, ctx, bt, spec.torch_dtype, a.repeats)
            print(
                f"{batch:5d} | {ctx:7d} | {1e3 * g:9.3f} | {1e3 * st:7.2f} | {100 * g / st:6.1f} %"
            )
    return 0


def _gather_share(dm, batch: int, ctx: int, bt: int, dtype, repeats: int):
    """(median gather s, median step s) of a decode step at `batch` x `ctx` tokens."""
    import time

    from hpn.serve.kv import blocks_for
    from hpn.serve.paged import decode_cache, kv_pool
    from hpn.serve.runner import DecodeBatch, Seq

    kv = kv_pool(dm.module.config, batch * blocks_for(ctx + 2, bt), "cpu", dtype, bt)
    seqs = [Seq(i, "m", [11] * ctx, 10**6) for i in range(batch)]
    for s in seqs:
        kv.allocate_slots(s.rid, ctx + 1)  # K/V values do not matter for timing
        s.out = [12]
    b = DecodeBatch(dm.module, seqs, kv)
    rids, pos = [s.rid for s in seqs], [s.kv_tokens for s in seqs]
    tg, ts = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cache, _ = decode_cache(kv, dm.module, rids, pos)
        for ly in cache.layers:
            ly.k.index_select(0, ly.plan.table.view(-1))
            ly.v.index_select(0, ly.plan.table.view(-1))
        tg.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b.step()
        ts.append(time.perf_counter() - t0)
        for s in seqs:  # feed the same position again
            s.out = [12]
    return statistics.median(tg), statistics.median(ts)


if __name__ == "__main__":
    raise SystemExit(main())
