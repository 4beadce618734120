"""A network engineer's tools on a running lab: link and BGP state, repair, a shell or vtysh in
a switch, packet capture on a link.

Every command runs inside one of the lab's namespaces (``ip netns exec``) or talks to the
lab's own FRR daemons through their vty sockets under ``/run/hpn-lab/<prefix>/<namespace>``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, TypedDict

from hpn.errors import InputError
from hpn.lab import netns
from hpn.lab.bgp import VTYSH
from hpn.lab.plan import LabPlan

MAX_CAPTURE_S = 60.0
MAX_CAPTURE_PACKETS = 100_000
EXEC_TIMEOUT_S = 120.0


class Session(TypedDict):
    """One BGP session as a switch's bgpd reports it."""

    switch: str
    peer: str
    interface: str | None
    state: str
    prefixes_received: int | None
    uptime: str | None


def node_ns(plan: LabPlan, node: str) -> str:
    """The namespace of a lab node given as its short name (``t0``, ``a1``, ``h3``) or its
    full namespace name; InputError listing the choices otherwise."""
    short = [n.removeprefix(plan.prefix + "-") for n in plan.namespaces]
    if node in plan.namespaces:
        return node
    if node in short:
        return plan.namespaces[short.index(node)]
    raise InputError("node", f"no node {node!r} in the lab; choose from {', '.join(short)}")


def link_state(plan: LabPlan) -> tuple[list[dict[str, Any]], list[str]]:
    """(one row per lab link: its two interfaces and whether each is up, links down)."""
    up: dict[str, bool] = {}
    for ns in plan.namespaces:
        for name, st in netns.link_stats(ns).items():
            up[f"{_short(plan, ns)}:{name}"] = st["up"]
    rows, down = [], []
    lk = plan.fabric.links
    for ln in plan.links[0::2]:
        ln = int(ln)
        a, b = end_name(plan, ln), end_name(plan, ln ^ 1)
        ok = up.get(a, False) and up.get(b, False)
        rows.append(
            {
                "link": f"{plan.fabric.node_name(int(lk.src[ln]))} - "
                f"{plan.fabric.node_name(int(lk.dst[ln]))}",
                "ends": [a, b],
                "up": ok,
            }
        )
        if not ok:
            down.append(a)
    return rows, down


def _short(plan: LabPlan, ns: str) -> str:
    return ns.removeprefix(plan.prefix + "-")


def end_name(plan: LabPlan, link: int) -> str:
    """``node:interface`` of the end of a lab link that ``link`` leaves by (``h0:hl0n0p0``)."""
    ns = plan.namespaces[int(plan.ns_of_node[int(plan.fabric.links.src[link])])]
    return f"{_short(plan, ns)}:{plan.ifname[link]}"


def find_end(plan: LabPlan, text: str) -> int:
    """The directed link whose sending end is ``node:interface`` (or a unique interface)."""
    ends = {end_name(plan, int(ln)): int(ln) for ln in plan.links}
    if text in ends:
        return ends[text]
    hits = [e for e in ends if e.split(":", 1)[1] == text]
    if len(hits) == 1:
        return ends[hits[0]]
    if hits:
        raise InputError("link", f"{text!r} is in several nodes: give one of {', '.join(hits)}")
    raise InputError("link", f"no interface {text!r}; `hpn lab status --json` lists link ends")


def vtysh(plan: LabPlan, node: str, command: str | None = None, timeout: float = 30.0) -> str:
    """Run ``vtysh`` against a switch's daemons (``-c command``, or the running config)."""
    if plan.spec.control != "bgp":
        raise InputError("node", "this lab runs no FRR (--control static): no vtysh")
    if shutil.which(VTYSH) is None:
        raise InputError("vtysh", "FRR's vtysh is not installed (apt-get install frr)")
    ns = node_ns(plan, node)
    if plan.ns_role[plan.namespaces.index(ns)] == "host":
        raise InputError("node", f"{node} is a host: FRR runs on the switches only")
    from hpn.lab.bgp import vty

    return vty(plan, ns, command or "show running-config", timeout, node)


def bgp_sessions(plan: LabPlan) -> list[Session]:
    """Every switch's BGP sessions (``show bgp summary json``)."""
    out: list[Session] = []
    if plan.spec.control != "bgp" or shutil.which(VTYSH) is None:
        return out
    for ns, role in zip(plan.namespaces, plan.ns_role, strict=True):
        if role == "host":
            continue
        short = ns.removeprefix(plan.prefix + "-")
        try:
            data = json.loads(vtysh(plan, ns, "show bgp summary json", 10.0) or "{}")
        except (InputError, json.JSONDecodeError):
            out.append(Session(switch=short, peer="?", interface=None, state="no answer",
                               prefixes_received=None, uptime=None))  # fmt: skip
            continue
        peers = (data.get("ipv4Unicast") or {}).get("peers") or {}
        for peer, p in sorted(peers.items()):
            out.append(
                Session(
                    switch=short,
                    peer=peer,
                    interface=p.get("idType") == "interface" and peer or p.get("hostname"),
                    state=p.get("state", "?"),
                    prefixes_received=p.get("pfxRcd"),
                    uptime=p.get("peerUptime"),
                )
            )
    return out


