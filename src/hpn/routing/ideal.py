"""``ideal``: a balanced upper bound. At every hop, the flows at a switch take its equal-cost
next hops in turn (round robin, continuing across calls), so no next hop gets more than one
flow above another. It balances flows, not bytes, and does not split a flow over paths;
with the many equal flows of collectives that is the balanced split the issue asks for.
"""

from __future__ import annotations

import numpy as np

from hpn.routing.base import register_router
from hpn.routing.shortest import Choice, Chooser, EcmpRouter
from hpn.topology.fabric import Fabric


class IdealRouter(EcmpRouter):
    name = "ideal"
    per_connection = False  # the round robin counts every flow, duplicates included

    def chooser(
        self, fabric: Fabric, src: np.ndarray, dst: np.ndarray, keys: np.ndarray
    ) -> tuple[np.ndarray, Chooser]:
        turn = np.zeros(fabric.num_nodes, np.int64)

        def pick(c: Choice) -> np.ndarray:
            order = np.lexsort((c.keys, c.nodes))
            nodes = c.nodes[order]
            start = np.searchsorted(nodes, nodes, side="left")
            rank = np.empty(len(nodes), np.int64)
            rank[order] = np.arange(len(nodes)) - start
            out = (turn[c.nodes] + rank) % c.count
            np.add.at(turn, c.nodes, 1)
            return out

        return keys, pick


register_router("ideal", IdealRouter, "balanced round robin at every hop (an upper bound)")
