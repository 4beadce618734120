"""What every pool policy shares: the backend it drives, the predictor it estimates with,
the cluster it was given, the expected load and the SLO."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from hpn.config import Model
from hpn.gpus import GPU
from hpn.pool.backend import Backend, Cluster
from hpn.pool.costs import LatencySource, Loader
from hpn.pool.predictor import Predictor
from hpn.pool.requests import Request


@dataclass(frozen=True)
class Slo:
    """Per-request latency targets in seconds (A §7.1: TTFT 10 s, TBT 100 ms)."""

    ttft: float = 10.0
    tbt: float = 0.1


@dataclass(frozen=True)
class PolicyContext:
    """What a policy is given to schedule with (the first argument of every constructor).

    Parameters
    ----------
    backend
        The `Backend` to drive.
    predictor
        Latency and memory estimates.
    cluster
        The GPUs given.
    rates
        Expected req/s per model: a forecast given to placement decisions (the trace's
        declared rates, or a mix's), never the realised future arrivals.
    slo
        The latency targets.
    """

    backend: Backend
    predictor: Predictor
    cluster: Cluster
    rates: dict[str, float]
    slo: Slo = Slo()


class NoKnobs(Model):
    """No knobs."""


class Policy:
    """A scheduler over a pool of instances.

    Subclasses set `name`, `summary` and `split` (whether they use a prefill/decode
    partition), declare their knobs as a pydantic model `Knobs` (its fields are the keyword
    arguments of the constructor after the :class:`PolicyContext`; the CLI flags, config
    fields, help and reference docs are generated from it), implement `on_arrival`, and react
    to `Done` completions of the operations they start. They read only `backend.instances`
    handles, `backend.now()`, the `predictor` and their own state.

    Parameters
    ----------
    ctx
        The backend, predictor, cluster, expected rates and SLO.
    """

    name = ""
    split = False
    summary = ""
    Knobs: ClassVar[type[Model]] = NoKnobs

    @classmethod
    def options(cls, given: dict[str, Any] | None = None) -> dict[str, Any]:
        """``given`` knob values checked against `Knobs`, with the defaults filled in.

        Parameters
        ----------
        given
            Knob values (None: all defaults).

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
            return cls.Knobs.model_validate(given or {}).model_dump()
        except ValidationError as e:
            raise one_line(e, prefix=f"{cls.name} option") from None

    def __init__(self, ctx: PolicyContext) -> None:
        self.backend: Backend = ctx.backend
        self.predictor: Predictor = ctx.predictor
        self.cluster: Cluster = ctx.cluster
        self.rates: dict[str, float] = ctx.rates
        self.slo: Slo = ctx.slo
        self.unserved: list[str] = []  # models the policy could not place (requests fail)

    @classmethod
    def loader(cls, gpu: GPU, switch: str, options: dict[str, Any]) -> Loader | None:
        """The system's own scale-up path (engine start-up, checkpoint store), which the
        ground truth then charges; None: the pool's switch model (`costs.CostModel`)."""
        return None

    @classmethod
    def latency(cls, gpu: GPU, options: dict[str, Any]) -> LatencySource | None:
        """Where the ground truth takes prefill and decode times from when a knob asks for
        other than the fitted profile (e.g. a simulator's own fits); None: the profile."""
        return None

    def on_arrival(self, req: Request) -> None:
        """A request arrived (called by the backend's run loop at `req.arrival`)."""
        raise NotImplementedError
