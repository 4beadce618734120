"""`hpn traffic --matrix / --write-matrix` and the `[routing]` options, end to end."""

import pytest

from tests.conftest import assert_input_error, run_cli

FT16 = ("--preset", "fat-tree", "--k", "16", "--speed", "100G")


def test_runs_exactly_the_files_flows(tmp_path):
    cm = tmp_path / "small.cm"
    cm.write_text(
        "Nodes 1024\nConnections 3\n0->1023 id 1 start 0 size 2000000\n"
        "5->6 id 2 start 10 size 1000000\n700->3 id 3 start 0 size 0\n"
    )
    r = run_cli("traffic", *FT16, "--matrix", str(cm), "--json")
    assert r.code == 0, r.err
    out = r.json()
    assert out["flows"] == 3
    assert out["pattern"].startswith("matrix small.cm")
    assert out["routing"] == "ecmp" and "seeds switch" in out["routing_detail"]
    # 2 MB alone on its path at 100G: 160 us + 6 hops x 500 ns
    assert out["fct_s"]["max"] == pytest.approx(2e6 * 8 / 100e9 + 6 * 500e-9, rel=1e-9)


@pytest.mark.parametrize("suffix", [".cm", ".csv"])
def test_write_then_read_gives_identical_results(tmp_path, suffix):
    path = tmp_path / f"perm{suffix}"
    a = run_cli("traffic", *FT16, "--size", "2MB", "--write-matrix", str(path), "--json")
    assert a.code == 0, a.err
    b = run_cli("traffic", *FT16, "--matrix", str(path), "--json")
    assert b.code == 0, b.err
    ja, jb = a.json(), b.json()
    for key in ("flows", "fct_s", "fct_over_ideal", "makespan_s", "links_used", "routing_detail"):
        assert ja[key] == jb[key], key


def test_a_bad_matrix_line_is_one_line_and_exit_2(tmp_path):
    cm = tmp_path / "bad.cm"
    cm.write_text("Nodes 16\nConnections 1\n0->99 id 1 start 0 size 10\n")
    assert_input_error(run_cli("traffic", *FT16, "--matrix", str(cm)), f"{cm}:3", "not a host")
    big = tmp_path / "big.csv"
    big.write_text("0,5000,10\n")
    assert_input_error(run_cli("traffic", *FT16, "--matrix", str(big)), "5001 hosts")


def test_hpn_fabrics_default_to_hpn_routing():
    r = run_cli("traffic", "--preset", "hpn", "--segments", "1", "--json")
    assert r.code == 0, r.err
    assert r.json()["routing"] == "hpn"
    r = run_cli("traffic", "--preset", "dcn-plus", "--segments", "1", "--json")
    assert r.json()["routing"] == "ecmp"


def test_same_seeds_polarize_and_bad_routing_options_are_refused():
    k8 = ("--preset", "fat-tree", "--k", "8", "--json")
    default = run_cli("traffic", *k8).json()["fct_over_ideal"]["p50"]
    same = run_cli("traffic", *k8, "--ecmp-seeds", "same").json()
    assert "seeds same, offsets 0/0/0" in same["routing_detail"]
    assert same["fct_over_ideal"]["p50"] > default
    assert_input_error(run_cli("traffic", *k8, "--ecmp-offset", "1,2"), "--ecmp-offset", "3 values")
    assert_input_error(run_cli("traffic", *k8, "--ecmp-hash", "md5"), "unknown hash")
    assert_input_error(
        run_cli("traffic", *k8, "--routing", "random", "--ecmp-seeds", "tier"), "hash settings"
    )
