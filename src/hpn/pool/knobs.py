"""Every policy's knobs as a typed config model: the one place their names, defaults, limits
and sources are stated (the policies take them as keyword arguments; `simulate` validates
`options` against the policy's model, and the application layer builds its config fields
from these models).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from hpn.config import Model
from hpn.pool.policies import aegaeon as _aeg
from hpn.pool.policies import muxserve as _mux
from hpn.pool.policies import serverless as _sls
from hpn.pool.policies import serverless_artifact as _art
from hpn.pool.policies.quotas import Q_MAX


class AegaeonKnobs(Model):
    """`aegaeon` (A §4, Alg 1-2)."""

    q_max: float = Field(Q_MAX, gt=0, description="longest decode quota, s (A Eq. 2-3)")
    max_group: int = Field(_aeg.MAX_GPSIZE, ge=1, description="prefill group size limit")
    prefetch: bool = Field(True, description="pre-load the next model behind the running one")


class ServerlessKnobs(Model):
    """`serverless`: ServerlessLLM's autoscaler and store (defaults: its shipped configs)."""

    target: int = Field(_sls.TARGET, ge=1, description="target concurrency per instance")
    min_instances: int = Field(_sls.MIN_INSTANCES, ge=0, description="instances per model, min")
    max_instances: int = Field(_sls.MAX_INSTANCES, ge=1, description="instances per model, max")
    keep_alive: float = Field(_sls.KEEP_ALIVE_S, ge=0, description="idle s before scale-down")
    interval: float = Field(_sls.INTERVAL_S, gt=0, description="autoscaler/balancer loop, s")
    tier: Literal["dram", "ssd"] = Field("dram", description="checkpoint store tier")
    startup_s: float = Field(_sls.STARTUP_S, ge=0, description="engine start-up per instance, s")
    ssd_bandwidth: float = Field(_sls.SSD_BPS, gt=0, description="store SSD bandwidth, B/s")

    @model_validator(mode="after")
    def _range(self) -> ServerlessKnobs:
        if self.min_instances > self.max_instances:
            raise ValueError("min_instances must be <= max_instances")
        return self


class ServerlessArtifactKnobs(Model):
    """`serverless-artifact`: the authors' simulated ServerlessLLM (Art V02Policy)."""

    qs: int = Field(_art.QS, ge=1, description="queue slots per worker (QS)")
    r: int = Field(_art.R, ge=1, description="scale up below this many free slots (R)")
    start_timeout: float = Field(_art.START_TIMEOUT, gt=0, description="no-token failure, s")


class MuxServeKnobs(Model):
    """`muxserve`: MuxServe's placer memory accounting."""

    kv_fraction: float = Field(_mux.KV_FRACTION, ge=0, lt=1, description="GPU share for KV")
    overhead_gb: float = Field(_mux.OVERHEAD_GB, ge=0, description="GB charged per model")


class DedicatedKnobs(Model):
    """`dedicated`: no knobs."""


KNOBS: dict[str, type[Model]] = {
    "aegaeon": AegaeonKnobs,
    "serverless": ServerlessKnobs,
    "serverless-artifact": ServerlessArtifactKnobs,
    "muxserve": MuxServeKnobs,
    "dedicated": DedicatedKnobs,
}


def validate_options(policy: str, options: dict | None) -> dict:
    """`options` checked against the policy's knobs, with the defaults filled in.

    Parameters
    ----------
    policy
        Policy name.
    options
        Knob values given; None: all defaults.

    Returns
    -------
    dict
        Every knob of the policy.

    Raises
    ------
    InputError
        For an unknown knob or a bad value, named ``<policy> option.<knob>``.
    """
    from pydantic import ValidationError

    from hpn.config import one_line

    try:
        return KNOBS[policy].model_validate(options or {}).model_dump()
    except ValidationError as e:
        raise one_line(e, prefix=f"{policy} option") from None
