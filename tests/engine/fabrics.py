"""Tiny hand-made fabrics for closed-form and property tests."""

from __future__ import annotations

import numpy as np

from hpn.topology.assembly import Assembly
from hpn.topology.fabric import Fabric, LinkTier, NodeKind


def star(n_hosts: int, capacity: float = 100e9, latency: float = 1e-6) -> Fabric:
    """``n_hosts`` hosts (ids 0..n-1) on one ToR (id n)."""
    asm = Assembly()
    hosts = asm.add_nodes(NodeKind.HOST, n_hosts, host=np.arange(n_hosts))
    tor = asm.add_nodes(NodeKind.TOR, 1)
    asm.add_links(hosts, np.repeat(tor, n_hosts), capacity, latency, LinkTier.NIC_TOR, port=0)
    return asm.fabric(None)


def random_fabric(rng: np.random.Generator, n_switch: int, n_host: int) -> Fabric:
    """A connected random switch graph with hosts on one or two switches each."""
    asm = Assembly()
    hosts = asm.add_nodes(NodeKind.HOST, n_host, host=np.arange(n_host))
    sw = asm.add_nodes(NodeKind.TOR, n_switch)
    caps = np.array([10e9, 25e9, 40e9, 100e9])
    for i in range(1, n_switch):  # a random spanning tree keeps it connected
        j = int(rng.integers(i))
        asm.add_links([sw[i]], [sw[j]], float(rng.choice(caps)), 1e-6, LinkTier.TOR_AGG)
    extra = int(rng.integers(0, n_switch + 1)) if n_switch > 1 else 0
    for _ in range(extra):  # extra links, parallel ones included
        a, b = rng.choice(n_switch, 2, replace=False)
        asm.add_links([sw[a]], [sw[b]], float(rng.choice(caps)), 1e-6, LinkTier.TOR_AGG)
    for h in hosts:
        for s in rng.choice(n_switch, int(rng.integers(1, min(2, n_switch) + 1)), replace=False):
            asm.add_links([h], [sw[s]], float(rng.choice(caps)), 5e-7, LinkTier.NIC_TOR, port=0)
    return asm.fabric(None)
