"""Paged KV: block tables by hand; an engine whose blocks run out admits, preempts
(recompute) and completes every request with the tokens of an unconstrained run; the pool
is the memory the allocator hands out; tokens do not depend on the block size; a swap moves
a request's blocks to host memory and back into other blocks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.serve.kv import BLOCK_TOKENS, KVManager, blocks_for
from tests.serve.conftest import NEEDS, flat_profile


def test_allocate_slots_is_all_or_nothing_and_free_returns_every_block():
    kvm = KVManager(5)
    assert kvm.allocate_slots(1, 33)  # 3 blocks
    assert kvm.tables[1] == [0, 1, 2] and kvm.num_free() == 2
    assert kvm.allocate_slots(1, 48)  # still 3 blocks
    assert not kvm.allocate_slots(2, 3 * BLOCK_TOKENS)  # 3 > 2 free: nothing taken
    assert 2 not in kvm.tables and kvm.num_free() == 2
    assert kvm.allocate_slots(1, 49) and kvm.num_free() == 1  # a fourth block
    assert kvm.usage() == pytest.approx(0.8)
    assert kvm.free(1) == 4 and kvm.num_free() == 5 and kvm.usage() == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 200), st.booleans()), max_size=60))
def test_blocks_are_conserved_and_never_shared(ops):
    kvm = KVManager(20)
    want: dict[int, int] = {}
    for rid, tokens, release in ops:
        if release:
            kvm.free(rid)
            want.pop(rid, None)
        elif kvm.allocate_slots(rid, tokens):
            want[rid] = max(want.get(rid, 0), blocks_for(tokens))
        held = [b for t in kvm.tables.values() for b in t]
        assert len(held) == len(set(held)) == sum(want.values())
        assert kvm.num_free() + len(held) == 20


torch = pytest.importorskip("torch", reason=NEEDS)
pytest.importorskip("transformers", reason=NEEDS)

from hpn.pool.policies.base import Slo  # noqa: E402
from hpn.pool.requests import Request  # noqa: E402
from hpn.serve.engine import Engine, cluster_for  # noqa: E402

OUT = 40


def _run(hosts, spec, policy, blocks, names):
    reqs = [
        Request(i, names[i % len(names)], 0.002 * i, 20 + 7 * i, OUT, 60.0, 5.0) for i in range(8)
    ]
    eng = Engine(
        hosts, spec, policy, cluster_for(policy, 1, 1, 1), profile=flat_profile(hosts),
        slo=Slo(60.0, 5.0), kv_blocks=blocks,
    )  # fmt: skip
    try:
        eng.run(reqs, until=300)
    finally:
        eng.stop()
    return eng, reqs


@pytest.mark.parametrize("policy", ["aegaeon", "dedicated"])
def test_blocks_running_out_preempt_and_every_request_completes_unchanged(hosts, spec, policy):
    names = sorted(hosts)[:1]
    free, _ = _run(hosts, spec, policy, None, names)
    # 8 requests want 8 x 4-7 blocks at their end; 12 blocks hold the longest one alone
    tight, reqs = _run(hosts, spec, policy, 12, names)
    assert all(r.done_t >= 0 and r.generated == OUT for r in reqs)
    assert free.backend.preemptions == 0
    assert tight.backend.preemptions > 0
    for r in reqs:
        assert tight.backend.seqs[r.rid].out == free.backend.seqs[r.rid].out, r.rid
    assert all(k.used_blocks() == 0 for k in tight.backend.kv.values())
    assert tight.max_len(names[0]) == 12 * BLOCK_TOKENS


def test_the_pool_is_the_memory_the_allocator_hands_out(hosts, spec):
    from hpn.pool.backend import Cluster
    from hpn.pool.metrics import Recorder
    from hpn.serve.backend import EngineBackend

    be = EngineBackend(Cluster(2, 0, 0, 1), Recorder(), hosts, spec, blocks=40)
    try:
        per_tok = max(h.info.kv_bytes_per_token(spec.elem_bytes) for h in hosts.values())
        for kvm in be.kv.values():
            assert kvm.store.nbytes == 40 * BLOCK_TOKENS * per_tok == 40 * be.block_bytes
            assert kvm.store.data.shape[0] == kvm.num_blocks == 40
    finally:
        be.close()


def _decode(host, dm, kv, prompts, n):
    from hpn.serve.runner import DecodeBatch, Seq, prefill

    seqs = [Seq(i, host.info.name, p, n) for i, p in enumerate(prompts)]
    for s, t in zip(seqs, prefill(dm.module, seqs, kv), strict=True):
        s.take(*t)
    b = DecodeBatch(dm.module, seqs, kv)
    while b.seqs:
        for s, t in zip(b.seqs, b.step(), strict=True):
            s.take(*t)
        b.drop([i for i, s in enumerate(b.seqs) if not s.finished])
    return seqs


@pytest.fixture(scope="module")
def qwen(hosts, spec):
    from hpn.serve.device import Link
    from hpn.serve.weights import DeviceModel

    host = hosts[sorted(hosts)[1]]
    dm = DeviceModel(host, spec)
    dm.load(Link(spec))
    return host, dm


PROMPTS = [list(range(5, 40)), [7, 8, 9], list(range(100, 117)), [300] * 50]


def test_tokens_do_not_depend_on_the_block_size(qwen, spec):
    from hpn.serve.paged import kv_pool

    host, dm = qwen
    outs = []
    for bt in (1, 3, 16, 64):
        kv = kv_pool(dm.module.config, 4 * (80 // bt + 1), spec.torch_device, torch.float32, bt)
        seqs = _decode(host, dm, kv, PROMPTS, 12)
        # each request holds exactly the blocks of the tokens it fed, no more
        held = [len(kv.tables[s.rid]) for s in seqs]
        assert held == [blocks_for(len(p) + 11, bt) for p in PROMPTS]
        outs.append([s.out for s in seqs])
    assert all(o == outs[0] for o in outs)
    from tests.serve.conftest import reference

    assert outs[0][3] == reference(host, PROMPTS[3], 12)


def test_a_swap_moves_blocks_to_host_and_into_other_blocks(qwen, spec):
    """Swap out after a few steps, fill the freed blocks with another request's KV, swap
    in to other block ids: the tokens are the unswapped ones."""
    from types import SimpleNamespace

    from hpn.serve.device import Link
    from hpn.serve.kv import blocks_for
    from hpn.serve.paged import kv_pool, swap
    from hpn.serve.runner import DecodeBatch, Seq, prefill

    host, dm = qwen
    want = [
        s.out
        for s in _decode(
            host,
            dm,
            kv_pool(dm.module.config, 40, spec.torch_device, torch.float32, 4),
            PROMPTS[:2],
            10,
        )
    ]
    kv = kv_pool(dm.module.config, 16, spec.torch_device, torch.float32, 4)
    be = SimpleNamespace(
        kv={0: kv}, hosts={host.info.name: host}, spec=spec, post=lambda *a: None
    )  # fmt: skip
    seqs = [Seq(i, host.info.name, p, 10) for i, p in enumerate(PROMPTS[:2])]
    for s, t in zip(seqs, prefill(dm.module, seqs, kv), strict=True):
        s.take(*t)
        s.kv_on = 0
    b = DecodeBatch(dm.module, seqs, kv)
    for _ in range(3):
        for s, t in zip(b.seqs, b.step(), strict=True):
            s.take(*t)
    before = {s.rid: list(kv.tables[s.rid]) for s in seqs}
    link = Link(spec)
    swap(be, seqs, None, link)
    assert kv.num_free() == 16 and all(s.kv_on is None for s in seqs)
    assert [s.kv.shape[0] for s in seqs] == [blocks_for(s.kv_tokens, 4) for s in seqs]
    # a stranger's prefill overwrites the freed blocks
    other = Seq(9, host.info.name, list(range(200, 230)), 1)
    prefill(dm.module, [other], kv)
    kv.free(other.rid)
    swap(be, seqs, SimpleNamespace(iid=0), link)
    assert all(s.kv is None and s.kv_on == 0 for s in seqs)
    assert any(kv.tables[s.rid] != before[s.rid] for s in seqs)
    b.assemble(seqs)
    while b.seqs:
        for s, t in zip(b.seqs, b.step(), strict=True):
            s.take(*t)
        b.drop([i for i, s in enumerate(b.seqs) if not s.finished])
    assert [s.out for s in seqs] == want
