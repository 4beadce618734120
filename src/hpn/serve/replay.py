"""Replay a pool trace against an OpenAI-compatible server and measure it like the simulator.

An async client (httpx) sends each request at its (scaled) arrival time as a streaming
completion of exactly ``output_len`` tokens (``ignore_eos``) over a seeded random prompt of
``input_len`` token ids, and records the arrival time of every token's event. The token
times then go through the simulator's own accounting (`Request.emit`, `metrics.summarize`),
so both attainment figures (per-token deadlines and the artifact's) mean what they mean
in `hpn pool simulate`. Times are measured from the replay's start, on the client.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.pool.metrics import Recorder, summarize
from hpn.pool.policies.base import Slo
from hpn.pool.requests import Request
from hpn.pool.result import PoolResult
from hpn.pool.traces.base import Trace

MAX_REQUESTS = 100_000
PROMPT_VOCAB = 1000  # prompt ids are drawn below this (fits any generated model's vocab)


@dataclass
class Replayed:
    """One replayed request: when it was due and when each token came."""

    rid: int
    model: str
    arrival: float
    input_len: int
    output_len: int
    sent: float = -1.0
    tokens: list[float] | None = None
    error: str | None = None


def parse_map(text: str | None) -> dict[str, str]:
    """``a=b,c=d`` -> {a: b, c: d} (trace model -> served model)."""
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        k, sep, v = part.partition("=")
        if not sep or not k.strip() or not v.strip():
            raise InputError("map", f"bad entry {part!r}; use TRACE_MODEL=SERVED_MODEL,...")
        out[k.strip()] = v.strip()
    return out


def assign_models(trace_names, served: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """Each trace model's served model: the mapping, else the served ones in turn."""
    unknown = sorted(set(mapping.values()) - set(served))
    if unknown:
        raise InputError("map", f"the server has no {', '.join(unknown)}; it serves {served}")
    out, k = {}, 0
    for n in trace_names:
        if n in mapping:
            out[n] = mapping[n]
        else:
            out[n] = served[k % len(served)]
            k += 1
    return out


def fold_warning(names: dict[str, str]) -> str | None:
    """One line when trace models share served models (`names`: trace -> served)."""
    served = set(names.values())
    if len(served) >= len(names):
        return None
    return (
        f"warning: {len(names)} trace models folded onto {len(served)} served models "
        "(their requests share instances; give --map or serve more models)"
    )


def plan(
    trace: Trace,
    served: list[str],
    time_scale: float = 1.0,
    mapping: dict[str, str] | None = None,
    max_input: int | None = None,
    max_output: int | None = None,
) -> list[Replayed]:
    """The requests to send: arrivals x `time_scale`, models mapped, lengths clipped."""
    if time_scale <= 0:
        raise InputError("time_scale", f"must be > 0, got {time_scale}")
    if len(trace) > MAX_REQUESTS:
        raise InputError("trace", f"{len(trace)} requests; at most {MAX_REQUESTS} are replayed")
    names = assign_models(trace.names, served, mapping or {})
    out = []
    for i in range(len(trace)):
        li, lo = int(trace.input_len[i]), int(trace.output_len[i])
        if max_input:
            li = min(li, max_input)
        if max_output:
            lo = min(lo, max_output)
        out.append(
            Replayed(
                i,
                names[trace.names[trace.model[i]]],
                float(trace.arrival[i]) * time_scale,
                max(1, li),
                max(1, lo),
            )
        )
    return out


async def _one(client, url: str, r: Replayed, t0: float) -> None:
    await asyncio.sleep(max(0.0, t0 + r.arrival - time.perf_counter()))
    rng = np.random.default_rng(r.rid)
    body = {
        "model": r.model,
        "prompt": rng.integers(10, PROMPT_VOCAB, r.input_len).tolist(),
        "max_tokens": r.output_len,
        "stream": True,
        "ignore_eos": True,
        "temperature": 0,
    }
    r.sent = time.perf_counter() - t0
    times: list[float] = []
    try:
        async with client.stream("POST", f"{url}/v1/completions", json=body) as resp:
            if resp.status_code != 200:
                r.error = f"HTTP {resp.status_code}: {(await resp.aread())[:200]!r}"
                return
            async for line in resp.aiter_lines():
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    break
                if '"error"' in line[:16]:
                    r.error = json.loads(line[6:])["error"]["message"]
                    break
                if '"finish_reason": null' in line:  # a token (the finish chunk has none)
                    times.append(time.perf_counter() - t0)
    except Exception as e:  # a dropped connection counts as a failed request
        r.error = f"{type(e).__name__}: {e}"
    r.tokens = times


