"""Engine speed (issue 15 §5), each figure a ratio against a reference run in this process.

1. Model switch: optimised (weights copied from host memory into the device pool) vs
   unoptimised (the model built from its config, i.e. initialised, and its weights read
   from disk), as Aegaeon compares (-97 %): the median of `--repeats` alternating runs of
   each; and a pre-loaded model made resident through `EngineBackend.load` (the pre-load
   finished first), timed from the call to its completion on the scheduler thread.
2. Decode throughput of the engine's batched decode vs transformers' `generate()` on the
   same model, prompts and batch.
3. Scheduler overhead per decode step at batch 8 on the full `EngineBackend` path: time
   outside the model's forward / step time (target <= 10 %).

Usage: python bench/bench_serve.py [--size 20m] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def _median_time(fn, n: int = 3) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def _alternating(fns, n: int) -> list[float]:
    """Median seconds of each of `fns`, run in turn `n` times (drift hits them alike)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(n):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def preloaded_switch(hosts, spec, names, n: int) -> float:
    """Median seconds of `EngineBackend.load` of a model pre-loaded behind the resident
    one (its copy finished before the call)."""
    from hpn.pool.backend import Cluster
    from hpn.pool.metrics import Recorder
    from hpn.serve.backend import EngineBackend

    be = EngineBackend(Cluster(1, 0, 0, 1), Recorder(), hosts, spec)
    inst = be.instances[0]
    be.place(inst, names[0])
    out = []
    try:
        for k in range(n):
            nxt = names[(k + 1) % 2]
            if not be.prefetch(inst, nxt):
                raise SystemExit("the budget leaves no room to pre-load")
            w = be.workers[inst.iid]
            while nxt not in w.ready:  # the pre-load copy lands on the h2d lane
                time.sleep(0.001)
            t0 = time.perf_counter()
            be.load(inst, nxt, lambda d: be.stop())
            be._stop.clear()
            be.loop()
            out.append(time.perf_counter() - t0)
    finally:
        be.close()
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="20m")
    ap.add_argument("--device", default=None)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=7, help="alternating switch runs")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hpn-bench-serve-") as tmp:
        return run(a, tmp)


def run(a, tmp: str) -> int:

    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM

    from hpn.pool.backend import Cluster
    from hpn.pool.metrics import Recorder
    from hpn.pool.requests import Request
    from hpn.serve.backend import EngineBackend
    from hpn.serve.device import default_spec
    from hpn.serve.kv import blocks_for
    from hpn.serve.paged import kv_pool
    from hpn.serve.runner import DecodeBatch, Seq, prefill
    from hpn.serve.store import make_models
    from hpn.serve.weights import DeviceModel, HostModel

    torch.set_num_threads(1)
    info, info2 = make_models(tmp, 2, [a.size], seed=0)
    spec = default_spec(a.device, 1, link_bps=None, memory_bytes=4 << 30)
    host = HostModel(info, spec)
    dev = spec.torch_device
    print(f"model {info.name}: {host.nbytes / 1e6:.0f} MB ({spec.dtype}) on {spec.kind}")

    # 1. switch ------------------------------------------------------------------------------
    from hpn.serve.device import Link

    dm = DeviceModel(host, spec)
    link = Link(spec)
    dm.load(link)  # builds the skeleton once (start-up, not a switch)

    def optimised():
        dm.evict()
        dm.load(link)

    def unoptimised():
        cfg = AutoConfig.from_pretrained(info.path)
        m = AutoModelForCausalLM.from_config(cfg, dtype=spec.torch_dtype)
        sd = load_file(str(info.path / "model.safetensors"))
        m.load_state_dict(sd, strict=False)
        m.tie_weights()
        m.to(dev)

    t_opt, t_unopt = _alternating([optimised, unoptimised], a.repeats)
    hosts = {info.name: host, info2.name: HostModel(info2, spec)}
    t_pre = preloaded_switch(hosts, spec, [info.name, info2.name], a.repeats)
    print(
        f"switch (median of {a.repeats} alternating runs): optimised {t_opt * 1e3:.1f} ms, "
        f"unoptimised {t_unopt * 1e3:.1f} ms ({100 * (t_opt / t_unopt - 1):+.1f} %); "
        f"pre-loaded {t_pre * 1e3:.2f} ms ({100 * (t_pre / t_unopt - 1):+.1f} %)"
    )

    # 2. decode throughput -------------------------------------------------------------------
    prompts = [[10 + i, 20 + i, 30, 40, 50 + i, 60, 70][: 3 + i % 5] for i in range(a.batch)]
    n = a.tokens
    ref = AutoModelForCausalLM.from_pretrained(info.path, dtype=spec.torch_dtype).to(dev).eval()
    width = max(len(p) for p in prompts)
    ids = torch.zeros(a.batch, width, dtype=torch.long)
    mask = torch.zeros(a.batch, width, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    ids, mask = ids.to(dev), mask.to(dev)

    def generate():
        with torch.inference_mode():
            ref.generate(
                ids,
                attention_mask=mask,
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=False,
                pad_token_id=0,
                eos_token_id=None,
            )

    blocks = a.batch * blocks_for(width + n)

    def engine():
        kv = kv_pool(dm.module.config, blocks, dev, spec.torch_dtype)
        seqs = [Seq(i, info.name, p, n) for i, p in enumerate(prompts)]
        for s, t in zip(seqs, prefill(dm.module, seqs, kv), strict=True):
            s.take(*t)
        b = DecodeBatch(dm.module, seqs, kv)
        while b.seqs:
            for s, t in zip(b.seqs, b.step(), strict=True):
                s.take(*t)
            b.drop([i for i, s in enumerate(b.seqs) if not s.finished])

    generate()
    engine()
    t_gen = _median_time(generate)
    t_eng = _median_time(engine)
    tok = a.batch * n
    print(
        f"decode throughput (batch {a.batch}, {n} tokens each): engine {tok / t_eng:.0f} tok/s, "
        f"generate() {tok / t_gen:.0f} tok/s, ratio {t_gen / t_eng:.2f}"
    )

    # 3. scheduler overhead at batch 8 on the backend path --------------------------------------
    be = EngineBackend(Cluster(1, 0, 0, 1), Recorder(), {info.name: host}, spec)
    inst = be.instances[0]
    be.place(inst, info.name)
    reqs = [Request(i, info.name, 0.0, len(p), n, 10.0, 0.1) for i, p in enumerate(prompts)]
    for r, p in zip(reqs, prompts, strict=True):
        be.register(r, Seq(r.rid, info.name, p, n))

    def go(_):
        be.prefill(inst, reqs, lambda d: be.decode(inst, [reqs], None, lambda d2: be.stop()))

    be.call_at(0.0, go, None)
    be.loop()
    over_step = 1 - be.forward_s / be.step_s
    over_op = 1 - be.forward_s / be.decode_s
    print(
        f"scheduler overhead at batch {a.batch}: {100 * over_step:.1f} % of step time outside "
        f"the forward ({be.steps} steps, {1e3 * be.step_s / be.steps:.1f} ms/step); "
        f"{100 * over_op:.1f} % of the whole decode operation"
    )
    be.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
