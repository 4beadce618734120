"""Assemble a serving engine: model store -> host weights -> `EngineBackend` -> policy.

`Engine` is the service object the HTTP server, the simulator check and the tests share:
it loads every checkpoint of a folder into host memory, builds the instances of a
`Cluster`, and drives them with one of the pool's policies through the backend contract.
Without a fitted profile (`hpn serve profile`) it measures a small one at start-up, so the
policies' estimates are always this device's.
"""

from __future__ import annotations

import math
import threading

from hpn.errors import InputError
from hpn.pool.backend import Cluster
from hpn.pool.metrics import Recorder
from hpn.pool.policies import get_policy
from hpn.pool.policies.base import PolicyContext, Slo
from hpn.pool.requests import Request
from hpn.serve import profile as profiles
from hpn.serve.backend import EngineBackend
from hpn.serve.device import DeviceSpec
from hpn.serve.hosts import load_hosts  # noqa: F401  (re-exported)
from hpn.serve.runner import Seq
from hpn.serve.weights import HostModel

MAX_INSTANCES = 64
QUICK_LENS, QUICK_BATCHES = (16, 128), (1, 8)


def cluster_for(policy: str, prefill: int, decode: int, workers: int) -> Cluster:
    """The cluster a policy needs: a prefill/decode split or colocated workers."""
    cls = get_policy(policy)
    if cls.split:
        if prefill < 1 or decode < 1:
            raise InputError(
                "prefill", f"{cls.name} needs at least one prefill and one decode instance"
            )
        n = prefill + decode
        cl = Cluster(n, prefill, decode, 1)
    else:
        n = workers if workers else prefill + decode
        if n < 1:
            raise InputError("workers", f"{cls.name} needs at least one instance")
        cl = Cluster(n, 0, 0, 1)
    if n > MAX_INSTANCES:
        raise InputError("instances", f"at most {MAX_INSTANCES}, got {n}")
    return cl


def startup_s(cls, options: dict) -> float:
    """The engine start-up a policy's options configure (``startup``), 0 if not given:
    the engine then starts as long as building the model takes (what it measures)."""
    return float(options.get("startup", 0.0)) if cold_start(cls, options) else 0.0


def cold_start(cls, options: dict) -> bool:
    """Whether a policy's system starts an engine per scale-up (its own `loader` charges
    a start-up), so the engine builds the model afresh instead of reusing one."""
    from hpn.gpus import get_gpu

    loader = cls.loader(get_gpu("h800"), "optimized", options)
    return loader is not None and loader.startup_s > 0


class Engine:
    """A policy driving real models on `cluster` instances of `spec`."""

    def __init__(
        self,
        hosts: dict[str, HostModel],
        spec: DeviceSpec,
        policy: str,
        cluster: Cluster,
        profile: dict | None = None,
        slo: Slo = Slo(),
        rates: dict[str, float] | None = None,
        options: dict | None = None,
        sink=None,
        timeline: bool = False,
        kv_blocks: int | None = None,
    ):
        self.hosts, self.spec, self.slo, self.cluster = hosts, spec, slo, cluster
        if profile is None:
            n = sum(k for _, k in cluster.roles())
            profile = profiles.measure(
                hosts, spec, QUICK_LENS, QUICK_BATCHES, repeats=1, concurrent=min(n, 8)
            )
        self.profile = profile
        self.sink = sink if sink is not None else Recorder()
        cls = get_policy(policy)
        self.cold_start = cold_start(cls, options or {})
        backend_cls: type[EngineBackend] = EngineBackend
        if timeline:  # an event log of every operation (hpn.serve.timeline)
            from hpn.serve.timeline import traced

            backend_cls = traced(EngineBackend)
        self.startup_s = startup_s(cls, options or {})
        self.backend = backend_cls(
            cluster, self.sink, hosts, spec, self.cold_start, kv_blocks, self.startup_s
        )
        self.kv_bytes_per_token = {
            m: float(h.info.kv_bytes_per_token(spec.elem_bytes)) for m, h in hosts.items()
        }
        self.predictor = profiles.predictor(
            profile, self.kv_bytes_per_token, self.cold_start, self.startup_s
        )
        rates = rates or {m: 1.0 for m in hosts}
        ctx = PolicyContext(self.backend, self.predictor, cluster, rates, slo)
        self.policy = cls(ctx, **(options or {}))
        self._rid = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # --- a trace, in this thread -----------------------------------------------------------
    def run(self, reqs: list[Request], until: float = math.inf) -> None:
        """Serve `reqs` (arrival times from now) until idle or `until` seconds."""
        self.backend.run(reqs, self.policy.on_arrival, until)

    # --- requests from other threads (the HTTP server) --------------------------------------
    def start(self) -> None:
        """Run the scheduler loop on its own thread."""
        self.backend.reset_clock()
        self.backend.forget_after = 60.0
        self._thread = threading.Thread(
            target=self.backend.loop, name="hpn-serve-scheduler", daemon=True
        )
        self._thread.start()

    def submit(
        self, seq_args: dict, on_token, ttft: float | None = None, tbt: float | None = None
    ) -> int:
        """Queue a request (thread-safe); `on_token(req, seq, token, t)` runs on the
        scheduler thread for each token. Returns the request id."""
        with self._lock:
            self._rid += 1
            rid = self._rid
        seq = Seq(rid=rid, **seq_args)
        seq.on_token = on_token

        def arrive():
            b = self.backend
            req = Request(
                rid,
                seq.model,
                b.now(),
                len(seq.prompt),
                seq.max_new,
                self.slo.ttft if ttft is None else ttft,
                self.slo.tbt if tbt is None else tbt,
            )
            b.register(req, seq)
            self.policy.on_arrival(req)

        self.backend.post(arrive)
        return rid

    def abort(self, rid: int, reason: str = "abort") -> None:
        """End request `rid` at its next step boundary (thread-safe; see
        `EngineBackend.abort`)."""
        self.backend.post(self.backend.abort, rid, reason)

    def max_len(self, model: str) -> int:
        """Context tokens a request of `model` may reach: the model's own length
        (``max_position_embeddings``), at most what one instance's KV pool holds."""
        return min(self.hosts[model].info.max_len, self.backend.max_context)

    def stop(self) -> None:
        self.backend.stop()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.backend.close()
