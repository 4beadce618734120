"""Paged KV: block tables by hand, and an engine whose blocks run out admits, preempts
(recompute) and completes every request with the tokens of an unconstrained run."""

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
