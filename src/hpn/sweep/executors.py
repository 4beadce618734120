"""Where sweep points run: inline, a local process pool, or dask.distributed.

Each executor takes a list of keyword-argument dicts for :func:`run_point` and yields the
point results as they complete.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import partial
from typing import Any

from hpn.errors import InputError
from hpn.sweep.worker import run_point

Task = dict[str, Any]


def _call(task: Task) -> dict[str, Any]:
    return run_point(**task)  # dask's submit() reserves the keyword "key"


def run_inline(tasks: list[Task]) -> Iterator[dict[str, Any]]:
    for t in tasks:
        yield run_point(**t)


def _watch_parent(parent: int) -> None:
    """In a pool worker: exit as soon as the driver is gone (e.g. ``kill -9``)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="hpn-watch-parent").start()


def _on_processes(
    fn: Callable[..., Any], tasks: list[Task], workers: int, **extra: Any
) -> Iterator[Any]:
    """``fn(**task, **extra)`` in a spawn-started process pool, results as they complete;
    workers drop their result and exit if the driver dies."""
    me = os.getpid()
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(workers, ctx, initializer=_watch_parent, initargs=(me,)) as pool:
        futures = [pool.submit(fn, **t, **extra) for t in tasks]
        try:
            for f in as_completed(futures):
                yield f.result()
        finally:
            for f in futures:
                f.cancel()


def run_processes(tasks: list[Task], workers: int) -> Iterator[dict[str, Any]]:
    """The sweep's points in a process pool (:func:`_on_processes`); each point knows the
    driver's pid."""
    yield from _on_processes(run_point, tasks, workers, parent_pid=os.getpid())


def check_address(address: str) -> None:
    if address != "local" and not address.startswith(("tcp://", "tls://")):
        raise InputError(
            "--dask", f"give 'local' or a scheduler address tcp://HOST:PORT, got {address!r}"
        )


def run_dask(tasks: list[Task], workers: int, address: str) -> Iterator[dict[str, Any]]:
    """On a LocalCluster bound to 127.0.0.1, or on the scheduler at ``address``."""
    yield from _on_dask(_call, tasks, workers, address)


def _apply(fn: Callable[..., Any], task: Task) -> Any:
    return fn(**task)


EXECUTORS = ("inline", "processes", "dask")


def run_calls(
    fn: Callable[..., Any],
    tasks: list[Task],
    executor: str = "inline",
    workers: int = 1,
    address: str = "local",
) -> Iterator[Any]:
    """``fn(**task)`` for each task, results as they complete (any order).

    Parameters
    ----------
    fn
        A module-level function (it is pickled by name for processes and dask).
    tasks
        Its keyword arguments, one dict per call.
    executor
        ``inline``, ``processes`` (a spawn-started pool) or ``dask`` (a LocalCluster on
        127.0.0.1, or the scheduler at ``address``).
    workers
        Processes or dask workers.
    address
        ``local`` or ``tcp://HOST:PORT`` (dask only).

    Yields
    ------
    Any
        Each call's return value.
    """
    if executor == "inline":
        for t in tasks:
            yield fn(**t)
    elif executor == "processes":
        yield from _on_processes(fn, tasks, workers)
    elif executor == "dask":
        yield from _on_dask(partial(_apply, fn), tasks, workers, address)
    else:
        raise InputError("--executor", f"one of {', '.join(EXECUTORS)}, got {executor!r}")


def _on_dask(
    fn: Callable[[Task], Any], tasks: list[Task], workers: int, address: str
) -> Iterator[Any]:
    check_address(address)
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("--dask", "dask is not installed; pip install 'hpn[dist]'") from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=40,
        )
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=10)
        except OSError as e:
            raise InputError("--dask", f"cannot reach scheduler {address}: {e}") from None
    try:
        futures = [client.submit(fn, t, pure=False) for t in tasks]
        for f in dask_completed(futures):
            yield f.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
