"""Runs started from the dashboard: a bounded queue, one worker thread, status to poll.

Jobs call the runnable registry in-process (no shell) and record through the store.
"""

from __future__ import annotations

import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hpn.errors import InputError
from hpn.store.record import record_run
from hpn.store.runnable import get

MAX_PENDING = 8


@dataclass
class Job:
    id: str
    command: str
    config: dict[str, Any]
    status: str = "queued"  # queued | running | done | failed
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    run_id: str | None = None
    error: str | None = None

    def view(self) -> dict[str, Any]:
        d = asdict(self)
        end = self.finished or time.time()
        d["elapsed_s"] = round(end - self.started, 2) if self.started else 0.0
        return d


class Jobs:
    def __init__(self, root: Path, workers: int = 1):
        self.root = root
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hpn-job")

    def submit(self, command: str, config: dict[str, Any]) -> Job:
        r = get(command)
        r.check_limits(config)
        with self._lock:
            pending = sum(j.status in ("queued", "running") for j in self.jobs.values())
            if pending >= MAX_PENDING:
                raise InputError("jobs", f"{pending} runs pending; wait for some to finish")
            job = Job(secrets.token_hex(6), command, config)
            self.jobs[job.id] = job
        self._pool.submit(self._run, job)
        return job

    def _run(self, job: Job) -> None:
        job.status, job.started = "running", time.time()
        try:
            out = get(job.command)(job.config)
            folder = record_run(
                job.command,
                out.config or job.config,
                out.result,
                out.tables,
                plots=True,
                root=self.root,
                wall_s=out.wall_s,
                label=f"{job.command} (dashboard)",
            )
            from hpn.store.run import Run

            job.run_id, job.status = Run(folder).id, "done"
        except Exception as e:  # noqa: BLE001 - shown to the user on the job's page
            job.status, job.error = "failed", str(e).splitlines()[0] if str(e) else repr(e)
        finally:
            job.finished = time.time()

    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
