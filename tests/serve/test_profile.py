"""The contention probe of a profile: k = 1..n instances computing at once."""

from __future__ import annotations

import pytest

from tests.serve.conftest import NEEDS

pytest.importorskip("torch", reason=NEEDS)


def test_contention_is_relative_to_the_grid_concurrency(hosts, spec):
    from hpn.serve.profile import contention

    host = hosts[sorted(hosts)[0]]
    c = contention(host, spec, 2, repeats=1)
    assert c["k"] == [1, 2]
    for kind, raw in (
        ("prefill", "prefill_s"),
        ("decode", "decode_step_s"),
        ("load", "cold_load_s"),
    ):
        assert len(c[raw]) == 2 and all(t > 0 for t in c[raw])
        assert c[kind][-1] == 1.0
        assert c[kind][0] == pytest.approx(c[raw][0] / c[raw][1])


def test_kv_copy_fit_recovers_base_and_rate():
    from hpn.serve.profile import fit_kv

    pts = [(b, 0.004 + b * 1e-8) for b in (65536, 163840, 557056) for _ in range(2)]
    f = fit_kv(pts)
    assert f["base_s"] == pytest.approx(0.004) and f["s_per_byte"] == pytest.approx(1e-8)
    assert fit_kv([(65536, 0.004)] * 3) is None  # one size: no rate


def test_a_profile_measures_kv_copies_and_the_decode_warm_up(hosts, spec):
    from hpn.serve.profile import measure

    p = measure(hosts, spec, lens=(16, 64), batches=(1,), repeats=1)
    kc = p["kv_copy"]
    # a paced copy is never faster than the link
    link = spec.link_bps or 1e12
    assert kc["points"] == 2 * 2 * len({p_["shape"] for p_ in p["points"]})
    assert kc["base_s"] + 32 * 1024 * kc["s_per_byte"] >= 0.9 * 32 * 1024 / link
    assert set(p["decode_warmup_s"]) == set(hosts)
    assert all(w >= 0 for w in p["decode_warmup_s"].values())
