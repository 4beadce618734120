"""The server as the official `openai` SDK sees it: every field honoured or refused by
name, streams equal to non-streamed answers at temperature 0, aborts and vLLM metrics."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.serve.conftest import NEEDS, aegaeon_engine, reference

pytest.importorskip("torch", reason=NEEDS)
pytest.importorskip("transformers", reason=NEEDS)
openai = pytest.importorskip("openai", reason=NEEDS)
prom = pytest.importorskip("prometheus_client.parser", reason=NEEDS)
uvicorn = pytest.importorskip("uvicorn", reason=NEEDS)

from hpn.serve.server import Limits, create_app  # noqa: E402


@pytest.fixture(scope="module")
def server(hosts, spec):
    eng = aegaeon_engine(hosts, spec)
    app = create_app(eng, Limits(max_model_len=400))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    th = threading.Thread(target=srv.run, daemon=True)
    th.start()
    while not srv.started:
        time.sleep(0.02)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
    yield eng, client, port
    srv.should_exit = True
    th.join(10)
    eng.stop()


@pytest.fixture(scope="module")
def names(hosts):
    return sorted(hosts)


def _text(hosts, name, ids):
    return hosts[name].tokenizer.decode(ids, skip_special_tokens=True)


def test_n_choices_list_prompts_and_usage(server, names, hosts):
    _, c, _ = server
    r = c.completions.create(
        model=names[0], prompt=[[5, 6, 7], [8, 9]], max_tokens=4, n=2, temperature=0,
        extra_body={"ignore_eos": True},
    )  # fmt: skip
    assert [ch.index for ch in r.choices] == [0, 1, 2, 3]
    want0 = _text(hosts, names[0], reference(hosts[names[0]], [5, 6, 7], 4))
    want1 = _text(hosts, names[0], reference(hosts[names[0]], [8, 9], 4))
    assert [ch.text for ch in r.choices] == [want0, want0, want1, want1]
    assert r.usage.prompt_tokens == 5 and r.usage.completion_tokens == 16


def test_seeded_sampling_with_n_gives_distinct_repeatable_choices(server, names):
    _, c, _ = server
    kw = dict(model=names[1], prompt="the model", max_tokens=8, n=3, seed=11, temperature=1.0,
              extra_body={"ignore_eos": True})  # fmt: skip
    a, b = c.completions.create(**kw), c.completions.create(**kw)
    assert [x.text for x in a.choices] == [x.text for x in b.choices]
    assert len({x.text for x in a.choices}) > 1  # child seeds seed + i, as vLLM's


def test_top_k_1_and_tiny_top_p_are_greedy(server, names, hosts):
    _, c, _ = server
    want = _text(hosts, names[0], reference(hosts[names[0]], [30, 31, 32], 6))
    for extra in ({"top_k": 1}, {"top_p": 1e-6}):
        kw = {"top_p": extra.pop("top_p")} if "top_p" in extra else {}
        r = c.completions.create(
            model=names[0], prompt=[30, 31, 32], max_tokens=6, temperature=1.5, seed=3,
            extra_body={"ignore_eos": True, **extra}, **kw,
        )  # fmt: skip
        assert r.choices[0].text == want


def test_stop_string_across_token_boundaries(server, names, hosts):
    _, c, _ = server
    full = c.completions.create(
        model=names[0], prompt=[40, 41], max_tokens=24, temperature=0,
        extra_body={"ignore_eos": True},
    ).choices[0].text  # fmt: skip
    tok = hosts[names[0]].tokenizer
    ids = reference(hosts[names[0]], [40, 41], 24)
    # a stop string that starts inside one token and ends inside a later one
    pieces = [tok.decode(ids[: i + 1], skip_special_tokens=True) for i in range(len(ids))]
    k = next(i for i in range(2, len(pieces)) if len(pieces[i]) - len(pieces[i - 2]) >= 3)
    a = len(pieces[k - 2]) - 1
    stop = full[a : len(pieces[k - 1]) + 1]
    assert len(stop) >= 2 and full.find(stop) == a
    for stream in (False, True):
        if stream:
            chunks = list(
                c.completions.create(
                    model=names[0], prompt=[40, 41], max_tokens=24, temperature=0, stop=[stop],
                    stream=True, extra_body={"ignore_eos": True},
                )
            )  # fmt: skip
            text = "".join(ch.choices[0].text for ch in chunks)
            finish = chunks[-1].choices[0].finish_reason
        else:
            r = c.completions.create(
                model=names[0], prompt=[40, 41], max_tokens=24, temperature=0, stop=stop,
                extra_body={"ignore_eos": True},
            )  # fmt: skip
            text, finish = r.choices[0].text, r.choices[0].finish_reason
        assert text == full[:a] and finish == "stop"


def test_max_completion_tokens_and_chat_defaults(server, names):
    _, c, _ = server
    msgs = [{"role": "developer", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"},
                                         {"type": "text", "text": "there"}]}]  # fmt: skip
    r = c.chat.completions.create(
        model=names[2], messages=msgs, max_completion_tokens=3, temperature=0,
        extra_body={"ignore_eos": True},
    )  # fmt: skip
    assert r.usage.completion_tokens == 3 and r.choices[0].finish_reason == "length"
    assert r.choices[0].message.role == "assistant"
    # no max: the context left (vLLM), not 16
    r = c.chat.completions.create(
        model=names[2], messages=msgs, temperature=0, extra_body={"ignore_eos": True}
    )
    assert r.usage.prompt_tokens + r.usage.completion_tokens == 400


def test_logprobs_are_the_real_log_softmax(server, names, hosts):
    import torch
    from transformers import AutoModelForCausalLM

    _, c, _ = server
    prompt = [7, 8, 9, 10]
    r = c.completions.create(
        model=names[0], prompt=prompt, max_tokens=3, temperature=0, logprobs=3,
        extra_body={"ignore_eos": True},
    )  # fmt: skip
    lp = r.choices[0].logprobs
    host = hosts[names[0]]
    m = AutoModelForCausalLM.from_pretrained(host.info.path, dtype=torch.float32)
    ids = reference(host, prompt, 3)
    with torch.no_grad():
        logits = m(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
    want = torch.log_softmax(logits, -1)
    for i, t in enumerate(ids):
        assert lp.token_logprobs[i] == pytest.approx(float(want[i, t]), abs=1e-4)
        top = want[i].topk(3)
        got = sorted(lp.top_logprobs[i].values(), reverse=True)
        assert got == pytest.approx(top.values.tolist(), abs=1e-4)
    ch = c.chat.completions.create(
        model=names[0], messages=[{"role": "user", "content": "x"}], max_tokens=2,
        temperature=0, logprobs=True, top_logprobs=2, extra_body={"ignore_eos": True},
    )  # fmt: skip
    content = ch.choices[0].logprobs.content
    assert len(content) == 2 and all(len(x.top_logprobs) == 2 for x in content)
    assert all(x.logprob <= 0 and x.top_logprobs[0].logprob >= x.logprob for x in content)


def test_penalties_and_logit_bias_change_greedy_output(server, names, hosts):
    _, c, _ = server
    base = dict(model=names[0], prompt=[50, 51], max_tokens=12, temperature=0,
                extra_body={"ignore_eos": True})  # fmt: skip
    plain = c.completions.create(**base).choices[0].text
    ids = reference(hosts[names[0]], [50, 51], 12)
    biased = c.completions.create(**base, logit_bias={str(ids[0]): -100}).choices[0]
    assert biased.text != plain
    forced = c.completions.create(**base, logit_bias={"99": 100}).choices[0].text
    assert forced == _text(hosts, names[0], [99] * 12)
    fp = c.completions.create(**base, frequency_penalty=2.0, logit_bias={"99": 5}).choices[0]
    assert fp.text != _text(hosts, names[0], [99] * 12)  # repeats cost more each time


def test_stream_equals_non_stream_and_usage_chunk(server, names):
    _, c, _ = server
    for name in names:
        kw = dict(model=name, messages=[{"role": "user", "content": "what is a pool"}],
                  max_tokens=10, temperature=0, extra_body={"ignore_eos": True})  # fmt: skip
        full = c.chat.completions.create(**kw)
        chunks = list(
            c.chat.completions.create(**kw, stream=True, stream_options={"include_usage": True})
        )
        assert chunks[0].choices[0].delta.role == "assistant"
        assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 10
        assert chunks[-2].choices[0].finish_reason == "length"
        assert chunks[-2].choices[0].delta.content is None
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks[:-1])
        assert text == full.choices[0].message.content
        assert all(ch.usage is None for ch in chunks[:-1])


@pytest.mark.parametrize(
    "kw,param",
    [
        ({"suffix": "x"}, "suffix"),
        ({"best_of": 3}, "best_of"),
        ({"echo": True, "logprobs": 1}, "echo"),
        ({"extra_body": {"guided_json": {}}}, "guided_json"),
        ({"n": 0}, "n"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
        ({"logit_bias": {"999999": 1}}, "logit_bias"),
        ({"max_tokens": 1000}, "max_tokens"),
        ({"temperature": 3}, "temperature"),
        ({"logprobs": 21}, "logprobs"),
    ],
)
def test_completion_fields_not_served_are_refused_by_name(server, names, kw, param):
    _, c, _ = server
    with pytest.raises(openai.BadRequestError) as e:
        c.completions.create(model=names[0], prompt="hi", **kw)
    assert e.value.body["param"] == param and param in e.value.body["message"]


@pytest.mark.parametrize(
    "kw,param",
    [
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"audio": {"voice": "x", "format": "wav"}}, "audio"),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "http://x"}}],
                    }
                ]
            },
            "messages.0.content.0.type",
        ),  # fmt: skip
        ({"messages": [{"role": "tool", "content": "1", "tool_call_id": "a"}]}, "messages.0.role"),
        ({"reasoning_effort": "low"}, "reasoning_effort"),
    ],
)
def test_chat_fields_not_served_are_refused_by_name(server, names, kw, param):
    _, c, _ = server
    kw = {"messages": [{"role": "user", "content": "hi"}], **kw}
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=names[0], **kw)
    assert e.value.body["param"] == param and param in e.value.body["message"]


def test_echo_prefixes_the_prompt(server, names):
    _, c, _ = server
    r = c.completions.create(model=names[0], prompt="serve the", max_tokens=2, echo=True,
                             temperature=0, extra_body={"ignore_eos": True})  # fmt: skip
    plain = c.completions.create(model=names[0], prompt="serve the", max_tokens=2,
                                 temperature=0, extra_body={"ignore_eos": True})  # fmt: skip
    assert r.choices[0].text == "serve the" + plain.choices[0].text


def _metrics(port):
    import httpx

    text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in prom.text_string_to_metric_families(text) for s in f.samples}  # fmt: skip


def _value(m, name, **labels):
    return sum(v for (n, ls), v in m.items() if n == name and set(labels.items()) <= set(ls))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
def test_disconnect_aborts_within_one_step_and_frees_everything(server, names, stream):
    import httpx

    eng, _, port = server
    be = eng.backend
    body = {"model": names[1], "prompt": [3, 4, 5], "max_tokens": 350, "stream": stream,
            "ignore_eos": True, "temperature": 0}  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1/completions"
    if stream:
        with httpx.Client(timeout=30) as h, h.stream("POST", url, json=body) as r:
            n = 0
            for line in r.iter_lines():
                n += line.startswith("data: {")
                if n == 3:
                    break
    else:
        with httpx.Client(timeout=0.2) as h, pytest.raises(httpx.ReadTimeout):
            h.post(url, json=body)  # the client gives up, closing its connection
    deadline = time.time() + 10
    rid = max(be.seqs)
    seq = be.seqs[rid]
    while time.time() < deadline and be.reqs[rid].done_t < 0:
        time.sleep(0.01)
    assert seq.cancelled and be.reqs[rid].done_t >= 0
    assert 0 <= seq.drop_step - seq.cancel_step <= 1  # left at the next step boundary
    assert len(seq.out) < body["max_tokens"]  # aborted, not run to its length
    time.sleep(0.2)
    assert all(kvm.used_blocks() == 0 for kvm in be.kv.values())
    m = _metrics(port)
    assert _value(m, "vllm:num_requests_running", model_name=names[1]) == 0
    assert _value(m, "hpn_requests_total", model_name=names[1], outcome="aborted") >= 1


def test_metrics_names_and_counts_equal_requests_sent(hosts, spec, names):
    eng = aegaeon_engine(hosts, spec)
    app = create_app(eng)
    import httpx

    async def go():
        import asyncio

        t = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=t, base_url="http://t", timeout=60) as h:
            bodies = [{"model": names[i % 3], "prompt": [3 + i, 4], "max_tokens": 2 + i % 3,
                       "temperature": 0, "ignore_eos": True} for i in range(7)]  # fmt: skip
            rs = await asyncio.gather(*(h.post("/v1/completions", json=b) for b in bodies))
            assert all(r.status_code == 200 for r in rs)
            return (await h.get("/metrics")).text

    import asyncio

    text = asyncio.run(go())
    eng.stop()
    fams = {f.name: f for f in prom.text_string_to_metric_families(text)}
    for name in ("vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                 "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
                 "vllm:prompt_tokens", "vllm:generation_tokens", "vllm:num_requests_running",
                 "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:num_preemptions", "vllm:request_success"):  # fmt: skip
        assert name in fams, name
        assert all("model_name" in s.labels for s in fams[name].samples)
    m = {(s.name, tuple(sorted(s.labels.items()))): s.value
         for f in fams.values() for s in f.samples}  # fmt: skip
    assert _value(m, "vllm:time_to_first_token_seconds_count") == 7
    assert _value(m, "vllm:e2e_request_latency_seconds_count") == 7
    assert _value(m, "vllm:request_queue_time_seconds_count") == 7
    assert _value(m, "vllm:request_success_total", finished_reason="length") == 7
    assert _value(m, "vllm:prompt_tokens_total") == 14
    assert _value(m, "vllm:generation_tokens_total") == sum(2 + i % 3 for i in range(7))
    assert _value(m, "vllm:inter_token_latency_seconds_count") == sum(1 + i % 3 for i in range(7))
    assert _value(m, "vllm:num_requests_running") == 0
    assert _value(m, "vllm:kv_cache_usage_perc") == 0
