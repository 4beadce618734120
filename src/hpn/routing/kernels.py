"""Compiled routing kernels (numba, the ``fast`` extra): the hashed ECMP walk and HPN's
candidate search, flow by flow, with the numpy code of :mod:`hpn.routing.shortest`,
:mod:`hpn.routing.ecmp` and :mod:`hpn.routing.hpn_select` as the reference and fallback.

The walk makes the same choices with the same integer arithmetic as the vectorized code:
candidates at a switch are its out-links one hop closer to the destination class, in link id
order; the switch hashes the RoCEv2 5-tuple (the hash functions of :mod:`hpn.routing.hashing`
ported byte for byte), folds, rotates by its tier's offset and takes the modulo (two-stage over
neighbours and LAG members), cores map in-port to out-port. Candidate lists are memoized per
(switch, destination class) and shared when equal (a ToR's uplinks serve most classes), with
their neighbour groups precomputed, so a hop costs a hash and a few lookups. Tests compare the
results with the numpy code bit for bit.

The code is in three modules by purpose: :mod:`~hpn.routing.kernel_base` (constants, hashes),
:mod:`~hpn.routing.kernel_walk` (candidate lists, the walk) and
:mod:`~hpn.routing.kernel_search` (HPN's rounds); this one compiles them (:func:`kernel`) and
keeps the class distances. A compiled function's cache is keyed by the sources it reaches
(:func:`hpn.jit.source_key`), so an edit of a callee in another of these files recompiles it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hpn.jit import HAVE_NUMBA, Kernel, keyed_jit  # noqa: F401 - HAVE_NUMBA re-exported
from hpn.routing import kernel_base, kernel_search, kernel_walk
from hpn.routing.kernel_base import (  # noqa: F401 - the kernels' constants, re-exported
    _ENT,
    _FAR,
    _REC,
    BOND_HASH,
    BOND_L34,
    BOND_RR,
    FULL,
    HASH_CODES,
    MODE_HASH,
    MODE_UNIFORM,
    NO_NEXT_HOP,
    NO_PATH,
    OK,
    _hash,
    _role_hash,
    _seed_term,
    _sport_tables,
    _terms,
    _with_sport,
    hash_tables,
)
from hpn.routing.kernel_search import _dense_ids  # noqa: F401
from hpn.routing.kernel_walk import LANES  # noqa: F401

_compiled: dict = {}
_MODULES = (kernel_base, kernel_walk, kernel_search)


def _jit_shared(names: tuple[str, ...], **options: Any) -> None:
    """Compile each function ``name`` once, in order, and put the compiled one in every module
    here that names it (each module's functions read their callees from their own globals)."""
    spaces = [vars(m) for m in _MODULES] + [globals()]
    for name in names:
        home = next(
            ns
            for ns in spaces
            if name in ns and getattr(ns[name], "__module__", "") == ns["__name__"]
        )
        compiled = keyed_jit(home[name], **options)
        for ns in spaces:
            if name in ns:
                ns[name] = compiled


def _class_dist(indptr, indices, m, s_node, s_class, s_level, nsig):
    """Hop distances (int32, ``_FAR``: none) from every compact switch to every destination
    class, with a last row of ``_FAR`` (as :func:`hpn.routing.shortest._classes` computes
    them). Class ``s_class[k]`` has switch ``s_node[k]`` at distance ``s_level[k]`` (0 for a
    switch, 1 for a switch an endpoint hangs from); one breadth-first search for all classes
    at once, each switch holding a bitset of the classes it reaches (as ``_hops_to`` does per
    target)."""  # pragma: no cover - compiled
    words = (nsig + 63) // 64
    reach = np.zeros((m, words), np.uint64)
    nb = np.zeros((m, words), np.uint64)
    dist = np.full((m + 1, nsig), np.int32(_FAR), np.int32)
    top = 0
    for k in range(len(s_level)):
        top = max(top, s_level[k])
    level = 0
    while True:
        if level > 0:
            for x in range(m):
                for w in range(words):
                    nb[x, w] = 0
                for k in range(indptr[x], indptr[x + 1]):
                    y = indices[k]
                    for w in range(words):
                        nb[x, w] |= reach[y, w]
        for k in range(len(s_level)):
            if s_level[k] == level:
                c = s_class[k]
                nb[s_node[k], c >> 6] |= np.uint64(1) << np.uint64(c & 63)
        fresh_any = False
        for x in range(m):
            for w in range(words):
                fresh = nb[x, w] & ~reach[x, w]
                if fresh:
                    fresh_any = True
                    reach[x, w] |= fresh
                    for b in range(64):
                        if (fresh >> np.uint64(b)) & np.uint64(1):
                            dist[x, 64 * w + b] = level
        if level == 0:
            for x in range(m):
                for w in range(words):
                    nb[x, w] = 0
        if not fresh_any and level >= top:
            break
        level += 1
    return dist


def kernel(name: str) -> Callable[..., Any]:
    """The compiled kernel ``name`` (``route``, ``search``, ``class_dist`` or
    ``dense_ids``), compiled on first use.

    Parameters
    ----------
    name
        ``route``, ``search``, ``class_dist`` or ``dense_ids``.

    Returns
    -------
    Callable
        The numba function.
    """
    if not _compiled:
        # the helpers allocate nothing: compiled without reference counting, they do not
        # pay two atomic operations per array of their tuple arguments on every call; one
        # `_walk_lanes` call steps ``LANES`` walks (a call per walk would cost more than
        # inlining)
        plain = (
            "_smix", "_byte", "_crc", "_seed_reg", "_hash", "_seed_term", "_terms",
            "_with_sport", "_role_hash", "_umod", "_rot16", "_uniform_pick", "_new_list",
            "_distance", "_ready_row", "_warm", "_walk_lanes", "_pair_round",
        )  # fmt: skip
        _jit_shared(plain, _nrt=False)
        _jit_shared(("_sport_tables", "_placed", "_dense_ids"))
        route = keyed_jit(kernel_walk._route_kernel)
        search = keyed_jit(kernel_search._search_pass)
        _compiled.update(
            route=Kernel(route),
            search=Kernel(search),
            class_dist=Kernel(keyed_jit(_class_dist)),
            dense_ids=Kernel(kernel_search._dense_ids),  # (also the search's helper)
        )
    return _compiled[name]
