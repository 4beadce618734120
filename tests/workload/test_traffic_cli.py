"""`hpn traffic` end to end."""

import pytest

from tests.conftest import assert_input_error, run_cli


def test_traffic_json_keys_and_ideal():
    r = run_cli("traffic", "--preset", "fat-tree", "--k", "8", "--size", "1MB", "--json")
    assert r.code == 0, r.err
    out = r.json()
    for key in ("flows", "ideal_fct_s", "fct_s", "makespan_s", "wall_s", "peak_rss_mb"):
        assert key in out
    assert set(out["fct_s"]) == {"min", "p50", "p99", "max"}
    assert out["flows"] == 128
    assert out["ideal_fct_s"] == pytest.approx(1e6 * 8 / 100e9 + 6 * 500e-9)
    assert out["fct_s"]["p50"] > out["ideal_fct_s"]  # ECMP collisions


def test_traffic_table_and_patterns():
    r = run_cli("traffic", "--preset", "hpn", "--segments", "2", "--pattern", "rail-ring")
    assert r.code == 0, r.err
    assert "FCT" in r.out and "makespan" in r.out
    r = run_cli("traffic", "--preset", "fat-tree", "--k", "4", "--pattern", "incast", "--json")
    assert r.code == 0 and r.json()["flows"] == 15


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["--pattern", "nope"], ["pattern", "permutation"]),
        (["--size", "-2MB"], ["--size"]),
        (["--routing", "magic"], ["routing", "ecmp"]),
        (["--endpoints", "1"], ["endpoints"]),
        (
            ["--preset", "hpn", "--segments", "1", "--set", "tor_uplinks=0", "--pattern", "incast"],
            ["no path"],
        ),
    ],
)
def test_traffic_refusals(args, fragments):
    base = (
        ["traffic", "--preset", "fat-tree", "--k", "4"] if "--preset" not in args else ["traffic"]
    )
    assert_input_error(run_cli(*base, *args, "--json"), *fragments)
