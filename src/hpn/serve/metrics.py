"""The server's metrics sink: the simulator's `Recorder` plus Prometheus series.

vLLM's names, labels and buckets (`vllm/v1/metrics/loggers.py`, v0.11), label
``model_name``: ``vllm:time_to_first_token_seconds``, ``vllm:inter_token_latency_seconds``,
``vllm:e2e_request_latency_seconds``, ``vllm:request_queue_time_seconds`` (arrival to
first scheduled), ``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
``vllm:request_success_total`` (by ``finished_reason``), ``vllm:num_preemptions_total``,
and at scrape time ``vllm:num_requests_running`` / ``vllm:num_requests_waiting`` (a
preempted request waits) and ``vllm:kv_cache_usage_perc`` (0..1, per instance: label
``engine``). This pool's own under ``hpn_``: scale-ups, requests by outcome (failed,
aborted included) and the model each instance holds.
"""

from __future__ import annotations

from hpn.pool.metrics import Recorder

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0)  # fmt: skip
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
LABEL = ["model_name"]


class ServeMetrics(Recorder):
    """`MetricsSink` that also feeds a Prometheus registry (thread-safe)."""

    def __init__(self, engine_ref=None) -> None:
        super().__init__()
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        r = self.registry

        def hist(name, doc, buckets):
            return Histogram(name, doc, LABEL, buckets=buckets, registry=r)

        self.ttft = hist("vllm:time_to_first_token_seconds", "Time to first token", TTFT_BUCKETS)
        self.itl = hist("vllm:inter_token_latency_seconds", "Inter-token latency", ITL_BUCKETS)
        self.e2e = hist("vllm:e2e_request_latency_seconds", "End-to-end latency", E2E_BUCKETS)
        self.queue = hist(
            "vllm:request_queue_time_seconds", "Arrival to first scheduled", E2E_BUCKETS
        )
        self.prompt_tokens = Counter("vllm:prompt_tokens", "Prefill tokens", LABEL, registry=r)
        self.gen_tokens = Counter("vllm:generation_tokens", "Generated tokens", LABEL, registry=r)
        self.success = Counter(
            "vllm:request_success",
            "Finished requests by reason",
            LABEL + ["finished_reason"],
            registry=r,
        )
        self.preemptions = Counter(
            "vllm:num_preemptions", "Requests preempted (KV recomputed)", LABEL, registry=r
        )
        self.switch_count = Counter(
            "hpn_switches", "Model scale-ups", ["instance", "model_name"], registry=r
        )
        self.requests = Counter(
            "hpn_requests", "Requests by outcome", LABEL + ["outcome"], registry=r
        )
        self.engine_ref = engine_ref
        r.register(_StateCollector(self))

    def tokens(self, req, t_first, step, n, gap) -> None:
        super().tokens(req, t_first, step, n, gap)
        m = req.model
        if gap is None:
            self.ttft.labels(m).observe(t_first - req.arrival)
            self.prompt_tokens.labels(m).inc(req.input_len)
        else:
            self.itl.labels(m).observe(gap)
        for _ in range(n - 1):
            self.itl.labels(m).observe(step)
        self.gen_tokens.labels(m).inc(n)

    def scheduled(self, req, t) -> None:
        """`req` was first scheduled (its prefill started) at `t`."""
        self.queue.labels(req.model).observe(max(0.0, t - req.arrival))

    def ended(self, req, seq) -> None:
        """`req` finished (`seq.end_reason`: why it was aborted, empty if it ran out)."""
        if seq.end_reason == "abort":
            self.requests.labels(req.model, "aborted").inc()
            return
        reason = seq.end_reason or ("stop" if seq.out and seq.out[-1] in seq.eos else "length")
        self.success.labels(req.model, reason).inc()
        self.e2e.labels(req.model).observe(req.done_t - req.arrival)
        self.requests.labels(req.model, "finished").inc()

    def preempted(self, req) -> None:
        self.preemptions.labels(req.model).inc()

    def switched(self, inst, model, t) -> None:
        super().switched(inst, model, t)
        self.switch_count.labels(str(inst.iid), model).inc()

    def failed(self, req) -> None:
        super().failed(req)
        self.requests.labels(req.model, "failed").inc()
        eng = self.engine_ref() if self.engine_ref else None
        seq = eng.backend.seqs.get(req.rid) if eng is not None else None
        if seq is not None and seq.on_token is not None:
            seq.on_token(req, seq, None, -1.0)

    def text(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _StateCollector:
    """Gauges read at scrape time: queues, KV usage and the model each instance holds."""

    def __init__(self, m: ServeMetrics):
        self.m = m

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        eng = self.m.engine_ref() if self.m.engine_ref else None
        waiting = GaugeMetricFamily(
            "vllm:num_requests_waiting", "Requests waiting to be scheduled", labels=LABEL
        )
        running = GaugeMetricFamily(
            "vllm:num_requests_running", "Requests in model execution batches", labels=LABEL
        )
        usage = GaugeMetricFamily(
            "vllm:kv_cache_usage_perc",
            "KV-cache usage, 1 = every block in use",
            labels=LABEL + ["engine"],
        )
        held = GaugeMetricFamily(
            "hpn_instance_model",
            "1 for the model an instance holds (resident), 0.5 pre-loaded",
            labels=["instance", "role", "model_name"],
        )
        if eng is not None:
            w: dict[str, int] = {}
            r: dict[str, int] = {}
            be = eng.backend
            for req in list(be.reqs.values()):
                seq = be.seqs.get(req.rid)
                if req.done_t >= 0 or req.failed or seq is None or seq.cancelled:
                    continue
                d = w if req.first_t < 0 or seq.preempted else r
                d[req.model] = d.get(req.model, 0) + 1
            for m in eng.hosts:
                waiting.add_metric([m], w.get(m, 0))
                running.add_metric([m], r.get(m, 0))
            for inst in be.instances:
                usage.add_metric([inst.resident or "", str(inst.iid)], be.kv[inst.iid].usage())
                if inst.resident is not None:
                    held.add_metric([str(inst.iid), inst.role, inst.resident], 1.0)
                if inst.prefetched is not None:
                    held.add_metric([str(inst.iid), inst.role, inst.prefetched], 0.5)
        yield waiting
        yield running
        yield usage
        yield held
