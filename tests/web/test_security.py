"""The dashboard never reads a server file a client names (unless inside ``--data``), quotes no
file contents, answers only to its own Host and origin, and refuses bad input with 400 and
nothing queued."""

from __future__ import annotations

import os
import socket
import time
import warnings
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

from hpn.store import runs_root  # noqa: E402
from hpn.web import create_app  # noqa: E402

LOCAL = "http://127.0.0.1"
SECRET = "root:x:0:0:secret-line"


def client(base: str = LOCAL, **kw) -> TestClient:
    return TestClient(create_app(runs_root(), **kw), base_url=base)


def traffic(matrix: str) -> dict:
    return {
        "command": "traffic",
        "config": {"traffic": {"matrix": matrix}, "fabric": {"preset": "hpn", "segments": 1}},
    }


def wait(c: TestClient, job_id: str) -> dict:
    for _ in range(1200):
        job = c.get(f"/api/jobs/{job_id}").json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise AssertionError("job did not finish")


@pytest.fixture
def secret(tmp_path) -> Path:
    p = tmp_path / "outside" / "passwd"
    p.parent.mkdir()
    p.write_text(SECRET + "\n")
    return p


BODIES = {
    "traffic matrix": lambda p: traffic(str(p)),
    "traffic write_matrix": lambda p: {
        "command": "traffic",
        "config": {"traffic": {"write_matrix": str(p)}, "fabric": {"segments": 1}},
    },
    "pool mix": lambda p: {"command": "pool capacity", "config": {"pool": {"mix": str(p)}}},
    "pool trace": lambda p: {"command": "pool simulate", "config": {"pool": {"trace": str(p)}}},
    "train aicb": lambda p: {
        "command": "train",
        "config": {"fabric": {"segments": 1}, "job": [{"name": "j", "aicb": str(p)}]},
    },
}


@pytest.mark.parametrize("kind", list(BODIES))
def test_no_config_names_a_server_file_without_data(kind, secret):
    with client() as c:
        for path in (secret, secret.parent / "missing"):  # same answer: no existence oracle
            r = c.post("/api/jobs", json=BODIES[kind](path))
            assert r.status_code == 400, r.text
            assert "--data" in r.json()["error"] and SECRET not in r.text
        assert c.get("/api/jobs").json()["jobs"] == []  # nothing queued


@pytest.mark.parametrize("kind", list(BODIES))
def test_with_data_only_paths_inside_it(kind, secret, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "link").symlink_to(secret)  # a symlink inside pointing out: resolved, refused
    with client(data=data) as c:
        for path in (secret, data / "link", data / ".." / "outside" / "passwd", "../outside"):
            r = c.post("/api/jobs", json=BODIES[kind](path))
            assert r.status_code == 400, (path, r.text)
            assert "inside" in r.json()["error"] and SECRET not in r.text
        assert c.get("/api/jobs").json()["jobs"] == []


def test_a_file_inside_data_runs_and_its_contents_are_never_quoted(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "flows.csv").write_text("src,dst,bytes\nsecret-line,1,5\n")
    (data / "good.csv").write_text("src,dst,bytes\n0,1,1000000\n1,0,1000000\n")
    with client(data=data) as c:
        bad = c.post("/api/jobs", json=traffic("flows.csv"))
        assert bad.status_code == 202, bad.text
        job = wait(c, bad.json()["id"])
        assert job["status"] == "failed" and "secret-line" not in job["error"], job
        assert "flows.csv:2" in job["error"] and "'...'" in job["error"]  # the reader read it
        assert "secret-line" not in c.get("/api/jobs").text
        good = c.post("/api/jobs", json=traffic(str(data / "good.csv")))
        assert good.status_code == 202, good.text  # absolute, inside: accepted
        c.delete(f"/api/jobs/{good.json()['id']}")


def test_withhold_keeps_only_what_the_client_sent():
    from hpn.web.jobs import withhold

    msg = "x.csv:1: expected a header, got 'root:x:0' for 'hpn'"
    assert withhold(msg, '{"preset": "hpn"}') == "x.csv:1: expected a header, got '...' for 'hpn'"


