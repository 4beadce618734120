"""Hypothesis over the dashboard's JSON API: whatever a client sends, the answer is a 2xx/4xx
with a JSON body (never a 500), a refused job queues nothing, and no response quotes a file."""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

from hpn.app import runnables as names  # noqa: E402
from hpn.store import runs_root  # noqa: E402
from hpn.web import create_app  # noqa: E402
from hpn.web.jobs import Jobs  # noqa: E402

SECRET_FILE_TEXT = "s3cr3t-file-line"
FIELDS = [
    "fabric", "preset", "segments", "pods", "speed", "k", "chip", "traffic", "matrix",
    "write_matrix", "pattern", "size", "pool", "cv", "rate", "models", "gpus", "trace", "mix",
    "duration", "job", "aicb", "hidden", "collective", "sizes", "reliability", "price", "seed",
]  # fmt: skip
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["1e309", "-1e309", "NaN", "Infinity", "1" + "0" * 400]),  # raw tokens
)
scalars = st.one_of(
    st.none(), st.booleans(), numbers, st.text(max_size=20),
    st.sampled_from(["/etc/passwd", "../x", "hpn", "fat-tree", "100G", "2MB", "10s", "\x00"]),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4)
    ),
    max_leaves=12,
)


def _raw(value) -> str:
    """JSON text, with the raw number tokens (``1e309``, ``NaN``) unquoted."""
    text = json.dumps(value)
    for tok in ("1e309", "-1e309", "NaN", "Infinity", "1" + "0" * 400):
        text = text.replace(f'"{tok}"', tok)
    return text


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    secret = tmp_path_factory.mktemp("etc") / "passwd"
    secret.write_text(SECRET_FILE_TEXT + "\n")
    mp = pytest.MonkeyPatch()
    mp.setenv("HPN_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
    mp.setattr(Jobs, "_run", lambda self, job: None)  # accepted jobs stay queued: no compute
    with TestClient(create_app(runs_root()), base_url="http://127.0.0.1") as c:
        c.secret = str(secret)
        yield c
    mp.undo()


def _check(r) -> None:
    assert r.status_code < 500, (r.status_code, r.text[:300])
    assert SECRET_FILE_TEXT not in r.text
    json.loads(r.text)  # strict JSON (no NaN, no Infinity)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    command=st.one_of(st.sampled_from(sorted(names())), st.text(max_size=12)),
    config=values,
    as_toml=st.booleans(),
    secret_at=st.sampled_from(FIELDS),
)
def test_submitting_anything_is_never_a_500(client, command, config, as_toml, secret_at):
    jobs = client.app.state.jobs
    jobs.jobs.clear()
    if isinstance(config, dict):
        config = {**config, secret_at: client.secret}  # a server file, named somewhere
    if as_toml:
        body = json.dumps({"command": command, "config_toml": _raw(config)})
    else:
        body = '{"command": ' + json.dumps(command) + ', "config": ' + _raw(config) + "}"
    r = client.post("/api/jobs", content=body, headers={"content-type": "application/json"})
    _check(r)
    if r.status_code != 202:
        assert jobs.jobs == {}, "a refused job was queued"


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    path=st.sampled_from(
        [
            "/api/runs",
            "/api/fabric",
            "/api/fabric/pod",
            "/api/compare",
            "/api/jobs/x",
            "/api/fabric/switch/3",
            "/api/runs/x",
            "/api/commands",
        ]
    ),  # fmt: skip
    params=st.dictionaries(
        st.sampled_from(["preset", "run", "pod", "segment", "limit", "command", "a", "b"]),
        st.one_of(st.integers(-(2**40), 2**40).map(str), st.text(max_size=8)),
        max_size=4,
    ),
)
def test_reading_anything_is_never_a_500(client, path, params):
    _check(client.get(path, params=params))
