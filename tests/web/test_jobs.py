"""Dashboard jobs: worker processes with a memory and time cap, listing, cancelling, caps."""

from __future__ import annotations

import time
import warnings

import pytest

from hpn.store import Index, runs_root

pytest.importorskip("fastapi")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

from hpn.web import create_app  # noqa: E402
from hpn.web.jobs import Jobs  # noqa: E402


@pytest.fixture(autouse=True)
def _plugin(plugin):
    """The plug-in command ``test square``, installed (an entry point)."""


def _wait(jobs: Jobs, job_id: str, timeout: float = 60) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = jobs.get(job_id).view()
        if v["status"] not in ("queued", "running"):
            return v
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still {v['status']}")


def _stray() -> list[str]:
    return [p.name for p in runs_root().iterdir() if ".part-" in p.name]


def test_time_cap_and_memory_cap_fail_the_job_alone():
    jobs = Jobs(runs_root(), workers=2, memory=2 * 2**30, time_cap=4)
    slow = jobs.submit("test square", {"p": {"x": 2, "sleep": 30}})
    hog = jobs.submit("test square", {"p": {"x": 2, "alloc_gb": 8}})
    v = _wait(jobs, hog.id)
    assert v["status"] == "failed" and "memory cap (2 GiB)" in v["error"], v
    v = _wait(jobs, slow.id)
    assert v["status"] == "failed" and "time cap (4 s)" in v["error"], v
    assert v["elapsed_s"] < 10
    ok = jobs.submit("test square", {"p": {"x": 3}})
    v = _wait(jobs, ok.id)
    assert v["status"] == "done", v
    assert [r["figures"]["y"] for r in Index(runs_root()).rows()] == [9]


def test_at_most_workers_run_at_once_and_queued_jobs_cancel():
    jobs = Jobs(runs_root(), workers=1)
    first = jobs.submit("test square", {"p": {"x": 1, "sleep": 30}})
    second = jobs.submit("test square", {"p": {"x": 2}})
    deadline = time.time() + 30
    while jobs.get(first.id).status != "running" and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    assert jobs.get(second.id).status == "queued"
    assert jobs.cancel(second.id).status == "cancelled"
    jobs.cancel(first.id)
    assert _wait(jobs, first.id)["status"] == "cancelled"
    assert Index(runs_root()).rows() == [] and _stray() == []


def test_list_and_delete_through_the_api():
    with TestClient(create_app(runs_root()), base_url="http://127.0.0.1") as c:
        slow = {"command": "test square", "config": {"p": {"x": 1, "sleep": 30}}}
        r = c.post("/api/jobs", json=slow)
        assert r.status_code == 202, r.text
        job = r.json()
        listed = c.get("/api/jobs").json()
        assert [j["id"] for j in listed["jobs"]] == [job["id"]]
        assert listed["limits"]["workers"] >= 1 and listed["limits"]["memory_bytes"] > 0
        assert c.delete(f"/api/jobs/{job['id']}").json()["id"] == job["id"]
        for _ in range(200):
            if c.get(f"/api/jobs/{job['id']}").json()["status"] == "cancelled":
                break
            time.sleep(0.05)
        assert c.get(f"/api/jobs/{job['id']}").json()["status"] == "cancelled"
        assert c.delete("/api/jobs/nope").status_code == 404
        cmds = c.get("/api/commands").json()
        assert cmds["jobs"]["time_s"] > 0 and cmds["request"]["max_depth"] == 32


@pytest.mark.parametrize("depth", [33, 5000])
def test_deep_json_is_refused_with_400(depth: int):
    with TestClient(create_app(runs_root()), base_url="http://127.0.0.1") as c:
        body = '{"command": "topo summary", "config": {"a": ' + "[" * depth + "]" * depth + "}}"
        r = c.post("/api/jobs", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400 and "nested deeper than 32" in r.json()["error"], r.text
        toml = "a = " + "[" * depth + "]" * depth
        r = c.post("/api/jobs", json={"command": "topo summary", "config_toml": toml})
        assert r.status_code == 400 and "nested deeper than 32" in r.json()["error"], r.text


def test_nesting_counts_brackets_outside_strings():
    from hpn.web.app import nesting

    assert nesting(b'{"a": "[[[[", "b": [1, {"c": "\\"]"}]}') == 3
