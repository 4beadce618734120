"""The routing interface: a policy maps flows (src, dst, key) to paths of link ids.

Many paths are one CSR (:class:`Paths`): ``links[offsets[i]:offsets[i + 1]]`` is flow ``i``'s
path, in hop order. Policies are registered by name in :data:`ROUTERS`, so the CLI and configs
list them from one place; :func:`make_router` builds one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from hpn.errors import InputError
from hpn.registry import Registry

if TYPE_CHECKING:
    from hpn.topology import Fabric


@dataclass(frozen=True, eq=False)
class Paths:
    """Paths as a CSR: ``offsets`` (n + 1, int64) and ``links`` (directed link ids, int64)."""

    offsets: np.ndarray
    links: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", np.asarray(self.offsets, dtype=np.int64))
        object.__setattr__(self, "links", np.asarray(self.links, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.links[self.offsets[i] : self.offsets[i + 1]]

    @property
    def lengths(self) -> np.ndarray:
        """Hops of every path."""
        return np.diff(self.offsets)

    @property
    def flow_of_hop(self) -> np.ndarray:
        """For every entry of ``links``, the index of its flow."""
        return np.repeat(np.arange(len(self)), self.lengths)

    @classmethod
    def from_lists(cls, paths: Sequence[Sequence[int]]) -> Paths:
        """Paths from one list of directed link ids per flow.

        Parameters
        ----------
        paths
            Link ids of each path.

        Returns
        -------
        Paths
            The CSR.

        Examples
        --------
        >>> p = Paths.from_lists([[0, 2], [5]])
        >>> p.offsets.tolist(), p.links.tolist(), p[1].tolist()
        ([0, 2, 3], [0, 2, 5], [5])
        """
        lengths = np.fromiter((len(p) for p in paths), np.int64, len(paths))
        offsets = np.zeros(len(paths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = [int(x) for p in paths for x in p]
        return cls(offsets, np.asarray(flat, np.int64))

    @classmethod
    def concat(cls, parts: Sequence[Paths]) -> Paths:
        """The paths of several sets, one after the other.

        Parameters
        ----------
        parts
            The sets.

        Returns
        -------
        Paths
            Their flows in order (no flow for no parts).
        """
        if not parts:
            return cls(np.zeros(1, np.int64), np.zeros(0, np.int64))
        lengths = np.concatenate([p.lengths for p in parts])
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(offsets, np.concatenate([p.links for p in parts]))

    def take(self, idx: np.ndarray) -> Paths:
        """The paths of flows ``idx``, in that order."""
        idx = np.asarray(idx, np.int64)
        lengths = self.lengths[idx]
        offsets = np.zeros(len(idx) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        starts = np.repeat(self.offsets[idx] - offsets[:-1], lengths)
        return Paths(offsets, self.links[starts + np.arange(offsets[-1])])

    def per_flow_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum of a per-link quantity (e.g. latency) along every path."""
        return np.bincount(self.flow_of_hop, weights=values[self.links], minlength=len(self))

    def per_flow_min(self, values: np.ndarray) -> np.ndarray:
        """Minimum of a per-link quantity (e.g. capacity) along every path (inf if empty)."""
        out = np.full(len(self), np.inf)
        np.minimum.at(out, self.flow_of_hop, values[self.links])
        return out

    def check(self, fabric: Fabric, src: np.ndarray, dst: np.ndarray) -> None:
        """Raise InputError unless every path is a connected walk from src to dst."""
        n, lk = len(self), fabric.links
        if len(src) != n or len(dst) != n:
            raise InputError("paths", f"{n} paths for {len(src)} flows")
        if len(self.links) and (self.links.min() < 0 or self.links.max() >= fabric.num_links):
            raise InputError("paths", f"link ids must be in 0..{fabric.num_links - 1}")
        lengths = self.lengths
        empty = np.flatnonzero(lengths == 0)
        if len(empty):
            raise InputError("paths", f"flow {int(empty[0])} has an empty path")
        first, last = self.offsets[:-1], self.offsets[1:] - 1
        bad = (lk.src[self.links[first]] != src) | (lk.dst[self.links[last]] != dst)
        inner = np.ones(len(self.links), bool)
        inner[last] = False
        idx = np.flatnonzero(inner)
        broken = lk.dst[self.links[idx]] != lk.src[self.links[idx + 1]]
        if broken.any():
            bad[self.flow_of_hop[idx[broken]]] = True
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError("paths", f"flow {i}: path is not a walk from its src to its dst")


