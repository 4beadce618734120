"""The engine's batched prefill/decode gives transformers' own greedy tokens."""

from __future__ import annotations

import pytest

from tests.serve.conftest import NEEDS, reference

torch = pytest.importorskip("torch", reason=NEEDS)
pytest.importorskip("transformers", reason=NEEDS)

from hpn.serve.device import Link  # noqa: E402
from hpn.serve.paged import kv_pool  # noqa: E402
from hpn.serve.runner import DecodeBatch, Seq, prefill  # noqa: E402
from hpn.serve.sampling import SamplingParams  # noqa: E402
from hpn.serve.weights import DeviceModel  # noqa: E402

PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [20, 21, 22], list(range(30, 70)), [100]]
N = 10


@pytest.fixture(scope="module", params=[0, 1], ids=["llama", "qwen2"])
def dev_model(request, hosts, spec):
    host = hosts[sorted(hosts)[request.param]]
    dm = DeviceModel(host, spec)
    dm.load(Link(spec))
    return host, dm


@pytest.fixture
def kv(dev_model, spec):
    """A fresh block pool for the model (blocks of 4 tokens: prompts span several)."""
    return kv_pool(dev_model[1].module.config, 64, spec.torch_device, torch.float32, 4)


def test_batched_prefill_and_decode_match_generate(dev_model, spec, kv):
    host, dm = dev_model
    seqs = [Seq(i, host.info.name, p, N) for i, p in enumerate(PROMPTS)]
    for s, t in zip(seqs, prefill(dm.module, seqs, kv), strict=True):
        s.take(*t)
    b = DecodeBatch(dm.module, seqs, kv)
    while b.seqs:
        for s, t in zip(b.seqs, b.step(), strict=True):
            s.take(*t)
        b.drop([i for i, s in enumerate(b.seqs) if not s.finished])
    for s, p in zip(seqs, PROMPTS, strict=True):
        assert s.out == reference(host, p, N)
    assert len({tuple(s.out) for s in seqs}) == len(seqs)  # outputs differ: a real check


def test_join_leave_and_split_mid_stream_leave_tokens_unchanged(dev_model, spec, kv):
    host, dm = dev_model
    dev = spec.torch_device
    seqs = [Seq(i, host.info.name, p, N) for i, p in enumerate(PROMPTS)]
    for s, t in zip(seqs[:2], prefill(dm.module, seqs[:2], kv), strict=True):
        s.take(*t)
    b = DecodeBatch(dm.module, seqs[:2], kv)
    for _ in range(3):
        for s, t in zip(b.seqs, b.step(), strict=True):
            s.take(*t)
    # a KV round trip through host memory into other blocks, then two newcomers join
    for s in b.split():
        rows = kv.store.data[kv.tables[s.rid]].to("cpu")
        kv.allocate_slots(99, 3 * 4)  # a stranger takes the next free blocks
        old = kv.tables[s.rid]
        kv.free(s.rid)
        assert kv.allocate_slots(s.rid, s.kv_tokens + 1)
        assert set(kv.tables[s.rid]).isdisjoint(old)
        kv.store.data[kv.tables[s.rid]] = rows.to(dev)
        kv.free(99)
    for s, t in zip(seqs[2:], prefill(dm.module, seqs[2:], kv), strict=True):
        s.take(*t)
    b.assemble(seqs)
    while b.seqs:
        for s, t in zip(b.seqs, b.step(), strict=True):
            s.take(*t)
        b.drop([i for i, s in enumerate(b.seqs) if not s.finished])
    for s, p in zip(seqs, PROMPTS, strict=True):
        assert s.out == reference(host, p, N)


def test_seeded_sampling_repeats_and_differs_by_seed(dev_model, spec, kv):
    host, dm = dev_model

    def run(seed):
        s = Seq(
            0, host.info.name, PROMPTS[0], N, sampling=SamplingParams(temperature=1.0, seed=seed)
        )
        s.take(*prefill(dm.module, [s], kv)[0])
        b = DecodeBatch(dm.module, [s], kv)
        while not s.finished:
            s.take(*b.step()[0])
        kv.free(0)
        return s.out

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_eviction_frees_and_reload_restores(dev_model, spec, kv):
    host, dm = dev_model
    s = Seq(0, host.info.name, PROMPTS[1], 1)
    first = prefill(dm.module, [s], kv)
    dm.evict()
    assert dm.module is None
    took = dm.load(Link(spec))
    assert took >= host.nbytes / spec.link_bps * 0.9  # throttled to the link
    s2 = Seq(0, host.info.name, PROMPTS[1], 1)
    kv.free(0)
    assert prefill(dm.module, [s2], kv) == first
