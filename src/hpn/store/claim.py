"""One writer per run folder, and cleaning up after killed writers.

A run folder is claimed with a lock file next to it (``.NAME.lock``, ``flock``), taken before
the compute and held until the finished run is renamed into place; a second run into the same
folder is refused at once, naming the holder's pid. The kernel drops a dead process's lock, so
a kill never leaves a folder claimed. Staging folders (``.NAME.part-PID``) of dead writers are
removed by the next run into the same parent folder, or by :func:`collect` (``hpn runs gc``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hpn.errors import InputError, os_error

PART = ".part-"
LOCK = ".lock"
_HELD: dict[Path, list[int]] = {}  # folder -> [fd, depth]: this process's claims


def lock_path(folder: Path) -> Path:
    return folder.parent / f".{folder.name}{LOCK}"


@contextmanager
def claim(folder: Path, field: str = "--out") -> Iterator[None]:
    """Hold ``folder``'s lock (re-entrant in one process); InputError if another holds it."""
    folder = Path(folder)
    held = _HELD.get(folder)
    if held is not None:
        held[1] += 1
    else:
        _HELD[folder] = held = [_acquire(folder, field), 1]
    try:
        yield
    finally:
        held[1] -= 1
        if held[1] == 0:
            del _HELD[folder]
            _release(folder, held[0])


def _acquire(folder: Path, field: str) -> int:
    path = lock_path(folder)
    for _ in range(20):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise os_error(e, path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (pid {pid})" if pid.isdigit() else ""
            raise InputError(
                field, f"{folder}: another run{who} is writing into it; give another folder"
            ) from None
        try:  # the previous holder may have removed the file between our open and lock
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd
        os.close(fd)
    raise InputError(field, f"{folder}: could not take its lock")


def _release(folder: Path, fd: int) -> None:
    with contextlib.suppress(OSError):  # while still holding it: the next opens a fresh file
        os.unlink(lock_path(folder))
    os.close(fd)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clear_stale(parent: Path, name: str = "*") -> int:
    """Remove staging folders (``.NAME.part-PID``) under ``parent`` whose writer is dead."""
    n = 0
    if not parent.is_dir():
        return 0
    for p in parent.glob(f".{name}{PART}*"):
        pid = p.name.rsplit(PART, 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)
            n += 1
    return n


def _stale_lock(path: Path) -> bool:
    """Remove a lock file nobody holds; whether it was removed."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    try:
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            os.unlink(path)
            return True
        return False
    except OSError:
        return False
    finally:
        os.close(fd)


def collect(root: Path, depth: int = 3) -> dict[str, int]:
    """Remove, under ``root`` (``depth`` folders down), staging folders of dead writers and
    lock files nobody holds; counts of each."""
    staging = locks = 0
    folders = [Path(root)]
    for _ in range(depth + 1):
        nxt = []
        for d in folders:
            if not d.is_dir():
                continue
            staging += clear_stale(d)
            for p in d.iterdir():
                if p.name.startswith(".") and p.name.endswith(LOCK) and p.is_file():
                    locks += _stale_lock(p)
                elif p.is_dir() and not p.is_symlink() and not p.name.startswith("."):
                    nxt.append(p)
        folders = nxt
    return {"staging": staging, "locks": locks}


def report(root: Path) -> str:
    """:func:`collect` under ``root``, said in one line (``hpn runs gc``)."""
    c = collect(root)
    return f"removed {c['staging']} staging folder(s), {c['locks']} lock(s) in {root}"
