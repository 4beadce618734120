"""`hpn route ...` end to end."""

from tests.conftest import assert_input_error, run_cli


def test_route_paths_json():
    r = run_cli("route", "paths", "--json")
    assert r.code == 0, r.err
    rep = r.json()
    assert rep["search_space"] == 60
    assert rep["pairs"]["cross_segment_same_rail"]["per_plane"] == [60, 60]


def test_route_select_json():
    r = run_cli(
        "route",
        "select",
        "--src",
        "0:0",
        "--dst",
        "136:0",
        "--connections",
        "8",
        "--segments",
        "2",
        "--json",
    )
    assert r.code == 0, r.err
    out = r.json()
    assert out["distinct_paths"] == 8 and out["planes"] == [4, 4]
    assert len({c["sport"] for c in out["connections"]}) == 8


def test_route_polarization_json(tmp_path):
    base = [
        "route",
        "polarization",
        "--segments",
        "2",
        "--bond",
        "rr",
        "--json",
        "--out",
        str(tmp_path / "a"),
    ]
    r = run_cli(*base)
    assert r.code == 0, r.err
    assert r.json()["tor_port_load_ratio"] == 1.0
    keys = {"tor_port_load_ratio", "agg_downlink_max_over_mean", "flows"}
    assert keys <= set(r.json())


def test_route_bad_input():
    assert_input_error(run_cli("route", "select", "--src", "0-0", "--dst", "1:0"), "--src")
    assert_input_error(run_cli("route", "select", "--src", "0:0", "--dst", "99999:0"), "--dst")
    assert_input_error(run_cli("route", "polarization", "--segments", "1"), "--segments")
    assert_input_error(run_cli("route", "polarization", "--hash", "md5", "--segments", "2"), "hash")