@runtime_checkable
class Router(Protocol):
    """A routing policy. ``keys`` identify flows (a 5-tuple hash, a flow id) so the choice of
    a flow does not depend on its position; ``down`` marks links that must not be used.

    A policy may set ``per_connection = True`` when routing only the distinct (src, dst, key)
    connections of a call gives each the path its flows get when all are routed: the engine
    then routes every connection once."""

    name: str

    def route(
        self,
        fabric: Fabric,
        src: np.ndarray,
        dst: np.ndarray,
        keys: np.ndarray | None = None,
        down: np.ndarray | None = None,
    ) -> Paths:
        """A path per flow ``src[i] -> dst[i]``.

        Parameters
        ----------
        fabric
            The fabric.
        src, dst
            Endpoint node ids of each flow.
        keys
            A flow identity per flow (a 5-tuple hash, a flow id); None: the flow's index.
        down
            Directed link ids that must not be used; None: every link is up.

        Returns
        -------
        Paths
            One path per flow.
        """
        ...


@dataclass(frozen=True)
class RouterInfo:
    name: str
    factory: Callable[..., Router]
    summary: str


ROUTERS: Registry[RouterInfo] = Registry("policy", field="routing")
_POLICY_MODULES = ("ecmp", "hpn_select", "ideal", "shortest")


def load_policies() -> None:
    """Import the policy modules (each registers itself in :data:`ROUTERS`)."""
    import importlib

    for m in _POLICY_MODULES:
        importlib.import_module(f"hpn.routing.{m}")


def register_router(name: str, factory: Callable[..., Router], summary: str) -> None:
    """Register a routing policy under ``name``.

    Parameters
    ----------
    name
        Policy name (``--routing``).
    factory
        ``factory(**kwargs) -> Router``.
    summary
        One line for help and docs.
    """
    ROUTERS.add(name, RouterInfo(name, factory, summary), summary)


def make_router(name: str, **kwargs: Any) -> Router:
    """The routing policy registered as ``name``, built with ``kwargs`` (e.g. ``seed``).

    Parameters
    ----------
    name
        Policy name.
    **kwargs
        Arguments of its factory.

    Returns
    -------
    Router
        The router.

    Raises
    ------
    InputError
        For an unknown policy.
    """
    load_policies()
    return ROUTERS.get(name).factory(**kwargs)


def default_policy(fabric: Fabric) -> str:
    """The routing a fabric's hosts and switches use: its preset's (``hpn`` on HPN-family
    fabrics; an imported fabric may name its preset in ``meta["family"]``), else ``ecmp``.

    Parameters
    ----------
    fabric
        The fabric.

    Returns
    -------
    str
        The policy name.

    Examples
    --------
    >>> from hpn.topology import build
    >>> default_policy(build("fat-tree", k=4))
    'ecmp'
    """
    from hpn.topology.presets import PRESETS

    family = getattr(fabric.spec, "preset", None) or fabric.meta.get("family")
    return PRESETS[family].routing if isinstance(family, str) and family in PRESETS else "ecmp"


def router_for(
    fabric: Fabric, routing: str | None = None, *, seed: int = 0, hashing: Any = None
) -> Router:
    """The router of policy ``routing`` (None: the fabric's default), with ``hashing`` (a
    HashConfig or dict) for the policies that hash (``ecmp``, ``hpn``).

    Parameters
    ----------
    fabric
        The fabric.
    routing
        Policy name; None: :func:`default_policy`.
    seed
        Seed of the policy.
    hashing
        Hash settings; None: the policy's defaults.

    Returns
    -------
    Router
        The router.

    Raises
    ------
    InputError
        For an unknown policy, or hashing given to a policy that does not hash.
    """
    name = routing or default_policy(fabric)
    kw: dict[str, Any] = {"seed": seed}
    if hashing is not None:
        if name not in HASHING_POLICIES:
            raise InputError(
                "routing", f"hash settings apply to {', '.join(HASHING_POLICIES)}, not {name!r}"
            )
        kw["hashing"] = hashing
    return make_router(name, **kw)


HASHING_POLICIES = ("ecmp", "hpn")


def describe(router: Router) -> str:
    """One line naming a router and, where it hashes, how (for outputs and stored runs).

    Parameters
    ----------
    router
        The router.

    Returns
    -------
    str
        ``name`` or ``name (hash settings)``.
    """
    hashing = getattr(router, "hashing", None)
    return f"{router.name} ({hashing.describe()})" if hashing is not None else router.name


def validate_endpoints(fabric: Fabric, src: np.ndarray, dst: np.ndarray) -> None:
    """InputError for unknown nodes or a flow to itself.

    Parameters
    ----------
    fabric
        The fabric.
    src, dst
        Endpoint node ids of each flow.
    """
    n = fabric.num_nodes
    for name, arr in (("src", src), ("dst", dst)):
        if len(arr) and (arr.min() < 0 or arr.max() >= n):
            bad = int(arr[(arr < 0) | (arr >= n)][0])
            raise InputError(name, f"unknown node {bad}; the fabric has nodes 0..{n - 1}")
    same = np.flatnonzero(src == dst)
    if len(same):
        raise InputError(
            "dst", f"flow {int(same[0])} is sent to its own source {int(src[same[0]])}"
        )
