"""Lab tests need root and network namespaces: they skip, saying why, where either is missing.

Every test lab gets a fresh name (``t`` + 3 random characters) that no lab on the machine
has, and a marker ``/run/hpn-lab/<prefix>.test`` holding the test process's pid, written
before the lab is built. Teardown removes the lab and its marker, also on SIGTERM; a run
killed with SIGKILL leaves a marker whose pid is dead, and the next run removes that lab.
A user's labs (no marker, or a live owner) are never touched, so tests pass with them up.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import string

import pytest

from hpn.lab import netns

_REASON = netns.available() if os.name == "posix" else "the lab needs Linux"
_CHARS = string.ascii_lowercase + string.digits


def _marker(prefix: str):
    return netns.STATE_ROOT / f"{prefix}.test"


def _owner_alive(prefix: str) -> bool:
    try:
        pid = int(_marker(prefix).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def pytest_configure(config):
    config.addinivalue_line("markers", "lab: builds a network-namespace lab (root, Linux)")
    if _REASON or hasattr(config, "workerinput") or not netns.STATE_ROOT.is_dir():
        return
    for m in netns.STATE_ROOT.glob("*.test"):  # test labs of a run killed with SIGKILL
        prefix = m.name.removesuffix(".test")
        if not _owner_alive(prefix):
            netns.remove_lab(prefix)
            with contextlib.suppress(OSError):
                (netns.STATE_ROOT / f"{prefix}.lock").unlink()
            m.unlink(missing_ok=True)


def pytest_collection_modifyitems(config, items):
    if not _REASON:
        return
    skip = pytest.mark.skip(reason=f"lab unavailable: {_REASON}")
    for item in items:
        if "lab" in item.keywords:
            item.add_marker(skip)


def _taken(prefix: str) -> bool:
    return bool(
        netns.lab_namespaces(prefix)
        or netns.state_dir(prefix).exists()
        or (netns.STATE_ROOT / f"{prefix}.lock").exists()
        or _marker(prefix).exists()
    )


def fresh_name() -> str:
    """A lab name no lab on this machine uses, marked as this test process's."""
    netns.STATE_ROOT.mkdir(parents=True, exist_ok=True)
    while True:
        name = "t" + "".join(secrets.choice(_CHARS) for _ in range(3))
        prefix = "hl" + name
        if _taken(prefix):
            continue
        try:
            fd = os.open(_marker(prefix), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        os.write(fd, f"{os.getpid()}\n".encode())
        os.close(fd)
        return name


def drop(name: str) -> None:
    prefix = "hl" + name
    netns.remove_lab(prefix)
    with contextlib.suppress(OSError):
        (netns.STATE_ROOT / f"{prefix}.lock").unlink()
    _marker(prefix).unlink(missing_ok=True)


@pytest.fixture
def lab_name():
    """A lab name of this test alone; its lab is removed afterwards, whatever happens."""
    name = fresh_name()

    def stop(signum, frame):  # SIGTERM: unwind so this teardown still removes the lab
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield name
    finally:
        signal.signal(signal.SIGTERM, previous)
        drop(name)
