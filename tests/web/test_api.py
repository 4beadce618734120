"""The dashboard's API and pages through FastAPI's test client."""

from __future__ import annotations

import time
import warnings

import pytest

pytest.importorskip("fastapi")
with warnings.catch_warnings():  # starlette's notice about httpx versions
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

from hpn.web import create_app  # noqa: E402


@pytest.fixture
def client(store, root):
    with TestClient(create_app(root), base_url="http://127.0.0.1") as c:
        yield c


def test_runs_and_run_pages(client, store):
    runs = client.get("/api/runs").json()["runs"]
    assert {r["id"] for r in runs} == {r.id for r in store.values()}
    assert all("path" not in r for r in runs)
    r = client.get(f"/api/runs/{store['hpn'].id}").json()
    assert r["result"]["gpus"] == 15360 and r["charts"] == ["counts"]
    fig = client.get(f"/api/runs/{store['hpn'].id}/charts/counts").json()
    assert fig["data"][0]["type"] == "bar"
    page = client.get(f"/runs/{store['traffic'].id}").text
    assert "tier-util" in page and "/static/plotly.min.js" in page
    assert "explore its fabric" in page
    assert store["hpn"].id in client.get("/").text
    js = client.get("/static/plotly.min.js")
    assert js.status_code == 200 and "plotly.js v" in js.text[:200]
    assert client.get("/static/dash.js").status_code == 200


def test_compare(client, store):
    a, b = store["hpn"].id, store["dcn"].id
    c = client.get(f"/api/compare?a={a}&b={b}").json()
    assert c["config"]["fabric.preset"] == ["hpn", "dcn-plus"]
    assert c["figures"]["gpus"] == [15360, 512]
    html = client.get(f"/compare?a={a}&b={b}").text
    assert "15360" in html and "dcn-plus" in html


def test_fabric_and_switch_utilization(client, store):
    v = client.get("/api/fabric?preset=hpn&segment=2").json()
    assert v["counts"] == {"aggs": 120, "tors": 16, "hosts": 136, "backup_hosts": 8}
    assert v["segments"] == list(range(15)) and not v["has_utilization"]
    tor = next(n for n in v["nodes"] if n["kind"] == "tor")
    # dual-ToR pairs side by side: rail 0 plane 0, then rail 0 plane 1
    tors = [(n["rail"], n["plane"]) for n in v["nodes"] if n["kind"] == "tor"]
    assert tors[:3] == [(0, 0), (0, 1), (1, 0)]
    s = client.get(f"/api/fabric/switch/{tor['id']}?preset=hpn").json()
    assert len(s["ports"]) == 2 * (136 + 60) and s["ports"][0]["util_mean"] is None
    run = store["traffic"].id
    v = client.get(f"/api/fabric?run={run}").json()
    assert v["has_utilization"]
    s = client.get(f"/api/fabric/switch/{tor['id']}?run={run}").json()
    p = s["ports"][0]
    assert p["util_mean"] == pytest.approx((p["link"] % 10) / 10)
    bad = client.get("/api/fabric/switch/0?preset=hpn")
    assert bad.status_code == 400 and "not a switch" in bad.json()["error"]
    assert client.get("/api/fabric?preset=nope").status_code == 400
    assert client.get("/api/fabric?preset=hpn&segment=99").status_code == 400
    assert "fabric explorer" in client.get("/fabric").text


