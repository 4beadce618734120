"""BGP on every switch with FRR (zebra, staticd, bgpd in the switch's namespace), configured
from the fabric as HPN's switches are (P §4.2):

- eBGP on every switch-switch link (numbered /31 sessions); ASNs as in RFC 7938: one per ToR,
  one per Agg group (a plane of a pod: Aggs of a plane share it, so no route goes
  ToR -> Agg -> ToR -> Agg), one per core plane group;
- multipath over equal AS-path lengths (``maximum-paths``, ``as-path multipath-relax``);
- each ToR announces its pair's subnet (held by a blackhole route) and a /32 for every NIC it
  serves (a static route through that NIC's link: HPN's ARP-learned host routes); the /32 is
  withdrawn when the link goes down, so longest-prefix match steers traffic to the pair's
  other ToR;
- dual-plane holds by wiring: a plane-p ToR has links, hence sessions, only to plane-p Aggs.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import numpy as np

from hpn.errors import InputError
from hpn.lab import netns
from hpn.lab.plan import ENDPOINT_KINDS, LabPlan
from hpn.lab.routes import host_routes_to_nic
from hpn.topology.fabric import NodeKind

FRR_DIR = Path("/usr/lib/frr")
DAEMONS = ("zebra", "staticd", "bgpd")
ASN_BASE = 4_200_000_000  # RFC 6996 private 4-byte ASNs


def missing(bfd: bool = False) -> str | None:
    """None when FRR's daemons are installed, else what is missing."""
    import pwd

    for d in DAEMONS + (("bfdd",) if bfd else ()):
        if not (FRR_DIR / d).exists():
            return f"FRR's {d} is not installed (apt-get install frr)"
    try:
        pwd.getpwnam("frr")
    except KeyError:
        return "FRR's user 'frr' does not exist (reinstall frr)"
    return None


def require(bfd: bool = False) -> None:
    why = missing(bfd)
    if why:
        raise InputError("control", f"{why}; or use --control static")


def asn_of(plan: LabPlan, node: int) -> int:
    nd = plan.fabric.nodes
    kind = int(nd.kind[node])
    if kind == NodeKind.TOR:
        rank = int(np.count_nonzero(np.flatnonzero(nd.kind == NodeKind.TOR) < node))
        return ASN_BASE + 100_000 + rank
    plane = max(int(nd.plane[node]), 0)
    if kind == NodeKind.AGG:
        rail = max(int(nd.rail[node]), 0)  # rail-only: a group per rail and plane
        return ASN_BASE + 10_000 + (max(int(nd.pod[node]), 0) * 64 + rail) * 2 + plane
    return ASN_BASE + 1_000 + plane


def _peers(plan: LabPlan, node: int) -> list[int]:
    """Directed links from a switch to other switches."""
    f = plan.fabric
    return [
        int(ln)
        for ln in f.out_links(node)
        if int(ln) in plan.ifname and f.nodes.kind[f.links.dst[ln]] not in ENDPOINT_KINDS
    ]


