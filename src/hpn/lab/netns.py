"""Kernel plumbing: iproute2 batches per namespace, entering a namespace from Python, and
removing everything a lab created (namespaces, the processes in them, its state directory).

Every command is confined to namespaces the lab created: ``ip -n NS``, ``tc -n NS``, or a
socket/sysctl opened after ``setns`` into it. Veth pairs are created with both ends directly
in their namespaces, so the host namespace never holds a lab interface.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from hpn.errors import InputError, RunFailure

CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/run/netns")
STATE_ROOT = Path("/run/hpn-lab")
SPAWNED = "spawned.pids"  # pids of the daemons the lab started, as they were started

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


class LabError(RunFailure):
    """A kernel command of the lab failed (not bad input)."""


def available() -> str | None:
    """None when labs can be built here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "the lab needs root (network namespaces)"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "the lab needs iproute2 (ip, tc)"
    probe = f"hlprobe{os.getpid() % 100000}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode:
        return f"network namespaces are unavailable: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def require() -> None:
    reason = available()
    if reason:
        raise InputError("lab", reason)


def run(args: list[str], stdin: str | None = None, check: bool = True) -> str:
    r = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if check and r.returncode:
        head = stdin.splitlines()[0] if stdin else ""
        raise LabError(f"{' '.join(args)} failed: {r.stderr.strip()[:400]} {head[:200]}")
    return r.stdout


def ip_batch(lines: list[str], ns: str | None = None, force: bool = False) -> str:
    """Run ``ip`` commands (one per line) in one process, in namespace ``ns``."""
    if not lines:
        return ""
    args = ["ip"] + (["-n", ns] if ns else []) + (["-force"] if force else []) + ["-batch", "-"]
    return run(args, "\n".join(lines) + "\n", check=not force)


def tc_batch(lines: list[str], ns: str) -> None:
    if lines:
        run(["tc", "-n", ns, "-batch", "-"], "\n".join(lines) + "\n")


@contextlib.contextmanager
def entered(ns: str) -> Iterator[None]:
    """Run the block with this thread in network namespace ``ns`` (sockets opened inside
    stay there; /proc/sys/net shows that namespace)."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(NETNS_DIR / ns, os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET):
            raise LabError(f"setns({ns}): {os.strerror(ctypes.get_errno())}")
        try:
            yield
        finally:
            if _libc.setns(home, CLONE_NEWNET):
                raise LabError("cannot return to the original network namespace")
    finally:
        os.close(target)
        os.close(home)


def write_sysctls(ns: str, values: dict[str, str | int]) -> None:
    """Set ``net.*`` sysctls inside ``ns`` (keys like ``ipv4/ip_forward``)."""
    with entered(ns):
        for key, value in values.items():
            Path("/proc/sys/net", key).write_text(f"{value}\n")


def lab_namespaces(prefix: str) -> list[str]:
    """Namespaces of a lab, by name (``<prefix>-...``)."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(prefix + "-"))


def all_lab_prefixes() -> list[str]:
    """Prefixes of every lab with namespaces or a state directory on this machine."""
    out = set()
    if NETNS_DIR.is_dir():
        out |= {p.name.split("-")[0] for p in NETNS_DIR.iterdir() if p.name.startswith("hl")}
    if STATE_ROOT.is_dir():
        out |= {p.name for p in STATE_ROOT.iterdir() if p.is_dir()}
    return sorted(out)


@contextlib.contextmanager
def locked(prefix: str, what: str = "lab") -> Iterator[None]:
    """Hold the lab's lock (``flock`` on ``/run/hpn-lab/<prefix>.lock``) for the block; a
    second holder gets one line (InputError) at once. The kernel drops the lock when the
    process dies, so a ``kill -9`` never leaves a lab locked."""
    import fcntl

    STATE_ROOT.mkdir(parents=True, exist_ok=True)
    path = STATE_ROOT / f"{prefix}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise InputError(
                what, f"lab {prefix.removeprefix('hl')!r} is busy: pid {holder} holds it"
            ) from None
        try:  # the file may have been unlinked by a holder that finished: lock the new one
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        if not lab_namespaces(prefix) and not state_dir(prefix).exists():
            with contextlib.suppress(OSError):
                path.unlink()  # nothing of the lab is left: neither is its lock
        os.close(fd)


def ns_pids(ns: str) -> list[int]:
    out = run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in out.split()]


def state_dir(prefix: str) -> Path:
    return STATE_ROOT / prefix


def remove_lab(prefix: str) -> dict[str, int]:
    """Remove a lab, complete or half-built: kill the processes inside its namespaces (by
    pid), delete the namespaces (their veths go with them) and its state directory."""
    names = lab_namespaces(prefix)
    spawned = state_dir(prefix) / SPAWNED
    started = [int(x) for x in spawned.read_text().split()] if spawned.exists() else []
    pids: list[int] = []
    for _ in range(5):  # a daemon caught mid-fork leaves a child: list again until none
        found = sorted({p for ns in names for p in ns_pids(ns)} - {os.getpid()} - set(pids))
        if not found:
            break
        _kill(found)
        pids += found
    for pid in pids + started:  # FRR keeps per-process crash-log directories there
        for d in Path("/var/tmp/frr").glob(f"*.{pid}"):
            shutil.rmtree(d, ignore_errors=True)
    if names:
        ip_batch([f"netns del {n}" for n in names], force=True)
    for n in lab_namespaces(prefix):  # a name left without its mount
        with contextlib.suppress(OSError):
            (NETNS_DIR / n).unlink()
    d = state_dir(prefix)
    existed = d.exists()
    shutil.rmtree(d, ignore_errors=True)
    return {"namespaces": len(names), "processes": len(pids), "state_dirs": int(existed)}


def _kill(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL whatever is still alive after 3 s."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 3.0
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _alive(p)]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def link_stats(ns: str) -> dict[str, dict]:
    """Interface name -> {tx_bytes, rx_bytes, tx_packets, rx_packets, up} in ``ns``."""
    data = json.loads(run(["ip", "-n", ns, "-s", "-j", "link", "show"]) or "[]")
    out = {}
    for d in data:
        s = d.get("stats64") or d.get("stats") or {}
        tx, rx = s.get("tx", {}), s.get("rx", {})
        out[d["ifname"]] = {
            "tx_bytes": int(tx.get("bytes", 0)),
            "rx_bytes": int(rx.get("bytes", 0)),
            "tx_packets": int(tx.get("packets", 0)),
            "rx_packets": int(rx.get("packets", 0)),
            "up": "UP" in d.get("flags", []) and "NO-CARRIER" not in d.get("flags", []),
        }
    return out


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)
