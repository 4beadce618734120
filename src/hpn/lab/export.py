"""Take the lab home: the same fabric as a containerlab topology, as FRR configurations for
real switches, or as one JSON document (nodes, links, addresses, ASNs, the veth-to-port map).

Needs no root: everything is computed from the lab spec, as ``hpn lab configs`` is.

- ``containerlab``: ``<name>.clab.yml`` (switches: ``kind: linux`` with FRR's image and its
  integrated ``frr.conf`` and ``daemons`` bound in; hosts: ``kind: linux`` with the lab's
  addresses, source rules and multipath defaults as ``exec`` commands), the per-switch
  directories, and ``ports.csv``;
- ``frr``: ``<switch>/frr.conf`` and ``<switch>/daemons`` per switch, and ``ports.csv``;
- ``json``: ``topology.json``.

``ports.csv`` maps every lab interface to the fabric's port: node, interface, address, peer
node, peer interface, link tier, NIC port (0/1, or -1), fabric names of both ends.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from hpn.errors import InputError
from hpn.lab.plan import LabPlan, make_plan
from hpn.topology.fabric import LinkTier

FORMATS = ("containerlab", "frr", "json")
FRR_IMAGE = "quay.io/frrouting/frr:8.4.1"  # the FRR release the lab was measured with
HOST_IMAGE = "alpine:3.19"


def _short(plan: LabPlan, ns: int) -> str:
    return plan.namespaces[ns].removeprefix(plan.prefix + "-")


def ports(plan: LabPlan) -> list[dict[str, Any]]:
    """One row per directed lab link: the veth-to-port map."""
    f = plan.fabric
    lk = f.links
    rows = []
    for ln in plan.links:
        ln = int(ln)
        a, b = int(plan.ns_of_node[lk.src[ln]]), int(plan.ns_of_node[lk.dst[ln]])
        rows.append(
            {
                "node": _short(plan, a),
                "interface": plan.ifname[ln],
                "address": f"{plan.link_ip(ln)}/31",
                "peer": _short(plan, b),
                "peer_interface": plan.ifname[ln ^ 1],
                "tier": LinkTier(int(lk.tier[ln])).name.lower(),
                "nic_port": int(lk.port[ln]),
                "fabric_node": f.node_name(int(lk.src[ln])),
                "fabric_peer": f.node_name(int(lk.dst[ln])),
                "rate_bps": int(plan.rate_bps(ln)),
            }
        )
    return rows


def _daemons(bfd: bool) -> str:
    on = {"zebra", "bgpd", "staticd"} | ({"bfdd"} if bfd else set())
    names = ("bgpd", "ospfd", "ospf6d", "ripd", "ripngd", "isisd", "pimd", "ldpd", "nhrpd",
             "eigrpd", "babeld", "sharpd", "pbrd", "bfdd", "fabricd", "vrrpd", "pathd")  # fmt: skip
    lines = [f"{d}={'yes' if d in on else 'no'}" for d in names]
    return "\n".join(lines + ["vtysh_enable=yes", 'zebra_options="  -A 127.0.0.1 -s 90000000"',
                              'bgpd_options="   -A 127.0.0.1"', 'staticd_options="-A 127.0.0.1"',
                              'bfdd_options="   -A 127.0.0.1"']) + "\n"  # fmt: skip


def _host_exec(plan: LabPlan, ns: int) -> list[str]:
    from hpn.lab.build import _ns_commands, _sysctls
    from hpn.lab.routes import host_commands

    ipc, _ = _ns_commands(plan)
    cmds = [f"sysctl -w net.{k.replace('/', '.')}={v}" for k, v in _sysctls(plan, ns).items()
            if "hash_seed" not in k or v]  # fmt: skip
    return cmds + [f"ip {c}" for c in ipc[ns] + host_commands(plan, ns) if c != "link set lo up"]


def _switch_exec(plan: LabPlan, ns: int) -> list[str]:
    from hpn.lab.build import _sysctls

    return [f"sysctl -w net.{k.replace('/', '.')}={v}" for k, v in _sysctls(plan, ns).items()]


def _yaml(obj: Any, indent: int = 0) -> str:
    """A small YAML writer for the topology (strings quoted, JSON-compatible)."""
    pad = "  " * indent
    if isinstance(obj, dict):
        out = []
        for k, v in obj.items():
            if isinstance(v, dict | list) and v:
                out.append(f"{pad}{k}:\n{_yaml(v, indent + 1)}")
            else:
                out.append(f"{pad}{k}: {json.dumps(v)}")
        return "\n".join(out)
    out = []
    for v in obj:
        if isinstance(v, dict):
            body = _yaml(v, indent + 1).lstrip()
            out.append(f"{pad}- {body}")
        else:
            out.append(f"{pad}- {json.dumps(v)}")
    return "\n".join(out)


def writable_base(path: Path) -> Path:
    """The nearest existing folder at or above ``path`` (where it will be created)."""
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(text)
    tmp.replace(path)


def export(spec, out: str, fmt: str = "containerlab") -> dict[str, Any]:
    """Write the lab's fabric in ``fmt`` under ``out``; returns what was written."""
    from hpn.lab.bgp import asn_of, integrated

    if fmt not in FORMATS:
        raise InputError("format", f"choose from {', '.join(FORMATS)}, not {fmt!r}")
    plan = make_plan(spec)
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise InputError("out", f"{out} exists and is not a directory")
    parent = writable_base(root)
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise InputError("out", f"{out}: {parent} is not a directory this user can write to")
    switches = [i for i, r in enumerate(plan.ns_role) if r != "host"]
    hosts = [i for i, r in enumerate(plan.ns_role) if r == "host"]
    rows = ports(plan)
    files: list[str] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        if fmt == "json":
            doc = {
                "name": spec.name,
                "prefix": plan.prefix,
                "spec": spec.model_dump(),
                "nodes": [
                    {
                        "name": _short(plan, i),
                        "role": plan.ns_role[i],
                        "fabric": [plan.fabric.node_name(int(n)) for n in plan.nodes_in_ns[i]],
                        "asn": asn_of(plan, plan.nodes_in_ns[i][0]) if i in switches else None,
                        "addresses": [
                            plan.ip(int(n)) for n in plan.nodes_in_ns[i] if plan.nic_ip[int(n)]
                        ],  # fmt: skip
                        "hash_seed": int(plan.kernel_seed[plan.nodes_in_ns[i][0]]),
                    }
                    for i in range(len(plan.namespaces))
                ],
                "links": rows,
            }
            _write(root / "topology.json", json.dumps(doc, indent=1) + "\n")
            return {"out": str(root), "format": fmt, "files": ["topology.json"],
                    "nodes": len(plan.namespaces), "links": len(rows) // 2}  # fmt: skip
        for i in switches:
            d = root / _short(plan, i)
            d.mkdir(exist_ok=True)
            _write(d / "frr.conf", integrated(plan, plan.nodes_in_ns[i][0]))
            _write(d / "daemons", _daemons(spec.bfd))
            files += [f"{_short(plan, i)}/frr.conf", f"{_short(plan, i)}/daemons"]
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["node"])
        w.writeheader()
        w.writerows(rows)
        _write(root / "ports.csv", buf.getvalue())
        files.append("ports.csv")
        if fmt == "containerlab":
            nodes: dict[str, Any] = {}
            for i in switches:
                s = _short(plan, i)
                nodes[s] = {
                    "kind": "linux",
                    "image": FRR_IMAGE,
                    "binds": [f"{s}/frr.conf:/etc/frr/frr.conf", f"{s}/daemons:/etc/frr/daemons"],
                    "exec": _switch_exec(plan, i),
                }
            for i in hosts:
                nodes[_short(plan, i)] = {"kind": "linux", "image": HOST_IMAGE,
                                          "exec": _host_exec(plan, i)}  # fmt: skip
            links = [
                {
                    "endpoints": [
                        f"{r['node']}:{r['interface']}",
                        f"{r['peer']}:{r['peer_interface']}",
                    ]
                }
                for r, ln in zip(rows, plan.links, strict=True)
                if int(ln) % 2 == 0
            ]
            topo = {"name": f"hpn-{spec.name}", "topology": {"nodes": nodes, "links": links}}
            name = f"hpn-{spec.name}.clab.yml"
            _write(root / name, "# hpn lab export: " + "containerlab deploy -t " + name + "\n"
                   + _yaml(topo) + "\n")  # fmt: skip
            files.append(name)
    except OSError as e:
        raise InputError("out", f"{e.filename or out}: {e.strerror}") from None
    return {"out": str(root), "format": fmt, "files": sorted(files),
            "nodes": len(plan.namespaces), "links": len(rows) // 2}  # fmt: skip