def config(plan: LabPlan, node: int, addresses: bool = False) -> dict[str, str]:
    """The per-daemon configuration texts of one switch (zebra, staticd, bgpd); with
    ``addresses`` the interfaces carry their /31s (the lab sets them with iproute2)."""
    f = plan.fabric
    name = plan.ns(node).removeprefix(plan.prefix + "-")
    asn = asn_of(plan, node)
    peers = _peers(plan, node)
    router_id = plan.link_ip(peers[0]) if peers else "10.255.255.255"
    # routes with inline next hops, not kernel nexthop objects: the kernel deletes a
    # nexthop object when its device goes down, and FRR 8.4's zebra, which keeps its
    # groups 180 s, reuses the old group on repair without re-adding the member (FRR
    # PR 13413, in 9.0, re-installs it); inline, every route replace carries all next hops
    zebra = [f"hostname {name}", "no zebra nexthop kernel enable", "!"]
    for ln in sorted(plan.ifname):
        if int(f.links.src[ln]) == node:
            peer = f.node_name(int(f.links.dst[ln]))
            zebra += [f"interface {plan.ifname[ln]}", f" description to {peer}"]
            if addresses:
                zebra.append(f" ip address {plan.link_ip(ln)}/31")
            zebra.append("!")
    static = [f"hostname {name}", "!"]
    originate = []
    if f.nodes.kind[node] == NodeKind.TOR:
        for net, tors in plan.subnets:
            if node in tors:
                static.append(f"ip route {plan.cidr(net)} blackhole")
                originate.append(plan.cidr(net))
        for nic, ln in host_routes_to_nic(plan, node):
            static.append(
                f"ip route {plan.ip(nic)}/32 {plan.link_ip(ln ^ 1)} {plan.ifname[ln]}"
                f"  ! {f.node_name(nic)} port {int(f.links.port[ln ^ 1])}"
            )
    static.append("!")
    bgp = [
        f"hostname {name}",
        "!",
        f"router bgp {asn}",
        f" bgp router-id {router_id}",
        " no bgp ebgp-requires-policy",
        " no bgp network import-check",
        " bgp bestpath as-path multipath-relax",
        " timers bgp 1 3",
    ]
    for ln in peers:
        peer_id = int(f.links.dst[ln])
        bgp.append(f" neighbor {plan.link_ip(ln ^ 1)} remote-as {asn_of(plan, peer_id)}")
        bgp.append(f" neighbor {plan.link_ip(ln ^ 1)} description {f.node_name(peer_id)}")
        bgp.append(f" neighbor {plan.link_ip(ln ^ 1)} timers connect 1")
        bgp.append(f" neighbor {plan.link_ip(ln ^ 1)} advertisement-interval 0")
        if plan.spec.bfd:
            bgp.append(f" neighbor {plan.link_ip(ln ^ 1)} bfd profile hpn")
    bgp.append(" !")
    bgp.append(" address-family ipv4 unicast")
    bgp += [f"  network {p}" for p in originate]
    if f.nodes.kind[node] == NodeKind.TOR:
        bgp.append("  redistribute static")
    bgp.append("  maximum-paths 64")
    bgp.append(" exit-address-family")
    bgp.append("!")
    out = {
        "zebra": "\n".join(zebra) + "\n",
        "staticd": _no_comments(static),
        "bgpd": "\n".join(bgp) + "\n",
    }
    if plan.spec.bfd:  # FRR's defaults: 300 ms, x3 (docs.frrouting.org, bfdd)
        s = plan.spec
        out["bfdd"] = (
            f"hostname {name}\n!\nbfd\n profile hpn\n  transmit-interval {s.bfd_interval_ms}\n"
            f"  receive-interval {s.bfd_interval_ms}\n  detect-multiplier {s.bfd_multiplier}\n"
            " exit\n!\nexit\n"
        )
    return out


def _no_comments(lines: list[str]) -> str:
    return "\n".join(ln.split("  !")[0] for ln in lines) + "\n"


def integrated(plan: LabPlan, node: int) -> str:
    """One ``frr.conf`` for a switch, as a user would load it with vtysh."""
    c = config(plan, node, addresses=True)
    body = c["zebra"].splitlines()
    for d in ("staticd", "bfdd", "bgpd"):
        if d in c:
            body += [ln for ln in c[d].splitlines()[2:] if ln != "!" or body[-1] != "!"]
    return "frr defaults datacenter\n" + "\n".join(body) + "\n"


def write_configs(plan: LabPlan, out: Path) -> list[str]:
    """``<switch>.conf`` (FRR integrated configuration) per switch; returns the file names."""
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for ns, role in enumerate(plan.ns_role):
        if role == "host":
            continue
        (node,) = plan.nodes_in_ns[ns]
        name = plan.namespaces[ns].removeprefix(plan.prefix + "-") + ".conf"
        (out / name).write_text(integrated(plan, node))
        names.append(name)
    return names


