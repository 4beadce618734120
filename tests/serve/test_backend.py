"""Every pool policy drives real models through the backend contract; a request's tokens
do not depend on switches, KV swaps or who shares its batch."""

from __future__ import annotations

import pytest

from tests.serve.conftest import NEEDS, flat_profile, reference

pytest.importorskip("torch", reason=NEEDS)
pytest.importorskip("transformers", reason=NEEDS)

from hpn.pool.policies.base import Slo  # noqa: E402
from hpn.pool.requests import Request  # noqa: E402
from hpn.serve.engine import Engine, cluster_for  # noqa: E402

OUT = 8


def _reqs(names, n, gap):
    return [Request(i, names[i % len(names)], gap * i, 5 + 3 * i, OUT, 30.0, 0.5) for i in range(n)]


def _serve(hosts, spec, policy, reqs, **cl):
    eng = Engine(
        hosts,
        spec,
        policy,
        cluster_for(policy, cl.get("prefill", 1), cl.get("decode", 1), cl.get("workers", 2)),
        profile=flat_profile(hosts),
        slo=Slo(30.0, 0.5),
        rates={m: 1.0 for m in hosts},
    )
    try:
        eng.run(reqs, until=120)
    finally:
        eng.stop()
    return eng


@pytest.fixture(scope="module")
def expected(hosts):
    cache = {}

    def get(eng, r):
        seq = eng.backend.seqs[r.rid]
        key = (r.model, tuple(seq.prompt))
        if key not in cache:
            cache[key] = reference(hosts[r.model], seq.prompt, OUT)
        return cache[key]

    return get


def test_aegaeon_switches_and_swaps_mid_stream_without_changing_tokens(hosts, spec, expected):
    names = sorted(hosts)
    reqs = _reqs(names, 9, 0.01)  # three models on one decode instance: turns + swaps
    eng = _serve(hosts, spec, "aegaeon", reqs)
    assert all(r.done_t >= 0 and r.generated == OUT for r in reqs)
    assert eng.sink.switches >= 2 * len(names) - 1  # prefill and decode both switch
    for r in reqs:
        assert eng.backend.seqs[r.rid].out == expected(eng, r), r.rid


@pytest.mark.parametrize("policy", ["serverless", "muxserve", "dedicated"])
def test_colocated_policies_finish_every_request_with_reference_tokens(
    hosts, spec, expected, policy
):
    names = sorted(hosts)[:2]
    reqs = _reqs(names, 6, 0.02)
    eng = _serve(hosts, spec, policy, reqs, workers=2)
    assert all(r.done_t >= 0 and r.generated == OUT for r in reqs)
    assert all(r.first_t >= r.arrival for r in reqs)
    for r in reqs:
        assert eng.backend.seqs[r.rid].out == expected(eng, r), (policy, r.rid)


def test_instances_report_the_model_they_hold(hosts, spec):
    names = sorted(hosts)[:1]
    reqs = _reqs(names, 2, 0.0)
    eng = _serve(hosts, spec, "aegaeon", reqs)
    assert {i.resident for i in eng.backend.instances} == {names[0]}


def test_serverless_engine_waits_out_a_configured_start_up(hosts, spec):
    names = sorted(hosts)[:1]
    reqs = [Request(0, names[0], 0.0, 5, 2, 30.0, 0.5)]
    eng = Engine(
        hosts, spec, "serverless", cluster_for("serverless", 0, 0, 1),
        profile=flat_profile(hosts), slo=Slo(30.0, 0.5), options={"startup": 1.5},
    )  # fmt: skip
    try:
        eng.run(reqs, until=60)
    finally:
        eng.stop()
    # tick at 1 s starts the engine (>= 1.5 s), the balancer's next poll after it is ready
    assert eng.startup_s == 1.5 and reqs[0].done_t >= 0
    assert reqs[0].first_t >= 2.5
