"""Paged KV (issue 25 part 3): memory per request vs block size, and what the gather costs.

1. Memory per request vs block size: requests of seeded lengths (prompt 20..`--max-prompt`,
   `--tokens` out) decoded in one batch on a real block pool per block size; the bytes of
   the blocks each request holds at its end vs its tokens' bytes (internal fragmentation:
   at most one block less a token per request), and the decode step time at that block
   size (a bigger block gathers more padding); the tokens must be identical at every size.
2. The gather: at batch b and context c, seconds of the block-table reads of one step
   (``index_select`` of K and V for every layer, as `hpn.serve.paged` does) vs the whole
   step, each the median of `--repeats` alternating runs in this process.
3. Decode throughput at batch 1, 8 and 32 (prompts 3..7 tokens, as `bench_serve.py`, or
   `--context` tokens): the
   paged runner vs `generate()` on the same model, and, with `--old-runner PATH` (the
   `runner.py` of an earlier tree, one KV tensor per request), vs that runner too: the
   median of `--repeats` alternating runs of each in this process, tokens compared.

Every time is CPU seconds of this process (`time.process_time`, torch on one thread): the
machine these figures come from is shared, and CPU time does not count other jobs' turns.

Usage: python bench/bench_kv.py [--size 20m] [--batch 8] [--tokens 32] [--old-runner PATH]
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
    ap.add_argument("--old-runner", default=None, help="runner.py with per-request KV tensors")
    ap.add_argument("--parts", default="1,2,3")
    ap.add_argument("--context", type=int, default=0, help="part 3's prompt length (0: 3..7)")
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
    (info,) = make_models(
        tmp, 1, [a.size], seed=0, max_len=max(a.max_prompt, a.context) + a.tokens + 64
    )
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

    parts = {int(x) for x in a.parts.split(",")}
    if 3 in parts:
        throughput(a, info, spec, dm)
    if 1 not in parts:
        return 0 if 2 not in parts else _part2(a, dm, spec)
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
            t0 = time.process_time()
            for s, t in zip(b.seqs, b.step(), strict=True):
                s.take(*t)
            steps.append(time.process_time() - t0)
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

    return 0 if 2 not in parts else _part2(a, dm, spec)


def _part2(a, dm, spec) -> int:
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


def throughput(a, info, spec, dm) -> None:
    """Part 3: decode tokens/s of the paged runner, `generate()` and an old runner."""
    import importlib.util
    import sys

    from transformers import AutoModelForCausalLM

    old = None
    if a.old_runner:
        sp = importlib.util.spec_from_file_location("hpn_old_runner", a.old_runner)
        old = importlib.util.module_from_spec(sp)
        sys.modules[sp.name] = old  # dataclasses look their module up
        sp.loader.exec_module(old)
    ref = AutoModelForCausalLM.from_pretrained(info.path, dtype=spec.torch_dtype).eval()
    head = "batch | paged tok/s | generate() tok/s | paged/generate"
    print(head + (" | old tok/s | old/generate | paged/old" if old else ""))
    for batch in (1, 8, 32):
        tok = batch * a.tokens
        t = _throughput_at(batch, a, info, spec, dm, ref, old)
        line = f"{batch:5d} | {tok / t[1]:11.0f} | {tok / t[0]:16.0f} | {t[0] / t[1]:14.2f}"
        if old is not None:
            line += f" | {tok / t[2]:9.0f} | {t[0] / t[2]:12.2f} | {t[2] / t[1]:9.2f}"
        print(line)


def _throughput_at(batch, a, info, spec, dm, ref, old) -> list[float]:
    """Median seconds of generate(), the paged runner and `old` at one batch size."""
    import torch

    from hpn.serve import runner
    from hpn.serve.kv import blocks_for
    from hpn.serve.paged import kv_pool

    n = a.tokens
    prompts = [[10 + i, 20 + i, 30, 40, 50 + i, 60, 70][: 3 + i % 5] for i in range(batch)]
    if a.context:  # long contexts: `--context` tokens less 0..7 per request
        prompts = [[10 + (7 * i + j) % 500 for j in range(a.context - i % 8)] for i in range(batch)]
    width = max(len(p) for p in prompts)
    ids = torch.zeros(batch, width, dtype=torch.long)
    mask = torch.zeros(batch, width, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    outs: dict[str, list] = {}

    def generate():
        with torch.inference_mode():
            ref.generate(ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                         do_sample=False, pad_token_id=0, eos_token_id=None)  # fmt: skip

    def loop(mod, name, kv):
        seqs = [mod.Seq(i, info.name, p, n) for i, p in enumerate(prompts)]
        for s, t in zip(seqs, mod.prefill(dm.module, seqs, kv), strict=True):
            s.take(*t)
        b = mod.DecodeBatch(dm.module, seqs, kv)
        while b.seqs:
            for s, t in zip(b.seqs, b.step(), strict=True):
                s.take(*t)
            b.drop([i for i, s in enumerate(b.seqs) if not s.finished])
        outs[name] = [s.out for s in seqs]

    blocks = batch * blocks_for(width + n)

    def paged():
        loop(runner, "paged", kv_pool(dm.module.config, blocks, "cpu", spec.torch_dtype))

    fns = [generate, paged]
    if old is not None:
        fns.append(lambda: loop(old, "old", torch.device("cpu")))
    for f in fns:  # warm-up
        f()
    if old is not None and outs["old"] != outs["paged"]:
        raise SystemExit(f"batch {batch}: the old runner's tokens differ")
    return _alternating(fns, a.repeats)


def _alternating(fns, n: int) -> list[float]:
    """Median seconds of each of `fns`, run in turn `n` times (drift hits them alike)."""
    import time

    times: list[list[float]] = [[] for _ in fns]
    for _ in range(n):
        for k, fn in enumerate(fns):
            t0 = time.process_time()
            fn()
            times[k].append(time.process_time() - t0)
    return [statistics.median(t) for t in times]


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
        t0 = time.process_time()
        cache, _ = decode_cache(kv, dm.module, rids, pos)
        for ly in cache.layers:
            ly.k.index_select(0, ly.plan.table.view(-1))
            ly.v.index_select(0, ly.plan.table.view(-1))
        tg.append(time.process_time() - t0)
        t0 = time.process_time()
        b.step()
        ts.append(time.process_time() - t0)
        for s in seqs:  # feed the same position again
            s.out = [12]
    return statistics.median(tg), statistics.median(ts)


if __name__ == "__main__":
    raise SystemExit(main())
