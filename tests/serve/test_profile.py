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
