"""What a lab may leave on the machine: namespaces, interfaces in the host namespace,
processes, files. Tests assert all are gone after ``down``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hpn.lab import netns


def lab_pids(prefix: str) -> set[int]:
    return {p for ns in netns.lab_namespaces(prefix) for p in netns.ns_pids(ns)}


def leftovers(prefix: str, pids: set[int] = frozenset()) -> dict[str, list]:
    host_links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    names = [ln.split(":")[1].strip().split("@")[0] for ln in host_links.stdout.splitlines()]
    files = (
        [str(p) for p in Path("/var/tmp/frr").glob("*")] if Path("/var/tmp/frr").is_dir() else []
    )
    files = [f for f in files if any(f.endswith(f".{p}") for p in pids)]
    return {
        "namespaces": netns.lab_namespaces(prefix),
        "host_interfaces": [n for n in names if n.startswith(prefix)],
        "processes": sorted({p for p in pids if _alive(p)} | _using(netns.state_dir(prefix))),
        "files": ([str(netns.state_dir(prefix))] if netns.state_dir(prefix).exists() else [])
        + [str(p) for p in [netns.STATE_ROOT / f"{prefix}.lock"] if p.exists()]
        + files,
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


NOTHING = {"namespaces": [], "host_interfaces": [], "processes": [], "files": []}


def _using(state: Path) -> set[int]:
    """Processes whose command line names the lab's state directory (its FRR daemons),
    wherever they run: a daemon left in a deleted namespace is found too."""
    out = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if f"{state}/" in cmd and "pytest" not in cmd:
                out.add(int(proc.name))
    return out
