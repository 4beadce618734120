"""Failures with the carrier up, by nftables inside the lab's namespaces: a link that drops
every packet (silent), a share of them (gray), in one direction or both.

A drop is a ``netdev`` table on the *receiving* interface's ingress hook, in that interface's
namespace (``table netdev hpnlab_<if>``): ARP, BGP and data alike, as a broken optic or a
bad ASIC port would. A link dropped both ways is one table at one end, its ingress and its
egress hook, so both directions start (and stop) in the same nftables transaction: two
``nft`` processes in two namespaces land up to a few tenths of a second apart on a loaded
machine, longer than BFD's detection time. The carrier stays up, so neither the host's
``ignore_routes_with_linkdown`` nor zebra's interface tracking sees anything: only BGP's hold
timer, or BFD, can.
"""

from __future__ import annotations

import json
import shutil

from hpn.errors import InputError
from hpn.lab import netns
from hpn.lab.plan import LabPlan

TABLE = "hpnlab_"


def require() -> None:
    if shutil.which("nft") is None:
        raise InputError(
            "target", "silent and gray failures need nftables (apt-get install nftables)"
        )


def _receiver(plan: LabPlan, link: int) -> tuple[str, str]:
    """(namespace, interface) where packets sent over directed ``link`` arrive."""
    back = link ^ 1
    ns = plan.namespaces[int(plan.ns_of_node[int(plan.fabric.links.src[back])])]
    return ns, plan.ifname[back]


def drop(plan: LabPlan, links: list[int], loss: float = 1.0) -> None:
    """Drop ``loss`` (0 < loss <= 1) of the packets sent over each directed link."""
    if not 0 < loss <= 1:
        raise InputError("loss", f"must be in (0, 1], got {loss}")
    rule = "drop" if loss >= 1 else f"numgen random mod 10000 < {round(loss * 10000)} drop"
    chosen = {int(ln) for ln in links}
    for ln in sorted(chosen):
        if ln ^ 1 in chosen and ln & 1:
            continue  # the pair's table, written for its even link, holds both directions
        ns, dev = _receiver(plan, ln)
        hooks = ["ingress"] + (["egress"] if ln ^ 1 in chosen else [])
        chains = "".join(
            f' chain {h} {{ type filter hook {h} device "{dev}" priority 0; {rule}\n }}\n'
            for h in hooks
        )
        text = f"table netdev {TABLE}{dev} {{\n{chains}}}\n"
        netns.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], text)


def tables(ns: str) -> list[str]:
    """The lab's impairment tables in a namespace."""
    if shutil.which("nft") is None:
        return []
    out = netns.run(["ip", "netns", "exec", ns, "nft", "-j", "list", "tables"], check=False)
    try:
        items = json.loads(out or "{}").get("nftables", [])
    except json.JSONDecodeError:
        return []
    return [
        t["table"]["name"] for t in items if "table" in t and t["table"]["name"].startswith(TABLE)
    ]


def clear(plan: LabPlan, links: list[int] | None = None) -> list[str]:
    """Remove the drops on ``links`` (None: every one in the lab); the interfaces freed."""
    freed = []
    if links is None:
        for ns in plan.namespaces:
            for t in tables(ns):
                netns.run(["ip", "netns", "exec", ns, "nft", "delete", "table", "netdev", t])
                freed.append(f"{ns.removeprefix(plan.prefix + '-')}:{t.removeprefix(TABLE)}")
        return freed
    for ln in links:
        ns, dev = _receiver(plan, int(ln))
        netns.run(["ip", "netns", "exec", ns, "nft", "delete", "table", "netdev", TABLE + dev],
                  check=False)  # fmt: skip
        freed.append(f"{ns.removeprefix(plan.prefix + '-')}:{dev}")
    return freed


def impaired(plan: LabPlan) -> list[str]:
    """``node:interface`` of every receiving end that drops packets now."""
    return [
        f"{ns.removeprefix(plan.prefix + '-')}:{t.removeprefix(TABLE)}"
        for ns in plan.namespaces
        for t in tables(ns)
    ]
