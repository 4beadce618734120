"""End-to-end `hpn topo` and `hpn demo` runs, as a user types them."""

import pytest

from tests.conftest import assert_input_error, run_cli

SUMMARY_KEYS = {
    "preset",
    "pods",
    "segments",
    "gpus",
    "backup_gpus",
    "hosts",
    "switches",
    "links",
    "tor_oversubscription",
    "agg_oversubscription",
    "paths_between_tors",
    "max_segments_per_pod",
    "max_gpus_per_pod",
}


def test_summary_json():
    r = run_cli("topo", "summary", "--json")
    assert r.code == 0, r.err
    s = r.json()
    assert SUMMARY_KEYS <= set(s)
    assert s["gpus"] == 15_360 and s["links"]["tor_agg"] == 14_400


def test_summary_flags_and_config(tmp_path):
    cfg = tmp_path / "f.toml"
    cfg.write_text('[fabric]\npreset = "hpn"\nsegments = 4\nnic_bandwidth = "400G"\n')
    r = run_cli("topo", "summary", "--config", str(cfg), "--single-plane", "--json")
    assert r.code == 0, r.err
    s = r.json()
    assert s["segments"] == 4 and s["switches"]["agg"] == 60
    r = run_cli("topo", "summary", "--preset", "fat-tree", "--k", "4", "--json")
    assert r.json()["gpus"] == 16


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["--segments", "16"], ["agg", "needs 128", "120 available"]),
        (["--pods", "9"], ["core", "128 available"]),
        (["--set", "tor_backup_ports=300"], ["tor", "downlinks"]),
        (["--preset", "nope"], ["preset", "hpn"]),
        (["--k", "4"], ["--k", "does not apply"]),
        (["--set", "chip=fast"], ["fabric.chip", "bandwidth"]),
        (["--set", "nonsense=1"], ["--set", "nonsense"]),
        (["--preset", "fat-tree", "--k", "3"], ["fabric.k", "even"]),
    ],
)
def test_refusals_are_one_line(args, fragments):
    assert_input_error(run_cli("topo", "summary", *args), *fragments)


def test_missing_or_malformed_config(tmp_path):
    assert_input_error(
        run_cli("topo", "summary", "--config", str(tmp_path / "no.toml")), "no such file"
    )
    bad = tmp_path / "bad.toml"
    bad.write_text("[fabric\n")
    assert_input_error(run_cli("topo", "summary", "--config", str(bad)), "malformed TOML")


def test_export_import_round_trip(tmp_path):
    out = tmp_path / "topo"
    r = run_cli("topo", "export", "--segments", "2", "--format", "simai", "--out", str(out))
    assert r.code == 0, r.err
    r = run_cli("topo", "import", str(out), "--json")
    assert r.code == 0, r.err
    # SimAI has no backup flag: backup hosts are inferred from the ToRs' spare ports
    assert (r.json()["gpus"], r.json()["backup_gpus"], r.json()["segments"]) == (2048, 128, 2)
    assert_input_error(run_cli("topo", "export", "--format", "xml", "--out", str(out)), "--format")


def test_bom_with_prices(tmp_path):
    prices = tmp_path / "p.toml"
    prices.write_text(
        '[prices]\nswitch = {"51.2T" = 1000}\ntransceiver = {"200G" = 1, "400G" = 2}\n'
        'cable = {"200G" = 1, "400G" = 1}\n'
    )
    r = run_cli("topo", "bom", "--segments", "1", "--prices", str(prices), "--json")
    assert r.code == 0, r.err
    assert r.json()["cost"]["total"] > 0


def test_demo_runs_end_to_end(tmp_path):
    r = run_cli("demo", "--out", str(tmp_path / "d"))
    assert r.code == 0, r.err
    assert "15,360" in r.out and "AllReduce busbw" in r.out and "samples/s" in r.out
    assert "hpn.tab2.tier1" in r.out and "aegaeon.fig11a.ratio" in r.out  # reproduce subset
    assert (tmp_path / "d" / "reproduce" / "report.html").is_file()
    png = tmp_path / "d" / "hpn-segment.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (tmp_path / "d" / "report.html").read_text()
    assert "collective bus bandwidth" in report and "<script src=" not in report  # offline
    listed = run_cli("runs", "list", "--json")
    assert listed.code == 0, listed.err
    commands = {row["command"] for row in listed.json()["runs"]}
    assert {"topo summary", "collective", "train", "fail", "pool goodput"} <= commands
