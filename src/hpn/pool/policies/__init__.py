"""Pool policies, registered by name: the CLI, configs and docs list them from here."""

from __future__ import annotations

from hpn.errors import InputError
from hpn.pool.backend import Cluster
from hpn.pool.policies.aegaeon import Aegaeon
from hpn.pool.policies.base import Policy, Slo
from hpn.pool.policies.dedicated import Dedicated
from hpn.pool.policies.muxserve import MuxServe
from hpn.pool.policies.serverless import Serverless
from hpn.pool.policies.serverless_artifact import ServerlessArtifact

POLICIES: dict[str, type[Policy]] = {
    p.name: p for p in (Aegaeon, Serverless, ServerlessArtifact, MuxServe, Dedicated)
}


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
        raise InputError("policy", f"unknown policy {name!r}; choose from: {', '.join(POLICIES)}")
    return POLICIES[key]


__all__ = ["POLICIES", "Cluster", "Policy", "Slo", "get_policy"]
