"""NCCL's environment-list syntax (NCCL_ALGO, NCCL_PROTO) as ``--algo`` / ``--proto`` take it."""

from __future__ import annotations

from hpn.errors import InputError
from hpn.workload.collectives.versions import FUNCS


def parse_list(text: str, names: tuple[str, ...], flag: str, op: str) -> list[bool]:
    """NCCL_ALGO / NCCL_PROTO semantics (tuning.cc:36-136): a comma list enables exactly its
    names, ``^list`` everything but them; ``;op:list`` entries override per operation."""
    on = [True] * len(names)
    entries = text.split(";")
    for i, entry in enumerate(entries):
        prefix, _, elems = entry.rpartition(":")
        if not prefix and ":" not in entry:
            if i:
                raise InputError(flag, f"every entry but the first needs an op prefix: {text!r}")
        elif prefix.lower() not in (*FUNCS, "sendrecv", "alltoall"):
            raise InputError(flag, f"unknown op prefix {prefix!r}; choose from: {', '.join(FUNCS)}")
        if prefix and prefix.lower() != op:
            continue
        neg = elems.startswith("^")
        elems = elems[1:] if neg else elems
        chosen = [False] * len(names)
        for e in (x.strip().lower() for x in elems.split(",")):
            if e not in names:
                raise InputError(flag, f"unknown {flag} {e!r}; choose from: {', '.join(names)}")
            chosen[names.index(e)] = True
        on = [(not x) if neg else x for x in chosen]
    return on