async def _clock_phase(client, url: str, align: float) -> float:
    """Seconds from now until the server's scheduler clock (``/health`` ``clock_s``) is at
    a multiple of `align` (its periodic timers, e.g. an autoscaler tick, then fall at the
    same trace times as in the simulator, whose clock starts with the trace)."""
    t0 = time.perf_counter()
    r = await client.get(f"{url}/health")
    rtt = time.perf_counter() - t0
    c = float(r.json()["clock_s"]) + time.perf_counter() - t0 - rtt / 2  # its clock now
    return (align - c % align) % align


async def _replay(url: str, reqs: list[Replayed], timeout: float, align: float | None) -> float:
    import httpx

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
        wait = 0.0 if align is None else await _clock_phase(client, url, align)
        t0 = time.perf_counter() + wait
        await asyncio.gather(*(_one(client, url, r, t0) for r in reqs))
        return time.perf_counter() - t0


def served_models(url: str) -> list[str]:
    import httpx

    try:
        r = httpx.get(f"{url}/v1/models", timeout=10)
        r.raise_for_status()
        return [m["id"] for m in r.json()["data"]]
    except Exception as e:
        raise InputError("url", f"no OpenAI-compatible server at {url} ({e})") from None


def replay(
    trace: Trace,
    url: str,
    time_scale: float = 1.0,
    mapping: dict[str, str] | None = None,
    slo: Slo = Slo(),
    max_input: int | None = None,
    max_output: int | None = None,
    timeout: float = 600.0,
    align: float | None = None,
) -> tuple[PoolResult, list[Replayed]]:
    """Replay `trace` against `url`; the simulator's metrics of what came back. With
    `align`, time 0 of the trace is when the server's clock is at a multiple of `align`
    seconds (an hpn server's ``/health`` reports its clock)."""
    url = url.rstrip("/")
    reqs = plan(trace, served_models(url), time_scale, mapping, max_input, max_output)
    span = asyncio.run(_replay(url, reqs, timeout, align))
    return measure(reqs, slo, span), reqs


def measure(reqs: list[Replayed], slo: Slo, span: float, policy: str = "server") -> PoolResult:
    """Token times -> the simulator's metrics (a request that errored or came short: 0)."""
    rec = Recorder()
    states = []
    for r in reqs:
        q = Request(r.rid, r.model, r.arrival, r.input_len, r.output_len, slo.ttft, slo.tbt)
        for t in r.tokens or []:
            gap = None if q.generated == 0 else t - q.last_t
            q.emit(t, 0.0, 1)
            rec.tokens(q, t, 0.0, 1, gap)
        if r.error or q.generated < q.output_len:
            q.failed = True
        states.append(q)
    res = summarize(
        states,
        rec.gaps,
        policy=policy,
        gpu="engine",
        gpus=0,
        switches=0,
        busy_gpu_s=0.0,
        span=span,
    )
    res.models = len({r.model for r in reqs})
    return res


def token_table(reqs: list[Replayed]) -> dict[str, np.ndarray]:
    """Every token's time (columns rid, model, k, t) for storing with the run."""
    rid, model, k, t = [], [], [], []
    for r in reqs:
        for j, x in enumerate(r.tokens or []):
            rid.append(r.rid)
            model.append(r.model)
            k.append(j + 1)
            t.append(x)
    return {
        "rid": np.array(rid, dtype=np.int64),
        "model": np.array(model, dtype=object),
        "token": np.array(k, dtype=np.int64),
        "t_s": np.array(t, dtype=np.float64),
    }


def replay_trace(
    url: str,
    trace: str | None = None,
    models: int | None = None,
    rate: float = 0.1,
    duration: float = 60.0,
    seed: int = 0,
    time_scale: float = 1.0,
    mapping: str | None = None,
    slo: Slo = Slo(),
    max_input: int | None = 1024,
    max_output: int | None = 256,
    trace_models: int = 10,
) -> tuple[dict, dict]:
    """The service behind ``hpn pool replay``: (result dict, tables) for a run."""
    from hpn.pool.traces import load_for, market

    if (trace is None) == (models is None):
        raise InputError("trace", "give either a trace file or a number of models (synthetic)")
    if trace is not None:  # as the limit check read it (kept: the file is read once)
        tr = load_for(trace, models=trace_models, seed=seed, duration=duration)
    else:
        assert models is not None  # one of the two, checked above
        tr = market(models, rate, duration, seed=seed)
    mapped = parse_map(mapping)
    warn = fold_warning(assign_models(tr.names, served_models(url.rstrip("/")), mapped))
    res, reqs = replay(tr, url, time_scale, mapped, slo, max_input, max_output)
    out = res.to_json(detail=True)
    if warn is not None:
        out["warning"] = warn
    out["url"] = url
    out["errors"] = sum(1 for r in reqs if r.error)
    return out, {"tokens": token_table(reqs)}
