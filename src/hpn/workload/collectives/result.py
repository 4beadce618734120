"""What ``hpn collective`` measured: :class:`CollectiveResult` and its rows (numpy-free, so
the command can name its result without importing the simulator)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

from hpn.result import Result
from hpn.units import format_size


class SizeResult(TypedDict):
    """One size of a sweep: nccl-tests' figures (GB/s = 1e9 bytes/s) of the slowest job."""

    size_bytes: int
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    flows: int
    per_job_busbw_GBps: NotRequired[list[float]]  # with several jobs
    mean_busbw_GBps: NotRequired[float]
    algo: str  # what ran (NCCL_DEBUG=INFO): algorithm, protocol, channels
    proto: str
    channels: int
    predicted_s: NotRequired[float]  # NCCL's own model time (nccl model)


@dataclass
class CollectiveResult(Result):
    """An nccl-tests-style sweep: what ran, on which GPUs and hosts, and one row per size."""

    op: str
    algo: str
    proto: str
    model: str
    gpu: str
    routing: str
    routing_detail: str
    seed: int
    gpus: int
    per_host: int
    hosts: int
    jobs: int
    results: list[SizeResult]
    wall_s: float
    preset: str | None
    nccl: str = "2.30.7"
    host_order: str = "fabric"
    order_seed: int = 1
    first_host: int = 0

    def lines(self) -> list[str]:
        out = [
            f"# {self.op} (algo {self.algo}, proto {self.proto}, {self.model} model"
            f"{' NCCL ' + self.nccl if self.model == 'nccl' else ''}, {self.gpu}) "
            f"on {self.preset}: {self.gpus} GPUs = "
            f"{self.hosts} hosts x {self.per_host}, routing {self.routing} (seed {self.seed}), "
            f"jobs {self.jobs}"
            + (
                f", hosts {self.host_order} (seed {self.order_seed})"
                if self.host_order != "fabric"
                else ""
            )
            + (f", from host {self.first_host}" if self.first_host else ""),
            f"#{'size':>11} {'count':>11} {'type':>6} {'time (us)':>11} {'algbw (GB/s)':>13} "
            f"{'busbw (GB/s)':>13}  {'algo':<9} {'proto':<6} {'ch':>3} {'model (us)':>11}",
        ]
        out += [
            f"{format_size(r['size_bytes']):>12} {r['size_bytes'] // 4:>11} {'float':>6} "
            f"{r['time_s'] * 1e6:>11.1f} {r['algbw_GBps']:>13.2f} {r['busbw_GBps']:>13.2f}  "
            f"{r['algo']:<9} {r['proto']:<6} {r['channels']:>3} "
            f"{r.get('predicted_s', float('nan')) * 1e6:>11.1f}"
            for r in self.results
        ]
        return [*out, f"# wall time {self.wall_s:.2f} s"]