def _daemon_args(d: str, ns: str, run: Path) -> list[str]:
    # bfdd's control socket defaults to one path for the machine: one per namespace here
    extra = ["--bfdctl", str(run / "bfdd.sock")] if d == "bfdd" else []
    return [
        "ip", "netns", "exec", ns, str(FRR_DIR / d), "-d", "-F", "datacenter",
        "-P", "0",
        "-f", str(run / f"{d}.conf"), "-i", str(run / f"{d}.pid"),
        "-z", str(run / "zserv.api"), "--vty_socket", str(run),
        "--log", f"file:{run / (d + '.log')}", *extra,
    ]  # fmt: skip


def start(plan: LabPlan, state: Path) -> None:
    """Write every switch's configuration under ``state`` and start its daemons."""
    runs: dict[str, Path] = {}
    for ns_id, role in enumerate(plan.ns_role):
        if role == "host":
            continue
        (node,) = plan.nodes_in_ns[ns_id]
        run = state / plan.namespaces[ns_id]
        run.mkdir(parents=True, exist_ok=True)
        for d, text in config(plan, node).items():
            (run / f"{d}.conf").write_text(text)
        runs[plan.namespaces[ns_id]] = run
    _give_to_frr([state, *runs.values()])
    spawned = (state / netns.SPAWNED).open("a")
    second = ("staticd", "bfdd", "bgpd") if plan.spec.bfd else ("staticd", "bgpd")
    for group in (("zebra",), second):
        procs = []
        for ns, run in runs.items():
            for d in group:
                p = subprocess.Popen(
                    _daemon_args(d, ns, run),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                spawned.write(f"{p.pid}\n")
                spawned.flush()
                procs.append((ns, d, p))
        for ns, d, p in procs:
            _, err = p.communicate(timeout=60)
            if p.returncode:
                raise netns.LabError(f"{d} in {ns} did not start: {err.strip()[:300]}")
        if group == ("zebra",):
            _wait_files([run / "zserv.api" for run in runs.values()], 10.0)
    spawned.close()


def _give_to_frr(dirs: list[Path]) -> None:
    """FRR's daemons drop root for the ``frr`` user: let it write pid files, sockets, logs."""
    import grp
    import os
    import pwd

    uid, gid = pwd.getpwnam("frr").pw_uid, grp.getgrnam("frr").gr_gid
    for d in dirs:
        os.chown(d, uid, gid)
        for p in d.iterdir():
            os.chown(p, uid, gid)


def _wait_files(paths: list[Path], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(p.exists() for p in paths):
            return
        time.sleep(0.02)
    raise netns.LabError(f"zebra did not come up: {[str(p) for p in paths if not p.exists()]}")


def kernel_routes(ns: str) -> dict[str, set[str]]:
    """prefix -> egress interfaces (``{"blackhole"}``) of a namespace's main table."""
    data = json.loads(netns.run(["ip", "-n", ns, "-j", "route", "show"]) or "[]")
    out: dict[str, set[str]] = {}
    for r in data:
        dst = r.get("dst", "")
        if "/" not in dst and dst not in ("default",):
            dst += "/32"
        if r.get("type") == "blackhole":
            out[dst] = {"blackhole"}
        elif "nexthops" in r:
            out[dst] = {h["dev"] for h in r["nexthops"] if "dev" in h}
        elif "dev" in r:
            out[dst] = {r["dev"]}
    return out


def expected_routes(plan: LabPlan, hops: dict) -> dict[int, dict[str, set[str]]]:
    """Per switch namespace: every subnet and NIC /32 with the egress set of a converged lab."""
    f = plan.fabric
    sub_of = {}
    for s, (net, _) in enumerate(plan.subnets):
        for n in plan.endpoints:
            if (int(plan.nic_ip[n]) >> (32 - plan.subnet_len)) == net >> (32 - plan.subnet_len):
                sub_of[int(n)] = s
    out: dict[int, dict[str, set[str]]] = {}
    for ns, role in enumerate(plan.ns_role):
        if role == "host":
            continue
        (node,) = plan.nodes_in_ns[ns]
        want: dict[str, set[str]] = {}
        direct = dict(host_routes_to_nic(plan, node)) if f.nodes.kind[node] == NodeKind.TOR else {}
        for s, (net, _) in enumerate(plan.subnets):
            links = hops.get((node, s))
            if links is None:
                continue
            want[plan.cidr(net)] = {plan.ifname[ln] for ln in links} or {"blackhole"}
        for n, s in sub_of.items():
            if n in direct:
                want[f"{plan.ip(n)}/32"] = {plan.ifname[direct[n]]}
            elif hops.get((node, s)):
                want[f"{plan.ip(n)}/32"] = {plan.ifname[ln] for ln in hops[(node, s)]}
        out[ns] = want
    return out


VTYSH = "vtysh"


def vty(plan: LabPlan, ns: str, command: str, timeout: float = 30.0, node: str = "") -> str:
    """``vtysh -c command`` against the daemons of switch namespace ``ns``, through their own
    vty sockets; a refusal or no answer is one line naming ``node`` (default ``ns``)."""
    sock = netns.state_dir(plan.prefix) / ns
    args = [VTYSH, "--vty_socket", str(sock), "-c", command]
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        who = node or ns
        raise InputError("vtysh", f"no answer from {who}'s daemons in {timeout:g} s") from None
    if r.returncode:
        raise InputError("vtysh", (r.stderr or r.stdout).strip().splitlines()[-1][:300])
    return r.stdout


def bfd_pending(plan: LabPlan) -> list[str]:
    """BGP sessions whose BFD session is not yet up at the lab's interval, as
    ``switch->peer (state, peer's tx ms)``; empty without BFD. A BFD session sends at 1 s or
    slower until it is up (RFC 5880 6.8.3) and only then polls down to the configured rate:
    until then a silent failure is found by BGP's 3 s hold time, not by BFD."""
    if not plan.spec.bfd:
        return []
    f, out = plan.fabric, []
    for ns, role in enumerate(plan.ns_role):
        if role == "host":
            continue
        (node,) = plan.nodes_in_ns[ns]
        want = {
            plan.link_ip(ln ^ 1): f.node_name(int(f.links.dst[ln])) for ln in _peers(plan, node)
        }
        try:
            peers = json.loads(vty(plan, plan.namespaces[ns], "show bfd peers json", 10.0))
        except (InputError, ValueError):
            peers = []
        have = {p.get("peer"): p for p in peers}
        for ip, name in want.items():
            p = have.get(ip, {})
            tx = p.get("remote-transmit-interval")
            if p.get("status") != "up" or tx is None or tx > plan.spec.bfd_interval_ms:
                me = f.node_name(node)
                out.append(f"{me}->{name} ({p.get('status', 'absent')}, {tx} ms)")
    return out


def wait_converged(plan: LabPlan, hops: dict, timeout: float = 60.0) -> float:
    """Seconds until every switch's kernel holds exactly the expected ECMP routes and, with
    BFD, every session's BFD is up at the configured interval (:func:`bfd_pending`)."""
    t0 = time.monotonic()
    want = expected_routes(plan, hops)
    pending = dict(want)
    while True:
        for ns in list(pending):
            have = kernel_routes(plan.namespaces[ns])
            if all(have.get(p) == v for p, v in pending[ns].items()):
                del pending[ns]
        if not pending:
            slow = bfd_pending(plan)
            if not slow:
                return round(time.monotonic() - t0, 3)
            if time.monotonic() - t0 > timeout:
                raise netns.LabError(f"BFD not up in {timeout:.0f} s: {', '.join(slow[:3])}")
            time.sleep(0.1)
            continue
        if time.monotonic() - t0 > timeout:
            ns = next(iter(pending))
            have = kernel_routes(plan.namespaces[ns])
            bad = [p for p, v in pending[ns].items() if have.get(p) != v][:3]
            raise netns.LabError(
                f"BGP did not converge in {timeout:.0f} s: {plan.namespaces[ns]} lacks "
                + ", ".join(
                    f"{p} via {sorted(pending[ns][p])} (has {sorted(have.get(p, []))})" for p in bad
                )
            )
        time.sleep(0.1)
