"""`hpn route ...`: equal-cost paths, HPN source-port selection, hash polarization."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import typer

from hpn.cli.fabric_opts import RoutingOpt, fabric_command
from hpn.cli.output import JsonOpt, emit_json, kv_table, stdout
from hpn.cli.store_opts import OutOpt, PlotOpt, check_out, save
from hpn.config import Model
from hpn.errors import InputError
from hpn.topology import build

app = typer.Typer(
    help="Routing as switches and hosts do it: paths, path selection, polarization.",
    no_args_is_help=True,
)

HashOpt = Annotated[
    str, typer.Option("--hash", help="Switch hash: crc32, crc32c, crc16, crc16-arc, xor16, mix64.")
]
SeedsOpt = Annotated[str, typer.Option("--seeds", help="Hash seeds: same, tier or switch.")]
BondOpt = Annotated[
    str,
    typer.Option(
        "--bond",
        help="Host port choice: l34 (Linux bonding layer3+4), rr (RoCE LAG round robin) or a hash.",
    ),
]


def _hashing(hash_: str, seeds: str, bond: str) -> dict:
    return {
        "tor_hash": hash_,
        "agg_hash": hash_,
        "core_hash": hash_,
        "seeds": seeds,
        "bond_hash": bond,
    }


@app.command()
@fabric_command
def paths(spec: Model, json_out: JsonOpt = False) -> None:
    """Equal-cost path counts between NIC pairs, and the path-search space (P Table 1)."""
    from hpn.routing.paths import PAPER_TABLE1, path_report

    f = build(spec)
    rep = path_report(f)
    rep["preset"] = getattr(f.spec, "preset", None)
    rep["paper_table1"] = PAPER_TABLE1
    if json_out:
        emit_json(rep)
        return
    rows = [
        (f"{name} (per plane)", f"{v['paths']:,} ({', '.join(map(str, v['per_plane']))})")
        for name, v in rep["pairs"].items()
    ]
    rows += [
        ("search space in a pod, per plane", f"{rep['search_space']:,}"),
        ("paper Table 1: HPN pod", "O(60); 3-tier designs O(2048)-O(4096)"),
    ]
    stdout.print(kv_table(f"{rep['preset']}: equal-cost paths between NICs", rows))


def parse_nic(text: str, field: str) -> tuple[int, int]:
    host, sep, nic = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(host), int(nic)
    except ValueError:
        raise InputError(field, f"expected HOST:NIC such as 12:3, got {text!r}") from None


def _gpu(f, host: int, nic: int, field: str) -> int:
    nd = f.nodes
    hit = np.flatnonzero((nd.host == host) & (nd.index == nic) & np.isin(nd.kind, (0, 3)))
    if not len(hit):
        hosts = int(nd.host.max()) + 1
        raise InputError(field, f"no NIC {host}:{nic}; hosts are 0..{hosts - 1}")
    return int(hit[0])


@app.command()
@fabric_command
def select(
    spec: Model,
    src: Annotated[str, typer.Option("--src", help="Sending NIC as HOST:NIC.")],
    dst: Annotated[str, typer.Option("--dst", help="Receiving NIC as HOST:NIC.")],
    connections: Annotated[int, typer.Option(help="Connections (queue pairs) to open.")] = 8,
    seed: Annotated[int, typer.Option(help="Hash seed.")] = 0,
    hash_: HashOpt = "crc32",
    seeds: SeedsOpt = "same",
    bond: BondOpt = "l34",
    json_out: JsonOpt = False,
) -> None:
    """HPN precise path selection: a UDP source port per connection, on distinct paths."""
    from hpn.routing.hpn_select import HpnRouter

    if not 1 <= connections <= 4096:
        raise InputError("--connections", f"must be 1..4096, got {connections}")
    f = build(spec)
    s, d = _gpu(f, *parse_nic(src, "--src"), "--src"), _gpu(f, *parse_nic(dst, "--dst"), "--dst")
    if s == d:
        raise InputError("--dst", "must differ from --src")
    router = HpnRouter(seed=seed, hashing=_hashing(hash_, seeds, bond))
    sel = router.select(f, np.full(connections, s), np.full(connections, d))
    nd, lk = f.nodes, f.links
    conns = []
    for i in range(connections):
        p = sel.paths[i]
        aggs = [int(x) for x in lk.dst[p] if nd.kind[x] == 5]
        conns.append(
            {
                "sport": int(sel.sport[i]),
                "plane": int(sel.plane[i]),
                "agg": f.node_name(aggs[0]) if aggs else None,
                "links": [int(x) for x in p],
                "hops": [f.node_name(int(x)) for x in lk.dst[p]],
            }
        )
    ids = {tuple(c["links"]) for c in conns}
    out = {
        "src": src,
        "dst": dst,
        "connections": conns,
        "distinct_paths": len(ids),
        "paths_available": int(sel.distinct_paths_found[0]),
        "planes": np.bincount(sel.plane, minlength=2).tolist(),
    }
    if json_out:
        emit_json(out)
        return
    rows = [(f"sport {c['sport']}", f"plane {c['plane']}  {' > '.join(c['hops'])}") for c in conns]
    rows.append(("distinct paths", f"{out['distinct_paths']} of {connections} connections"))
    stdout.print(kv_table(f"path selection {src} -> {dst}", rows))


@app.command()
@fabric_command
def polarization(
    spec: Model,
    routing: RoutingOpt = "ecmp",
    seed: Annotated[int, typer.Option(help="Hash seed.")] = 1,
    hosts: Annotated[int, typer.Option(help="Hosts of the job in each of 2 segments.")] = 16,
    senders: Annotated[int, typer.Option(help="Peers each GPU sends to.")] = 2,
    connections: Annotated[int, typer.Option(help="Connections per peer.")] = 4,
    hash_: HashOpt = "crc32",
    seeds: SeedsOpt = "same",
    bond: BondOpt = "l34",
    json_out: JsonOpt = False,
    out_dir: OutOpt = None,
    plot: PlotOpt = False,
) -> None:
    """The Fig 13 scenario: cross-segment DP traffic on one rail; ToR-port and Agg balance."""
    check_out(out_dir)
    config = {
        "fabric": spec.model_dump(mode="json"),
        "polarization": {
            "routing": routing,
            "seed": seed,
            "hosts": hosts,
            "senders": senders,
            "connections": connections,
            **_hashing(hash_, seeds, bond),
        },
    }
    outcome = run_polarization(config)
    out = outcome.result
    save("route polarization", outcome, out_dir, plot, json_out)
    if json_out:
        emit_json(out)
        return
    ratio = out["tor_port_load_ratio"]
    rows = [
        ("fabric", f"{out['preset']} ({'dual-plane' if out['dual_plane'] else 'single-plane'})"),
        ("routing", f"{routing}, hash {hash_}, seeds {seeds}, bond {bond}"),
        ("flows", out["flows"]),
        ("ToR port load ratio (worst NIC)", "inf (a port idle)" if ratio is None else ratio),
        (
            "largest port share (worst / mean NIC)",
            f"{out['tor_port_max_share']:.0%} / {out['tor_port_mean_share']:.0%}",
        ),
        ("Agg downlink max / mean", out["agg_downlink_max_over_mean"]),
        ("Agg downlinks used", f"{out['agg_downlinks_used']} of {out['agg_downlinks']}"),
    ]
    stdout.print(kv_table("hash polarization (P Fig 13)", rows))


POLARIZATION_DEFAULTS = {
    "routing": "ecmp",
    "seed": 1,
    "hosts": 16,
    "senders": 2,
    "connections": 4,
    **_hashing("crc32", "same", "l34"),
}


def run_polarization(config: dict):
    """Runnable ``route polarization``: ``{"fabric": {...}, "polarization": {...}}``."""
    import time

    from hpn.routing.polarization import polarization as run
    from hpn.store.runnable import Outcome
    from hpn.topology import build, spec_from_table

    t0 = time.perf_counter()
    spec = spec_from_table(config.get("fabric"))
    opts = {**POLARIZATION_DEFAULTS, **(config.get("polarization") or {})}
    unknown = set(opts) - set(POLARIZATION_DEFAULTS)
    if unknown:
        raise InputError("polarization", f"unknown fields {sorted(unknown)}")
    hashing = {k: opts[k] for k in ("tor_hash", "agg_hash", "core_hash", "seeds", "bond_hash")}
    f = build(spec)
    if int(opts["connections"]) < 1:
        raise InputError("connections", f"must be >= 1, got {opts['connections']}")
    out = run(
        f,
        opts["routing"],
        int(opts["seed"]),
        int(opts["hosts"]),
        int(opts["senders"]),
        int(opts["connections"]),
        hashing=hashing,
    )
    out.update(
        preset=spec.preset,
        dual_plane=bool(getattr(spec, "dual_plane", False)),
        seed=int(opts["seed"]),
        hashing=hashing,
    )
    resolved = {"fabric": spec.model_dump(mode="json"), "polarization": opts}
    return Outcome(out, {}, resolved, time.perf_counter() - t0)
