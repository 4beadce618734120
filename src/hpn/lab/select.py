"""HPN's host-side path selection, for real (P §6.1, App B Alg 1): the host learns which
source port takes which path by asking every hop's kernel (its seeded hash), keeps one port
per distinct path, and gives each connection its own path.

Per source NIC, connections are assigned in order: connection ``j`` of a NIC takes plane
(NIC port) ``j mod 2`` (alternating across its peers, so both ports carry equal counts), a
path of that plane its pair has not used yet, and among those the one whose links this NIC's
earlier connections load least (spreading over ToR uplinks across all its peers). A pair
with more connections than distinct paths reuses paths, least loaded first.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from hpn.lab.learn import learn_paths
from hpn.lab.plan import LabPlan
from hpn.routing.addressing import SPORT_MAX, SPORT_MIN


def candidate_sports(seed: int, pair: int, n: int) -> np.ndarray:
    rng = np.random.default_rng([seed, pair])
    return rng.choice(np.arange(SPORT_MIN, SPORT_MAX + 1), n, replace=False).astype(np.uint32)


class SelectionInfo(TypedDict, total=False):
    """What HPN's path selection learned (empty where source ports are drawn at random)."""

    pairs: int
    candidates_per_pair: int
    distinct_paths_min: int
    distinct_paths_max: int
    route_queries: int


def select(
    plan: LabPlan, src: np.ndarray, dst: np.ndarray, seed: int = 0, candidates: int = 32
) -> tuple[np.ndarray, SelectionInfo]:
    """A source port per connection (flows src[i] -> dst[i]; repeated pairs are a pair's
    connections), and what was learned."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    f = plan.fabric
    pairs, pair_of = np.unique(np.stack([src, dst]), axis=1, return_inverse=True)
    pair_of = pair_of.ravel()
    n_pairs = pairs.shape[1]
    cand = np.concatenate(
        [
            candidate_sports(seed, int(pairs[0, p] * f.num_nodes + pairs[1, p]), candidates)
            for p in range(n_pairs)
        ]
    )
    c_pair = np.repeat(np.arange(n_pairs), candidates)
    paths, ok = learn_paths(plan, pairs[0, c_pair], pairs[1, c_pair], cand)
    # distinct paths per pair, each with its first source port and its plane
    options: list[list[tuple[tuple[int, ...], int, int]]] = [[] for _ in range(n_pairs)]
    seen: list[set] = [set() for _ in range(n_pairs)]
    for i in range(len(cand)):
        if not ok[i]:
            continue
        p = tuple(int(x) for x in paths[i])
        if p in seen[c_pair[i]]:
            continue
        seen[c_pair[i]].add(p)
        options[c_pair[i]].append((p, int(cand[i]), int(f.links.port[p[0]])))
    sport = np.zeros(len(src), np.uint32)
    use: dict[int, dict[int, int]] = {}  # per source NIC: link -> connections on it
    nth: dict[int, int] = {}  # per source NIC: connections assigned so far
    taken: list[dict[tuple, int]] = [{} for _ in range(n_pairs)]
    for i in range(len(src)):
        pi = int(pair_of[i])
        opts = options[pi]
        if not opts:
            sport[i] = cand[pi * candidates]  # no route now: any port
            continue
        u = use.setdefault(int(src[i]), {})
        j = nth.get(int(src[i]), 0)
        nth[int(src[i])] = j + 1
        planes = {o[2] for o in opts}
        want = j % 2 if len(planes) > 1 else next(iter(planes))

        def cost(o, u=u, pi=pi, want=want):
            return (
                o[2] != want,
                taken[pi].get(o[0], 0),
                sum(u.get(ln, 0) for ln in o[0]),
                max(u.get(ln, 0) for ln in o[0]),
            )

        best = min(opts, key=cost)
        sport[i] = best[1]
        taken[pi][best[0]] = taken[pi].get(best[0], 0) + 1
        for ln in best[0]:
            u[ln] = u.get(ln, 0) + 1
    info = SelectionInfo(
        pairs=int(n_pairs),
        candidates_per_pair=candidates,
        distinct_paths_min=int(min(len(o) for o in options)) if options else 0,
        distinct_paths_max=int(max(len(o) for o in options)) if options else 0,
        route_queries=int(paths.lengths.sum()),
    )
    return sport, info