def route_counts(plan: LabPlan) -> dict[str, int]:
    """Routes in every switch's kernel table (what forwarding uses)."""
    from hpn.lab.bgp import kernel_routes

    return {
        ns.removeprefix(plan.prefix + "-"): len(kernel_routes(ns))
        for ns, role in zip(plan.namespaces, plan.ns_role, strict=True)
        if role != "host"
    }


def repair(plan: LabPlan) -> dict[str, Any]:
    """Bring up every lab link that is down (a killed ``fail`` leaves them so), put back the
    routes the kernel flushed, and wait until BGP has converged again."""
    from hpn.lab import impair
    from hpn.lab.linkctl import _set
    from hpn.lab.routes import switch_next_hops

    t0 = time.monotonic()
    undropped = impair.clear(plan)
    _, down = link_state(plan)
    links = [find_end(plan, d) for d in down]
    hops = switch_next_hops(plan)
    converge = None
    if links:
        want = {}
        if plan.spec.control == "bgp":
            from hpn.lab import bgp

            want = bgp.expected_routes(plan, hops)
        _set(plan, links, "up", hops, want)
    if plan.spec.control == "bgp":
        from hpn.lab import bgp

        converge = bgp.wait_converged(plan, hops, 30.0)
    return {
        "links_repaired": down,
        "drops_removed": undropped,
        "converge_s": converge,
        "took_s": round(time.monotonic() - t0, 3),
    }


def exec_in(plan: LabPlan, node: str, command: list[str], timeout: float = 30.0):
    """Run ``command`` in a node's namespace; (exit code, stdout, stderr)."""
    if not command:
        raise InputError("command", "give the command after --, e.g. -- ip route")
    if not 0 < timeout <= EXEC_TIMEOUT_S:
        raise InputError("timeout", f"must be in (0, {EXEC_TIMEOUT_S:g}] s, got {timeout}")
    ns = node_ns(plan, node)
    try:
        r = subprocess.run(
            ["ip", "netns", "exec", ns, *command],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise InputError("command", f"did not finish in {timeout:g} s (--timeout)") from None
    return r.returncode, r.stdout, r.stderr


def capture(
    plan: LabPlan, link: str, out: str, seconds: float = 5.0, packets: int = 1000
) -> dict[str, Any]:
    """``tcpdump`` on one end of a lab link (``node:interface`` as ``status`` lists them, or
    an interface name only one node has) inside its namespace, for at most ``seconds`` and
    ``packets``, written to ``out``."""
    if shutil.which("tcpdump") is None:
        raise InputError("capture", "tcpdump is not installed (apt-get install tcpdump)")
    if not 0 < seconds <= MAX_CAPTURE_S:
        raise InputError("seconds", f"must be in (0, {MAX_CAPTURE_S:g}], got {seconds}")
    if not 1 <= packets <= MAX_CAPTURE_PACKETS:
        raise InputError("packets", f"must be 1..{MAX_CAPTURE_PACKETS}, got {packets}")
    ln = find_end(plan, link)
    path = Path(out)
    if path.exists() and path.is_dir():
        raise InputError("out", f"{out} is a directory")
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        raise InputError("out", f"{out}: {path.parent} is not a directory this user can write to")
    ns = plan.namespaces[int(plan.ns_of_node[int(plan.fabric.links.src[ln])])]
    link = plan.ifname[ln]
    tmp = path.with_name(f".{path.name}.part")
    args = ["ip", "netns", "exec", ns, "tcpdump", "-i", link, "-U", "-n", "-c", str(packets),
            "-w", str(tmp), "-Z", "root"]  # fmt: skip
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.terminate()
        _, err = p.communicate(timeout=5)
    except BaseException:
        p.kill()
        p.wait()
        tmp.unlink(missing_ok=True)
        raise
    if not tmp.exists():
        raise InputError("capture", (err or "tcpdump wrote nothing").strip().splitlines()[-1])
    try:
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise InputError("out", f"{out}: {e.strerror}") from None
    got = [ln for ln in (err or "").splitlines() if "packets captured" in ln]
    return {
        "link": end_name(plan, ln),
        "namespace": ns,
        "out": str(path),
        "packets": int(got[0].split()[0]) if got else None,
        "bytes": path.stat().st_size,
    }
