"""What ``hpn fail`` measured: :class:`FailResult` and its parts (numpy-free, so the command
can name its result without importing the simulator)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypedDict

from hpn.result import Result


class FaultSummary(TypedDict):
    """A fault of a run: as given, how many links it takes down, the first of them; of its
    directed links, how many the hosts, the network and only the senders' re-selection route
    around (:mod:`hpn.failures.failover`), the longest hold (s) and the iteration's flows it
    blackholes until re-selection (no switch of their plane reaches the destination)."""

    fault: str
    links_down: int
    first_link: str
    moved_by_host: int
    moved_by_network: int
    moved_by_sender_reselect: int
    held_max_s: float | None
    flows_cut_off: int


class CrashEvent(TypedDict):
    """One crash, s: the NIC cut-off that caused it, the crash (cut-off + timeout), the
    restart, the work lost since the last checkpoint, and the start of the iteration it hit."""

    cut_off_s: float
    crash_s: float
    restart_s: float
    lost_work_s: float
    iteration_start_s: float


@dataclass
class TimelineFigures:
    """What the job did across the outages (:func:`hpn.failures.timeline.run_timeline`)."""

    baseline_samples_per_s: float
    samples_per_s_during_fault: float
    throughput_loss: float
    halted_s: float
    blackholed_s: float  # some flow of the job held on a link nobody routed around yet
    crashed: bool
    crashes: int
    lost_work_s: float
    job_time_lost_s: float
    fault_window_s: list[float]  # [start, end]: from the first fault to its last effect
    iteration_s: float
    slowest_iteration_s: float
    iterations: int
    samples_per_iteration: float
    horizon_s: float
    simulations: int
    crash_events: list[CrashEvent]

    def figures(self) -> dict[str, Any]:
        """The figures by name (shallow: ``FailResult(**setting, **figures)``)."""
        return {f.name: getattr(self, f.name) for f in fields(TimelineFigures)}


@dataclass
class _FailSetting(Result):
    """The setting of an ``hpn fail`` run (the fields :class:`FailResult` shows first)."""

    preset: str | None
    design: str
    routing: str
    routing_detail: str
    seed: int
    job: str
    gpus: int
    faults: list[FaultSummary]
    timeout_s: float
    checkpoint_interval_s: float
    restart_s: float


@dataclass
class FailResult(TimelineFigures, _FailSetting):
    """A job's iterations across injected faults: the run's setting, throughput during the
    faults, halts, crashes and the work and time they cost."""

    wall_s: float

    title = "hpn fail"

    def rows(self) -> list[tuple[str, Any]]:
        return [
            ("fabric / design", f"{self.preset} / {self.design}"),
            ("job", f"{self.job} on {self.gpus} GPUs"),
            ("faults", "; ".join(f["fault"] for f in self.faults)),
            ("baseline samples/s", f"{self.baseline_samples_per_s:.1f}"),
            ("samples/s during fault", f"{self.samples_per_s_during_fault:.1f}"),
            ("throughput loss", f"{self.throughput_loss:.2%}"),
            ("halted", f"{self.halted_s:.1f} s"),
            ("flows blackholed", f"{self.blackholed_s:.2f} s"),
            ("crashed", f"{self.crashed} ({self.crashes})"),
            ("lost work", f"{self.lost_work_s:.0f} s"),
            ("job time lost", f"{self.job_time_lost_s:.1f} s"),
            (
                "iteration healthy / slowest",
                f"{self.iteration_s:.3f} / {self.slowest_iteration_s:.3f} s",
            ),
            ("simulations", self.simulations),
        ]