@pytest.mark.parametrize(
    "host, ok",
    [
        ("127.0.0.1:8765", True),
        ("localhost", True),
        ("[::1]:8765", True),
        ("evil.example", False),
        ("127.0.0.1.evil.example", False),
        ("", False),
    ],
)
def test_host_allow_list(host, ok):
    with client() as c:
        r = c.get("/api/runs", headers={"host": host})
        assert (r.status_code == 200) == ok, (host, r.status_code)
        if not ok:
            assert r.status_code == 403
    from hpn.web.app import host_name

    assert host_name("[::1]:80") == "::1" and host_name("LOCALHOST:1") == "localhost"


def test_the_bound_address_is_allowed_too():
    with client(host="10.1.2.3", base="http://10.1.2.3:8765") as c:
        assert c.get("/api/runs").status_code == 200
        assert c.get("/api/runs", headers={"host": "10.9.9.9"}).status_code == 403


def test_state_changing_requests_need_the_own_origin():
    body = {"command": "topo summary", "config": {"fabric": {"preset": "hpn"}}}
    with client() as c:
        for headers in (
            {"origin": "http://evil.example"},
            {"origin": "null"},
            {"origin": "http://127.0.0.1:9999"},
            {"sec-fetch-site": "cross-site"},
        ):
            assert c.post("/api/jobs", json=body, headers=headers).status_code == 403, headers
            assert c.delete("/api/jobs/x", headers=headers).status_code == 403, headers
        assert c.get("/api/jobs").json()["jobs"] == []
        r = c.post("/api/jobs", json=body, headers={"origin": "http://127.0.0.1"})
        assert r.status_code == 202, r.text
        wait(c, r.json()["id"])


def test_a_token_guards_every_request():
    with client(host="0.0.0.0", token="s3cret", base="http://localhost") as c:
        assert c.get("/api/runs").status_code == 401
        assert c.get("/api/runs", headers={"authorization": "Bearer nope"}).status_code == 401
        assert c.get("/api/runs", headers={"authorization": "Bearer s3cret"}).status_code == 200
        r = c.get("/?token=s3cret")
        assert r.status_code == 200 and "hpn_token" in r.headers["set-cookie"]
        assert c.get("/api/runs").status_code == 200  # the cookie


@pytest.mark.parametrize(
    "config",
    [
        '{"pool": {"cv": 1e309}}',
        '{"pool": {"cv": -1e309}}',
        '{"pool": {"rate": 1e400}}',
        '{"pool": {"models": true}}',
        '{"pool": {"models": 2.0}}',
        '{"pool": {"gpus": 1' + "0" * 400 + "}}",
    ],
)
def test_out_of_range_numbers_are_400_and_nothing_queued(config):
    raw = '{"command": "pool simulate", "config": ' + config + "}"
    with client() as c:
        r = c.post("/api/jobs", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 400, r.text
        assert r.json()["field"].startswith(("pool", "body")), r.text
        assert c.get("/api/jobs").json()["jobs"] == []


@pytest.mark.parametrize(
    "raw",
    [
        b'{"command": "pool simulate", "config": {"pool": {"cv": NaN}}}',
        b'{"command": "x", "config": {"a": Infinity}}',
    ],
)
def test_nan_and_infinity_literals_are_400(raw):
    with client() as c:
        r = c.post("/api/jobs", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 400, r.text


def test_toml_inf_and_nan_are_400():
    with client() as c:
        for toml in ("[pool]\ncv = inf\n", "[pool]\nrate = nan\n"):
            r = c.post("/api/jobs", json={"command": "pool simulate", "config_toml": toml})
            assert r.status_code == 400 and r.json()["field"].startswith("pool."), r.text


def test_new_page_limits_and_fabric_page_name_the_preset():
    with client() as c:
        cmds = c.get("/api/commands").json()["commands"]
        assert all(isinstance(x, str) for cmd in cmds for x in cmd["limits"])
        js = c.get("/static/dash.js").text
        assert "Object.entries(c.limits)" not in js and 'c.limits.join("; ")' in js
        page = c.get("/fabric?preset=dcn-plus").text
        assert "Fabric of preset <b id=source>dcn-plus</b>." in page


def _port_in_use() -> tuple[socket.socket, int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s, s.getsockname()[1]


def test_dash_port_in_use_is_one_line_exit_2(tmp_path):
    from tests.cli.harness import invoke

    s, port = _port_in_use()
    try:
        r = invoke(["dash", "--port", str(port)], tmp_path, {"HPN_RUNS_DIR": str(tmp_path)})
    finally:
        s.close()
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert r.code == 2 and len(lines) == 1 and "in use" in lines[0], r.err
    assert os.listdir(tmp_path) == []
