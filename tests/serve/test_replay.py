"""The replay client against a live server, and its accounting against the references."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from hpn.pool.metrics import slo_attainment, slo_attainment_artifact
from hpn.pool.policies.base import Slo
from hpn.pool.traces.base import Trace
from hpn.serve.replay import Replayed, assign_models, fold_warning, measure, parse_map, plan
from tests.serve.conftest import NEEDS, flat_profile


def test_measure_matches_the_token_by_token_references():
    slo = Slo(1.0, 0.1)
    a = Replayed(0, "m", 0.0, 4, 4, tokens=[0.5, 0.55, 0.9, 0.95])  # one late token
    b = Replayed(1, "m", 1.0, 4, 3, tokens=[1.2, 1.3, 1.4])  # on time
    c = Replayed(2, "m", 2.0, 4, 3, tokens=[2.2], error="HTTP 503")  # failed
    res = measure([a, b, c], slo, span=3.0)
    want = [slo_attainment(r.arrival, r.tokens, slo.ttft, slo.tbt) for r in (a, b)] + [0.0]
    assert res.slo_attainment == pytest.approx(np.mean(want))
    want_a = [slo_attainment_artifact(r.arrival, r.tokens, slo.ttft, slo.tbt) for r in (a, b)]
    assert res.slo_attainment_artifact == pytest.approx(np.mean(want_a + [0.0]))
    assert res.finished == 2 and res.failed == 1
    assert 0 < res.slo_attainment < 1


def test_plan_scales_time_maps_models_and_clips_lengths():
    tr = Trace.build(
        [0.0, 2.0, 4.0], [0, 1, 2], [10, 900, 5], [3, 500, 1], ["a", "b", "c"], ["x"] * 3
    )
    reqs = plan(
        tr, ["m1", "m2"], time_scale=0.5, mapping=parse_map("c=m1"), max_input=64, max_output=32
    )
    assert [r.arrival for r in reqs] == [0.0, 1.0, 2.0]
    assert [r.model for r in reqs] == ["m1", "m2", "m1"]
    assert [(r.input_len, r.output_len) for r in reqs] == [(10, 3), (64, 32), (5, 1)]
    assert assign_models(["a", "b", "c"], ["m1"], {}) == {"a": "m1", "b": "m1", "c": "m1"}


def test_folding_trace_models_onto_fewer_served_ones_warns_once():
    folded = fold_warning(assign_models(["a", "b", "c"], ["m1", "m2"], {}))
    assert folded is not None and "3 trace models folded onto 2" in folded
    assert "\n" not in folded
    assert fold_warning(assign_models(["a", "b"], ["m1", "m2", "m3"], {})) is None


@pytest.mark.parametrize("bad", ["a", "a=", "=b", "a=b,,"])
def test_bad_model_maps_are_refused(bad):
    from hpn.errors import InputError

    with pytest.raises(InputError, match="map"):
        parse_map(bad)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_replay_against_a_live_server_records_every_token(hosts, spec):
    pytest.importorskip("torch", reason=NEEDS)
    import uvicorn

    from hpn.serve.engine import Engine, cluster_for
    from hpn.serve.metrics import ServeMetrics
    from hpn.serve.replay import replay
    from hpn.serve.server import create_app

    eng = Engine(
        hosts,
        spec,
        "serverless",
        cluster_for("serverless", 0, 0, 2),
        profile=flat_profile(hosts),
        sink=ServeMetrics(),
    )
    eng.start()
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(eng), host="127.0.0.1", port=port, log_level="warning")
    )
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        names = ["t0", "t1", "t2"]
        tr = Trace.build(
            [0.0, 0.1, 0.2, 0.3], [0, 1, 2, 0], [6, 12, 3, 8], [5, 3, 4, 2], names, ["x"] * 3
        )
        res, reqs = replay(tr, f"http://127.0.0.1:{port}", slo=Slo(30.0, 1.0))
    finally:
        server.should_exit = True
        th.join(timeout=30)
        eng.stop()
    assert [len(r.tokens) for r in reqs] == [5, 3, 4, 2]
    assert all(r.error is None for r in reqs)
    for r in reqs:
        assert r.sent >= r.arrival - 1e-3
        assert all(b > a for a, b in zip([r.sent, *r.tokens], r.tokens, strict=False))
    assert res.finished == 4 and res.requests == 4
    assert res.slo_attainment == pytest.approx(1.0)


def test_sigterm_stops_the_engine_and_writes_its_timeline(hosts, model_dir, tmp_path):
    pytest.importorskip("torch", reason=NEEDS)
    import json
    import os
    import signal
    import subprocess
    import sys

    import httpx

    prof, tl = tmp_path / "profile.json", tmp_path / "timeline.json"
    prof.write_text(json.dumps(flat_profile(hosts)))
    port = _free_port()
    code = (
        "from hpn.serve.server import serve_models; "
        f"serve_models({str(model_dir)!r}, 'serverless', workers=1, port={port}, "
        f"profile={str(prof)!r}, device='cpu', timeline={str(tl)!r})"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        for _ in range(600):
            assert p.poll() is None, "the server exited early"
            try:
                h = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert h["clock_s"] >= 0.0
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 0  # uvicorn's re-raised SIGTERM no longer kills it
    finally:
        if p.poll() is None:
            p.kill()
    assert json.loads(tl.read_text()) == {"events": [], "requests": []}
