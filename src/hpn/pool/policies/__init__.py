"""Pool policies, registered by name: the CLI, configs and docs list them from here."""

from __future__ import annotations

from hpn.pool.backend import Cluster
from hpn.pool.policies.aegaeon import Aegaeon
from hpn.pool.policies.base import Policy, Slo
from hpn.pool.policies.dedicated import Dedicated
from hpn.pool.policies.muxserve import MuxServe
from hpn.pool.policies.serverless import Serverless
from hpn.pool.policies.serverless_artifact import ServerlessArtifact
from hpn.registry import Registry

POLICIES: Registry[type[Policy]] = Registry("policy")
for _p in (Aegaeon, Serverless, ServerlessArtifact, MuxServe, Dedicated):
    POLICIES.add(_p.name, _p, _p.summary)


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


__all__ = ["POLICIES", "Cluster", "Policy", "Slo", "get_policy"]
