"""Runs started from the dashboard: a bounded queue and a bounded set of worker processes.

Each job runs in its own process, forked from a fork server (:func:`hpn.app.run` there,
never a shell), under a memory cap (``RLIMIT_AS``) and a wall-clock cap; at most ``workers`` run at
once and at most ``MAX_PENDING`` wait or run. A job can be cancelled while it waits or runs
(its process is killed; the store's staging keeps a half-written run out of the index).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import re
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpn.app import command as get
from hpn.app import run
from hpn.config import files_within
from hpn.errors import InputError

MAX_PENDING = 8  # queued + running
WORKERS = 2  # processes at once
MEMORY_CAP = 4 * 2**30  # bytes of address space per job
TIME_CAP = 600.0  # seconds of wall clock per job
KEEP = 200  # finished jobs remembered
PRELOAD = ["hpn.store.record", "hpn.app", "hpn.plots", "numpy"]


_QUOTED = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")


def withhold(message: str, sent: str) -> str:
    """``message`` with every quoted text the client did not send itself replaced by ``'...'``
    (a file's contents never reach the page)."""

    def keep(m: re.Match[str]) -> str:
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        return m.group(0) if inner and inner in sent else "'...'"

    return _QUOTED.sub(keep, message)


@dataclass
class Job:
    id: str
    command: str
    config: dict[str, Any]
    status: str = "queued"  # queued | running | done | failed | cancelled
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    run_id: str | None = None
    error: str | None = None
    _proc: Any = field(default=None, repr=False)
    _cancel: bool = field(default=False, repr=False)

    def view(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        end = self.finished or time.time()
        d["elapsed_s"] = round(end - self.started, 2) if self.started else 0.0
        return d


def _work(
    command: str,
    config: dict[str, Any],
    root: str,
    data: str | None,
    memory: int,
    path: list[str],
    conn,
) -> None:
    """In the job's process: cap the memory, compute, record; send (status, run id | error)."""
    import resource
    import sys

    sys.path[:0] = [p for p in path if p not in sys.path]  # the fork server's may be older
    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        from hpn.plots import render_run
        from hpn.store.record import record_outcome
        from hpn.store.run import Run

        with files_within(data):  # the config is parsed again here: same rule as at submit
            out = run(command, config)
        folder = record_outcome(
            command,
            out,
            config,
            plots=render_run,
            root=Path(root),
            label=f"{command} (dashboard)",
        )
        conn.send(("done", Run(folder).id))
    except MemoryError:
        conn.send(("failed", f"ran out of its memory cap ({memory / 2**30:g} GiB)"))
    except Exception as e:  # noqa: BLE001 - shown to the user on the job's page
        conn.send(("failed", str(e).splitlines()[0] if str(e) else type(e).__name__))


class Jobs:
    """The dashboard's jobs: submit, list, get, cancel."""

    def __init__(
        self,
        root: Path,
        workers: int = WORKERS,
        *,
        memory: int = MEMORY_CAP,
        time_cap: float = TIME_CAP,
        data: Path | None = None,
    ):
        self.root, self.memory, self.time_cap = root, memory, time_cap
        self.data = data
        self.workers = workers
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(workers)
        # a fork server with the heavy modules loaded: each job forks from it in milliseconds,
        # and no job inherits the web server's threads or state
        self._ctx = mp.get_context("forkserver")
        self._ctx.set_forkserver_preload(PRELOAD)

    def limits(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "pending": MAX_PENDING,
            "memory_bytes": self.memory,
            "time_s": self.time_cap,
        }

    def submit(self, command: str, config: dict[str, Any]) -> Job:
        get(command).parse(config)  # bad input and size limits, before the job is queued
        with self._lock:
            pending = sum(j.status in ("queued", "running") for j in self.jobs.values())
            if pending >= MAX_PENDING:
                raise InputError("jobs", f"{pending} runs pending (at most {MAX_PENDING}); wait")
            job = Job(secrets.token_hex(6), command, config)
            self.jobs[job.id] = job
            self._forget()
        threading.Thread(target=self._run, args=(job,), daemon=True, name="hpn-job").start()
        return job

    def _forget(self) -> None:
        done = [j for j in self.jobs.values() if j.status not in ("queued", "running")]
        for j in done[: max(0, len(done) - KEEP)]:
            del self.jobs[j.id]

    def _run(self, job: Job) -> None:
        with self._slots:
            with self._lock:
                if job._cancel:
                    return
                recv, send = self._ctx.Pipe(duplex=False)
                path = list(sys.path)  # where plug-ins' entry points are found
                proc = self._ctx.Process(
                    target=_work,
                    args=(
                        job.command,
                        job.config,
                        str(self.root),
                        str(self.data) if self.data is not None else None,
                        self.memory,
                        path,
                        send,
                    ),
                    daemon=True,
                    name=f"hpn-job-{job.id}",
                )
                proc.start()
                send.close()
                job._proc, job.status, job.started = proc, "running", time.time()
            status, detail = "failed", None
            if recv.poll(self.time_cap):
                try:
                    status, detail = recv.recv()
                except EOFError:
                    detail = None
            else:
                detail = f"ran past its time cap ({self.time_cap:g} s)"
            if status != "done" and proc.is_alive():
                proc.kill()
            proc.join(10)
            with self._lock:
                job.finished = time.time()
                if job._cancel:
                    job.status, job.error = "cancelled", None
                elif status == "done":
                    job.status, job.run_id = "done", detail
                else:
                    code = proc.exitcode
                    job.status = "failed"
                    sent = json.dumps(job.config, ensure_ascii=False)
                    job.error = withhold(
                        detail or f"the job's process died (exit code {code})", sent
                    )
            recv.close()

    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def list(self) -> list[Job]:
        return sorted(self.jobs.values(), key=lambda j: j.submitted, reverse=True)

    def cancel(self, job_id: str) -> Job | None:
        """Stop a queued or running job (its process is killed); None if there is none."""
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None:
                return None
            if job.status in ("queued", "running"):
                job._cancel = True
                if job.status == "queued":
                    job.status, job.finished = "cancelled", time.time()
                elif job._proc is not None and job._proc.is_alive():
                    job._proc.kill()
            return job

    def shutdown(self) -> None:
        for job in list(self.jobs.values()):
            self.cancel(job.id)
