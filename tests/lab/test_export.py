"""``hpn lab export``: the lab's fabric for containerlab, for FRR on real switches, as JSON."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize("fmt", ["containerlab", "frr", "json"])
def test_export_without_root(tmp_path, fmt):
    out = tmp_path / "x" / fmt  # created, with its parent
    r = run_cli("lab", "export", "--format", fmt, "--out", str(out), "--bfd", "--json")
    assert r.code == 0, r.err
    res = r.json()
    assert res["nodes"] == 12 and res["links"] == 16
    if fmt == "json":
        doc = json.loads((out / "topology.json").read_text())
        assert len(doc["links"]) == 32 and {n["role"] for n in doc["nodes"]} >= {"host"}
        return
    rows = list(csv.DictReader((out / "ports.csv").open()))
    assert len(rows) == 32  # both ends of 16 links
    pairs = {(r["node"], r["interface"]): (r["peer"], r["peer_interface"]) for r in rows}
    assert all(pairs[pairs[k]] == k for k in pairs)  # the map is symmetric
    conf = (out / "t0" / "frr.conf").read_text()
    for r in rows:
        if r["node"] == "t0":
            assert f"interface {r['interface']}" in conf and r["address"] in conf
    assert "bfd profile hpn" in conf and "bfdd=yes" in (out / "t0" / "daemons").read_text()
    if shutil.which("vtysh"):
        for sw in ("t0", "a0"):
            p = subprocess.run(["vtysh", "--dryrun", "-f", str(out / sw / "frr.conf")],
                               capture_output=True, text=True)  # fmt: skip
            assert p.returncode == 0, p.stdout + p.stderr
    if fmt == "containerlab":
        yaml = pytest.importorskip("yaml")
        topo = yaml.safe_load((out / "hpn-0.clab.yml").read_text())["topology"]
        assert len(topo["nodes"]) == 12 and len(topo["links"]) == 16
        ends = {e for link in topo["links"] for e in link["endpoints"]}
        assert ends == {f"{r['node']}:{r['interface']}" for r in rows}


def test_export_bad_input(tmp_path):
    r = run_cli("lab", "export", "--format", "gns3", "--out", str(tmp_path / "y"))
    assert r.code == 2 and "format" in r.err and "Traceback" not in r.err
    (tmp_path / "f").write_text("")
    r = run_cli("lab", "export", "--out", str(tmp_path / "f"))
    assert r.code == 2 and "not a directory" in r.err