def test_fabric_pod_view(client, store, monkeypatch):
    v = client.get("/api/fabric/pod?preset=hpn").json()
    assert v["counts"] == {
        "cores": 0,
        "aggs": 120,
        "tors": 240,
        "segments": 15,
        "hosts": 2040,
        "backup_hosts": 120,
    }
    assert v["segments"] == list(range(15)) and v["pods"] == 1 and not v["has_utilization"]
    kinds = [n["kind"] for n in v["nodes"]]
    assert kinds.count("agg") == 120 and kinds.count("tor") == 240 and "host" not in kinds
    boxes = v["segment_boxes"]
    assert [b["segment"] for b in boxes] == list(range(15))
    assert all((b["hosts"], b["backup_hosts"], b["tors"]) == (128, 8, 16) for b in boxes)
    # dual-ToR pairs side by side in each segment block: same row, planes 0 and 1
    seg2 = [n for n in v["nodes"] if n["kind"] == "tor" and n["segment"] == 2]
    assert [(n["rail"], n["plane"]) for n in seg2[:3]] == [(0, 0), (0, 1), (1, 0)]
    assert seg2[0]["y"] == seg2[1]["y"] and seg2[0]["x"] < seg2[1]["x"]
    # ToR-Agg links bundled per (segment, plane), 60 uplinks a ToR in all
    assert {b["tier"] for b in v["bundles"]} == {"tor_agg"} and len(v["bundles"]) == 30
    assert sum(b["links"] for b in v["bundles"]) == 240 * 60
    # each bundle fans out to all 60 Aggs of its plane, not to one
    agg_x = {
        p: [n["x"] for n in v["nodes"] if n["kind"] == "agg" and n["plane"] == p] for p in (0, 1)
    }
    for b in v["bundles"]:
        assert b["reaches"] == 60
        assert (b["x2_lo"], b["x2_hi"]) == (min(agg_x[b["b"]]), max(agg_x[b["b"]]))
    # its ToRs' ports are the segment view's
    s = client.get(f"/api/fabric/switch/{seg2[0]['id']}?preset=hpn").json()
    assert s["name"] == "pod0/seg2/tor-r0-p0" and len(s["ports"]) == 2 * (136 + 60)
    # cores on top when there is more than one pod; a pod past the last is an error
    c = client.get("/api/fabric/pod?run=" + store["traffic"].id).json()
    assert c["has_utilization"]
    ft = client.get("/api/fabric/pod?preset=fat-tree&pod=3").json()
    assert ft["pods"] == 8 and ft["counts"]["cores"] == 16 and ft["pod"] == 3
    assert {b["tier"] for b in ft["bundles"]} == {"tor_agg", "agg_core"}
    bad = client.get("/api/fabric/pod?preset=fat-tree&pod=8")
    assert bad.status_code == 400 and bad.json()["field"] == "pod"
    # rail-only: 120 segments wrap into rows of 16 blocks
    ro = client.get("/api/fabric/pod?preset=rail-only").json()
    assert ro["counts"]["segments"] == 120 and ro["counts"]["tors"] == 1920
    assert len({b["y"] for b in ro["segment_boxes"]}) == 8
    # bounded: a pod with more switches than the view draws asks for a segment instead
    from hpn.web import fabric

    monkeypatch.setattr(fabric, "MAX_POD_SWITCHES", 300)
    big = client.get("/api/fabric/pod?preset=hpn")
    assert big.status_code == 400 and "pick a segment" in big.json()["error"]
    assert "view-pod" in client.get("/fabric?view=pod").text


def test_files_only_from_run_folders(client, store, root, tmp_path):
    run = store["traffic"]
    from hpn.plots import render_run

    render_run(run, ["fct-cdf"], ["png"])
    ok = client.get(f"/api/runs/{run.id}/files/plots/fct-cdf.png")
    assert ok.status_code == 200 and ok.content[:4] == b"\x89PNG"
    (root / "secret.txt").write_text("no")
    for bad in (
        "../secret.txt",
        "..%2Fsecret.txt",
        "%2e%2e/%2e%2e/etc/passwd",
        "/etc/passwd",
        "plots/../../secret.txt",
    ):
        r = client.get(f"/api/runs/{run.id}/files/{bad}")
        assert r.status_code == 404, bad
    assert client.get("/api/runs/nope/files/result.json").status_code == 404
    assert client.get("/static/..%2Fapp.py").status_code == 404


def test_start_a_run_and_poll(client):
    r = client.post(
        "/api/jobs",
        json={"command": "topo summary", "config_toml": '[fabric]\npreset = "fat-tree"\nk = 4\n'},
    )
    assert r.status_code == 202, r.text
    job = r.json()
    for _ in range(1200):  # a job starts its own process
        job = client.get(f"/api/jobs/{job['id']}").json()
        if job["status"] in ("done", "failed"):
            break
        time.sleep(0.05)
    assert job["status"] == "done", job
    run = client.get(f"/api/runs/{job['run_id']}").json()
    assert run["result"]["gpus"] == 16 and "counts.html" in run["files"]


def test_bad_requests(client):
    big = {"command": "topo summary", "config": {"x": "a" * 70_000}}
    assert client.post("/api/jobs", json=big).status_code == 413
    assert (
        client.post(
            "/api/jobs",
            content=b"command=x",
            headers={"content-type": "application/x-www-form-urlencoded"},
        ).status_code
        == 415
    )
    r = client.post("/api/jobs", json={"command": "rm -rf /", "config": {}})
    assert r.status_code == 400 and "unknown command" in r.json()["error"]
    r = client.post(
        "/api/jobs", json={"command": "topo summary", "config": {"fabric": {"pods": 1000}}}
    )
    assert r.status_code == 400 and r.json()["field"] == "fabric.pods"  # the core's ports
    r = client.post("/api/jobs", json={"command": "topo summary", "config_toml": "[x"})
    assert r.status_code == 400 and "TOML" in r.json()["error"]
    assert client.get("/api/jobs/nope").status_code == 404
