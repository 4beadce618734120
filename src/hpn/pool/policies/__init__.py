"""Pool policies, registered by name: the CLI, configs and docs list them from here.

A policy is one module of this package holding one :class:`Policy` subclass that sets
``name``, ``summary``, ``split`` and its ``Knobs`` model; every module here is imported and
its policy registered, so adding a policy is adding its file. Its knobs become ``[pool]``
config fields and CLI flags (:mod:`hpn.app.pool`) by themselves. Installed plug-ins register
through the ``hpn.policies`` entry-point group (``"name" = "pkg.mod:PolicyClass"``).
"""

from __future__ import annotations

import importlib
import pkgutil

from hpn.pool.backend import Cluster
from hpn.pool.policies.base import Policy, PolicyContext, Slo
from hpn.registry import Registry

POLICIES: Registry[type[Policy]] = Registry("policy", group="hpn.policies")

_LISTED = (
    "aegaeon",
    "aegaeon_artifact",
    "serverless",
    "serverless_artifact",
    "muxserve",
    "dedicated",
)
"""The built-ins' modules in the order listings show them; any other module follows, by name."""


def _register_package() -> None:
    found = {m.name for m in pkgutil.iter_modules(__path__)}
    for mod in [*_LISTED, *sorted(found - set(_LISTED))]:
        module = importlib.import_module(f"{__name__}.{mod}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Policy)
                and obj.__module__ == module.__name__
                and obj.name
            ):
                POLICIES.add(obj.name, obj, obj.summary)


_register_package()


def get_policy(name: str) -> type[Policy]:
    """Policy class by name (case-insensitive); InputError listing the known ones.

    Parameters
    ----------
    name
        Policy name.

    Returns
    -------
    type[Policy]
        The class.
    """
    key = name.strip().lower()
    if key not in POLICIES:
        raise POLICIES.unknown(name)
    return POLICIES[key]


__all__ = ["POLICIES", "Cluster", "Policy", "PolicyContext", "Slo", "get_policy"]
