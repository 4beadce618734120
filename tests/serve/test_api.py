"""The OpenAI-compatible server: completions, chat, streaming, errors, concurrency."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.serve.conftest import NEEDS, aegaeon_engine, reference

pytest.importorskip("torch", reason=NEEDS)
pytest.importorskip("transformers", reason=NEEDS)
pytest.importorskip("prometheus_client", reason=NEEDS)
httpx = pytest.importorskip("httpx")

from hpn.serve.server import Limits, create_app  # noqa: E402


@pytest.fixture(scope="module")
def served(hosts, spec):
    eng = aegaeon_engine(hosts, spec)
    app = create_app(eng, Limits(max_body_bytes=4096, max_prompt_tokens=64, max_tokens=32))
    yield eng, app
    eng.stop()


def _run(app, coro_fn):
    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60) as c:
            return await coro_fn(c)

    return asyncio.run(main())


def test_models_lists_the_store(served, hosts):
    _, app = served
    r = _run(app, lambda c: c.get("/v1/models"))
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]] == sorted(hosts)


def test_completion_with_token_ids_is_greedy_generate(served, hosts):
    _, app = served
    name = sorted(hosts)[0]
    body = {
        "model": name,
        "prompt": [5, 9, 13, 17],
        "max_tokens": 6,
        "temperature": 0,
        "ignore_eos": True,
    }
    r = _run(app, lambda c: c.post("/v1/completions", json=body))
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["usage"] == {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10}
    want = hosts[name].tokenizer.decode(
        reference(hosts[name], [5, 9, 13, 17], 6), skip_special_tokens=True
    )
    assert d["choices"][0]["text"] == want
    assert d["choices"][0]["finish_reason"] == "length"


def test_streaming_sends_one_event_per_token_then_done(served, hosts):
    _, app = served
    name = sorted(hosts)[1]
    body = {
        "model": name,
        "prompt": "hello world",
        "max_tokens": 5,
        "stream": True,
        "ignore_eos": True,
        "temperature": 0,
    }

    async def go(c):
        async with c.stream("POST", "/v1/completions", json=body) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            return [ln async for ln in r.aiter_lines() if ln.startswith("data: ")]

    lines = _run(app, go)
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(x[6:]) for x in lines[:-1]]
    assert len(chunks) == 6  # one per token, then the finish reason on its own
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 5 + ["length"]
    assert chunks[-1]["choices"][0]["text"] == ""
    full = _run(app, lambda c: c.post("/v1/completions", json={**body, "stream": False}))
    assert "".join(c["choices"][0]["text"] for c in chunks) == full.json()["choices"][0]["text"]


def test_chat_streams_deltas(served, hosts):
    _, app = served
    body = {
        "model": sorted(hosts)[2],
        "messages": [{"role": "user", "content": "hi there"}],
        "max_tokens": 3,
        "stream": True,
        "ignore_eos": True,
    }

    async def go(c):
        async with c.stream("POST", "/v1/chat/completions", json=body) as r:
            return [json.loads(ln[6:]) async for ln in r.aiter_lines() if ln.startswith("data: {")]

    chunks = _run(app, go)
    # the role first, one delta per token, then the finish reason with an empty delta
    assert len(chunks) == 5 and chunks[0]["object"] == "chat.completion.chunk"
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all("content" in c["choices"][0]["delta"] for c in chunks[1:4])
    assert chunks[-1]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "length",
    }


@pytest.mark.parametrize(
    "body,status,field",
    [
        ({"model": "nope", "prompt": "x"}, 404, "model"),
        ({"prompt": "x"}, 400, "model"),
        ({"model": "M", "prompt": "x", "max_tokens": 0}, 400, "max_tokens"),
        ({"model": "M", "prompt": "x", "max_tokens": 33}, 400, "max_tokens"),
        ({"model": "M", "prompt": list(range(100))}, 413, "prompt"),
        ({"model": "M", "prompt": [10**9]}, 400, "prompt"),
        ({"model": "M", "prompt": "x", "temperature": -1}, 400, "temperature"),
    ],
)
def test_bad_requests_get_a_clear_4xx(served, hosts, body, status, field):
    _, app = served
    if body.get("model") == "M":
        body = {**body, "model": sorted(hosts)[0]}
    r = _run(app, lambda c: c.post("/v1/completions", json=body))
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["param"] == field and field in err["message"]


def test_bad_json_and_oversized_bodies_are_rejected_and_the_server_lives(served, hosts):
    _, app = served

    async def go(c):
        bad = await c.post(
            "/v1/completions", content=b"{not json", headers={"content-type": "application/json"}
        )
        arr = await c.post("/v1/completions", json=[1, 2])
        big = await c.post("/v1/completions", content=b"x" * 5000)
        ok = await c.post(
            "/v1/completions", json={"model": sorted(hosts)[0], "prompt": "a", "max_tokens": 1}
        )
        return bad, arr, big, ok

    bad, arr, big, ok = _run(app, go)
    assert bad.status_code == 400 and "JSON" in bad.json()["error"]["message"]
    assert arr.status_code == 400
    assert big.status_code == 413
    assert ok.status_code == 200


def test_a_body_of_unknown_length_is_refused_before_it_is_read(served, hosts):
    """A chunked body (no Content-Length) would be read whole before its size is known."""
    _, app = served

    async def chunks():
        for _ in range(3):
            yield b"x" * 4000

    async def go(c):
        return await c.post("/v1/completions", content=chunks())

    r = _run(app, go)
    assert r.status_code == 411 and "Content-Length" in r.json()["error"]["message"]


def test_concurrent_requests_of_several_models_all_complete(served, hosts):
    eng, app = served
    names = sorted(hosts)

    async def go(c):
        bodies = [
            {
                "model": names[i % 3],
                "prompt": [3 + i, 4, 5],
                "max_tokens": 4,
                "temperature": 0,
                "ignore_eos": True,
            }
            for i in range(9)
        ]
        return await asyncio.gather(*(c.post("/v1/completions", json=b) for b in bodies))

    rs = _run(app, go)
    assert [r.status_code for r in rs] == [200] * 9
    for i, r in enumerate(rs):
        want = reference(hosts[names[i % 3]], [3 + i, 4, 5], 4)
        text = hosts[names[i % 3]].tokenizer.decode(want, skip_special_tokens=True)
        assert r.json()["choices"][0]["text"] == text
    m = _run(app, lambda c: c.get("/metrics")).text
    assert "vllm:time_to_first_token_seconds_bucket" in m
    assert "vllm:inter_token_latency_seconds_count" in m
    assert "hpn_switches_total" in m and "hpn_instance_model{" in m
    assert 'vllm:num_requests_waiting{model_name="' in m
