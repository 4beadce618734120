"""The server's metrics sink: the simulator's `Recorder` plus Prometheus series.

TTFT and TBT histograms (seconds), scale-ups, requests by outcome, requests waiting for
their first token and decoding (per model), and the model each instance holds.
"""

from __future__ import annotations

from hpn.pool.metrics import Recorder

# TBT buckets around the 0.1 s SLO, TTFT buckets up to the 10 s SLO and beyond
TBT_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
TTFT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 60.0)


class ServeMetrics(Recorder):
    """`MetricsSink` that also feeds a Prometheus registry (thread-safe)."""

    def __init__(self, engine_ref=None) -> None:
        super().__init__()
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        r = self.registry
        self.ttft = Histogram(
            "hpn_ttft_seconds", "Time to first token", ["model"], buckets=TTFT_BUCKETS, registry=r
        )
        self.tbt = Histogram(
            "hpn_tbt_seconds", "Time between tokens", ["model"], buckets=TBT_BUCKETS, registry=r
        )
        self.switch_count = Counter(
            "hpn_switches", "Model scale-ups", ["instance", "model"], registry=r
        )
        self.requests = Counter(
            "hpn_requests", "Requests by outcome", ["model", "outcome"], registry=r
        )
        self.engine_ref = engine_ref
        r.register(_StateCollector(self))

    def tokens(self, req, t_first, step, n, gap) -> None:
        super().tokens(req, t_first, step, n, gap)
        if gap is None:
            self.ttft.labels(req.model).observe(t_first - req.arrival)
        else:
            self.tbt.labels(req.model).observe(gap)
        for _ in range(n - 1):
            self.tbt.labels(req.model).observe(step)
        if req.done_t >= 0:
            self.requests.labels(req.model, "finished").inc()

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
    """Gauges read at scrape time: queue lengths and the model each instance holds."""

    def __init__(self, m: ServeMetrics):
        self.m = m

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        eng = self.m.engine_ref() if self.m.engine_ref else None
        waiting = GaugeMetricFamily(
            "hpn_waiting_requests", "Requests waiting for their first token", labels=["model"]
        )
        running = GaugeMetricFamily("hpn_running_requests", "Requests decoding", labels=["model"])
        held = GaugeMetricFamily(
            "hpn_instance_model",
            "1 for the model an instance holds (resident), 0.5 pre-loaded",
            labels=["instance", "role", "model"],
        )
        if eng is not None:
            w: dict[str, int] = {}
            r: dict[str, int] = {}
            for req in list(eng.backend.reqs.values()):
                if req.done_t >= 0 or req.failed:
                    continue
                d = w if req.first_t < 0 else r
                d[req.model] = d.get(req.model, 0) + 1
            for m in eng.hosts:
                waiting.add_metric([m], w.get(m, 0))
                running.add_metric([m], r.get(m, 0))
            for inst in eng.backend.instances:
                if inst.resident is not None:
                    held.add_metric([str(inst.iid), inst.role, inst.resident], 1.0)
                if inst.prefetched is not None:
                    held.add_metric([str(inst.iid), inst.role, inst.prefetched], 0.5)
        yield waiting
        yield running
        yield held
