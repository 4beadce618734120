"""Fabric files: JSON (lossless, with the spec), GraphML (for graph tools) and SimAI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from hpn.errors import InputError
from hpn.topology.assembly import LINK_DTYPES, NODE_DTYPES
from hpn.topology.fabric import Fabric, Links, LinkTier, Network, NodeKind, Nodes

MAX_BYTES = 2**30  # a topology file's size at most

FORMATS = ("json", "graphml", "simai")
_NODE_COLS = tuple(NODE_DTYPES)
_LINK_COLS = tuple(LINK_DTYPES)


def to_json(f: Fabric) -> dict[str, Any]:
    """A lossless JSON document of the fabric: spec, node columns, directed link columns.

    Parameters
    ----------
    f
        The fabric.

    Returns
    -------
    dict
        The document (``format = "hpn-fabric"``, ``version``, ``spec``, ``meta``, ``nodes``,
        ``links``); :func:`from_json` reads it back.
    """
    spec = f.spec.model_dump(mode="json") if f.spec is not None else None
    return {
        "format": "hpn-fabric",
        "version": 1,
        "spec": spec,
        "meta": {k: v for k, v in f.meta.items() if isinstance(v, int | float | str)},
        "node_kinds": [k.name.lower() for k in NodeKind],
        "link_tiers": [t.name.lower() for t in LinkTier],
        "nodes": {c: getattr(f.nodes, c).tolist() for c in _NODE_COLS},
        "links": {c: getattr(f.links, c).tolist() for c in _LINK_COLS},
    }


def from_json(doc: dict[str, Any], source: str = "json") -> Fabric:
    """A fabric from a document of :func:`to_json`.

    Parameters
    ----------
    doc
        The parsed JSON document.
    source
        Where it came from, named in errors.

    Returns
    -------
    Fabric
        The fabric; its spec is rebuilt when the document has one.

    Raises
    ------
    InputError
        When the document is not an hpn fabric or its columns are inconsistent.
    """
    if not isinstance(doc, dict) or doc.get("format") != "hpn-fabric":
        raise InputError(source, "not an hpn fabric JSON file (format must be 'hpn-fabric')")
    try:
        nodes = Nodes(**{c: np.asarray(doc["nodes"][c], d) for c, d in NODE_DTYPES.items()})
        links = Links(**{c: np.asarray(doc["links"][c], d) for c, d in LINK_DTYPES.items()})
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(source, f"malformed fabric JSON: {e}") from None
    _check(nodes, links, source)
    spec = None
    if doc.get("spec"):
        from hpn.topology.presets import make_spec

        spec = make_spec(doc["spec"]["preset"], doc["spec"])
    return Fabric(spec, nodes, links, dict(doc.get("meta") or {}))


def _check(nodes: Nodes, links: Links, source: str) -> None:
    n = len(nodes.kind)
    if len({len(getattr(nodes, c)) for c in _NODE_COLS}) != 1:
        raise InputError(source, "node columns differ in length")
    if len({len(getattr(links, c)) for c in _LINK_COLS}) != 1 or len(links.src) % 2:
        raise InputError(source, "link columns differ in length or are not in directed pairs")
    if len(links.src) and (links.src.min() < 0 or max(links.src.max(), links.dst.max()) >= n):
        raise InputError(source, f"a link endpoint is outside 0..{n - 1}")
    if (links.capacity <= 0).any():
        raise InputError(source, "every link capacity must be > 0")


def write_graphml(f: Fabric, path: Path) -> None:
    """Write ``f`` as GraphML (a networkx multigraph with node and link attributes).

    Parameters
    ----------
    f
        The fabric.
    path
        Output file.
    """
    import networkx as nx

    nx.write_graphml(f.to_networkx(multigraph=True), path)


def read_graphml(path: Path) -> Fabric:
    """A fabric from a GraphML file written by :func:`write_graphml`.

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    Fabric
        The fabric (no spec).

    Raises
    ------
    InputError
        When the file is malformed or lacks an attribute.
    """
    import networkx as nx

    try:
        g = nx.read_graphml(path, node_type=int)
    except Exception as e:  # networkx raises several parser error types
        raise InputError(str(path), f"malformed GraphML: {e}") from None
    kinds = {k.name.lower(): int(k) for k in NodeKind}
    tiers = {t.name.lower(): int(t) for t in LinkTier}
    nets = {n.name.lower(): int(n) for n in Network}
    order = sorted(g.nodes)
    if order != list(range(len(order))):
        raise InputError(str(path), "node ids must be 0..n-1")
    try:
        cols = {c: [g.nodes[i][c] for i in order] for c in _NODE_COLS}
        cols["kind"] = [kinds[k] for k in cols["kind"]]
        cols["network"] = [nets[k] for k in cols["network"]]
        edges = sorted(g.edges(data=True), key=lambda e: e[2]["link"])
        lcols = {
            "src": [e[0] for e in edges],
            "dst": [e[1] for e in edges],
            "capacity": [e[2]["capacity"] for e in edges],
            "latency": [e[2]["latency"] for e in edges],
            "tier": [tiers[e[2]["tier"]] for e in edges],
            "port": [e[2]["port"] for e in edges],
        }
    except KeyError as e:
        raise InputError(str(path), f"GraphML lacks attribute or value {e}") from None
    doc = {"format": "hpn-fabric", "nodes": cols, "links": lcols}
    return from_json(doc, str(path))


def write(f: Fabric, fmt: str, path: str | Path, gpu_type: str = "H800") -> None:
    """Write ``f`` to ``path`` atomically (a temporary file, then a rename).

    Parameters
    ----------
    f
        The fabric.
    fmt
        ``json``, ``graphml`` or ``simai``.
    path
        Output file.
    gpu_type
        GPU type written in a SimAI header.

    Raises
    ------
    InputError
        For an unknown format (field ``--format``).
    """
    if fmt not in FORMATS:
        raise InputError("--format", f"choose from {', '.join(FORMATS)}, got {fmt!r}")
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        if fmt == "json":
            tmp.write_text(json.dumps(to_json(f)))
        elif fmt == "graphml":
            write_graphml(f, tmp)
        else:
            from hpn.topology.simai import to_simai

            tmp.write_text(to_simai(f, gpu_type))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def read(path: str | Path, fmt: str | None = None) -> Fabric:
    """Read a fabric file; the format defaults to the file's extension (none: SimAI).

    Parameters
    ----------
    path
        The file.
    fmt
        ``json``, ``graphml`` or ``simai``; None: from the extension.

    Returns
    -------
    Fabric
        The fabric.

    Raises
    ------
    InputError
        When the file is missing or malformed.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), "no such file")
    fmt = fmt or {".json": "json", ".graphml": "graphml"}.get(path.suffix, "simai")
    if fmt == "json":
        from hpn.config import read_input

        try:
            doc = json.loads(read_input(path, MAX_BYTES))
        except json.JSONDecodeError as e:
            raise InputError(str(path), f"malformed JSON: {e}") from None
        except RecursionError:
            raise InputError(str(path), "JSON nested too deeply") from None
        return from_json(doc, str(path))
    if fmt == "graphml":
        return read_graphml(path)
    if fmt == "simai":
        from hpn.topology.simai import read_simai

        return read_simai(path)
    raise InputError("--format", f"choose from {', '.join(FORMATS)}, got {fmt!r}")
