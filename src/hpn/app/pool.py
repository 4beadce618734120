"""``hpn pool ...``: simulate a serving pool, find its goodput, size it for a model mix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, cast

from pydantic import Field, create_model, field_validator
from pydantic.fields import FieldInfo

from hpn.app.base import Command, Outcome, Result
from hpn.app.limits import ZIPF_MAX, bounded, bounds_text, slo_field
from hpn.config import FilePath, Model, Seconds, allowed_path
from hpn.errors import InputError
from hpn.pool.result import PoolResult as SimulateResult

if TYPE_CHECKING:  # the domain is imported when the command runs (a fast ``hpn --help``)
    from hpn.app.pool_compare import ComparisonResult
    from hpn.pool.search import CapacityGroup

# Size limits (models, GPUs, trace length, requests) are in hpn.app.limits, checked at parse.


def _names(names: Any) -> str:
    *rest, last = list(names)
    return f"{', '.join(rest)} or {last}" if rest else last


def _policy_help() -> str:
    from hpn.pool.policies import POLICIES

    return f"serving policy: {_names(POLICIES)}"


def _gpu_help() -> str:
    from hpn.gpus import CATALOG

    return f"GPU type: {_names(CATALOG)}"


def _split_help() -> str:
    from hpn.pool.policies import POLICIES

    return _names(n for n, c in POLICIES.items() if c.split)


POLICY_HELP, _GPU, _SPLIT = _policy_help(), _gpu_help(), _split_help()


def _slo(ttft: float, tbt: float) -> Any:
    from hpn.pool.simulate import Slo

    return Slo(float(ttft), float(tbt))  # bounded by the fields (slo_field)


# --- policy knobs: generated from each policy's ``Knobs`` model ----------------------------


@dataclass(frozen=True)
class _Knob:
    """A ``[pool]`` field: a knob of the policies that declare it (by name)."""

    owners: tuple[str, ...]
    annotation: Any
    info: FieldInfo


def _show(value: Any, text: Any) -> str:
    """A default as help shows it: ``text`` (its JSON form: ``22.3s``) unless a plain number."""
    if isinstance(value, float) and not isinstance(text, str) or value == 0:
        return f"{value:.4g}"
    return str(text)


_BOUNDS = ("gt", "ge", "lt", "le")


def _unit(metadata: list[Any]) -> str:
    """``"s"`` for a duration knob (its bounds are then stated as ``<= 1h``), else ``""``."""
    names = {getattr(getattr(m, "func", None), "__name__", "") for m in metadata}
    return "s" if "parse_duration" in names else ""


def _knobs() -> dict[str, _Knob]:
    """Every knob of every registered policy, by field name (a name two policies declare is
    one field; its type must then agree)."""
    from hpn.pool.policies import POLICIES

    out: dict[str, _Knob] = {}
    for name, cls in POLICIES.items():
        for knob, info in cls.Knobs.model_fields.items():
            if knob in out:
                if out[knob].annotation != info.annotation:
                    raise TypeError(f"knob {knob!r} of {name} differs in type from another's")
                out[knob] = _Knob((*out[knob].owners, name), info.annotation, out[knob].info)
                continue
            out[knob] = _Knob((name,), info.annotation, info)
    for knob, k in out.items():  # help: who owns it, what it means, its default
        knobs = [POLICIES[o].Knobs() for o in k.owners]
        defaults = [getattr(kn, knob) for kn in knobs]
        texts = [kn.model_dump(mode="json")[knob] for kn in knobs]
        shown = ", ".join(dict.fromkeys(map(_show, defaults, texts)))
        bounds = {b: getattr(m, b) for m in k.info.metadata for b in _BOUNDS if hasattr(m, b)}
        rest = [m for m in k.info.metadata if not any(hasattr(m, b) for b in _BOUNDS)]
        stated = [bounds_text(bounds, _unit(rest))] if bounds else []
        if any(v is not None for v in defaults):  # no default: the description says why
            stated.append(f"default {shown}")
        said = f" ({', '.join(stated)})" if stated else ""
        text = f"{', '.join(k.owners)}: {k.info.description or knob}{said}"
        inner = Annotated[(k.annotation, *rest)] if rest else k.annotation  # units: "10s"
        extra: dict[str, Any] | None = (
            {"invert": True} if all(v is True for v in defaults) else None
        )
        field = Field(None, description=text, json_schema_extra=extra, **bounds)
        out[knob] = _Knob(k.owners, inner, field)
    return out


def _with_knobs(name: str, base: type[Model]) -> type[Model]:
    """``base`` (a command's ``[pool]`` fields) followed by every policy knob, each optional
    (unset: the policy's default)."""
    fields: dict[str, Any] = {k: (v.annotation | None, v.info) for k, v in _knobs().items()}
    model = create_model(name, __base__=base, __module__=__name__, **fields)
    model.__doc__ = base.__doc__
    return model


def _options(p: Model, policy: str) -> dict[str, Any]:
    """The knobs given for `policy` as `simulate(options=...)`; a knob of another policy is
    an error."""
    from hpn.pool.policies import get_policy

    name = get_policy(policy).name
    out: dict[str, Any] = {}
    for field, knob in _knobs().items():
        value = getattr(p, field)
        if value is None:
            continue
        if name not in knob.owners:
            owner = " or ".join(knob.owners)
            raise InputError(f"pool.{field}", f"applies to policy {owner}, not {name}")
        out[field] = value
    return out


# --- simulate ------------------------------------------------------------------------------


class _SimulateFields(Model):
    """The ``[pool]`` table of ``pool simulate``: its fields, then the policy knobs."""

    policy: str = Field("aegaeon", description=POLICY_HELP)
    trace: FilePath | None = Field(
        None, description="trace file (Aegaeon/Azure CSV) or ServeGen folder"
    )
    models: int | None = Field(None, ge=1, description="synthetic market: number of models")
    rate: float = Field(0.1, gt=0, description="synthetic market: req/s per model")
    duration: Seconds = Field("300s", description="synthetic market / ServeGen window")
    zipf: float | None = bounded(
        None, "synthetic: Zipf popularity exponent (default uniform)", unit="", ge=0, le=ZIPF_MAX
    )
    cv: float = Field(
        1.0, gt=0, le=10, description="synthetic: inter-arrival CV (1 = Poisson, else Gamma)"
    )
    trace_models: int = Field(10, ge=1, description="Azure trace: models to spread requests over")
    prefill_gpus: int | None = Field(
        None, description=f"prefill partition (policies that split: {_SPLIT})"
    )
    decode_gpus: int | None = Field(
        None, description=f"decode partition (policies that split: {_SPLIT})"
    )
    gpus: int | None = Field(
        None, description=f"GPUs (policies without a split; {_SPLIT} split them 3:5)"
    )
    gpu: str = Field("h800", description=_GPU)
    ttft_slo: Seconds = slo_field("10s", "TTFT")
    tbt_slo: Seconds = slo_field("100ms", "TBT")
    switch: str = Field("optimized", description="model switch: optimized or unoptimized")
    seed: int = Field(
        0, ge=0, le=2**63 - 1, description="random seed (synthetic traces, Azure model assignment)"
    )


if TYPE_CHECKING:
    SimulateOptions = _SimulateFields
else:
    SimulateOptions = _with_knobs("SimulateOptions", _SimulateFields)


class SimulateConfig(Model):
    """``hpn pool simulate``: ``[pool]``."""

    pool: SimulateOptions = Field(default_factory=SimulateOptions)


def trace_of(p: SimulateOptions) -> Any:
    """The trace file ``p`` names, read as ``pool simulate`` reads it (once: the limit check
    and the run share it; :func:`hpn.pool.traces.load_for`)."""
    from hpn.pool.traces import load_for

    assert p.trace is not None
    duration = float(p.duration)
    return load_for(p.trace, models=p.trace_models, seed=p.seed, duration=duration)


def simulate(cfg: SimulateConfig) -> Outcome[SimulateResult]:
    """Run a trace through a policy and report SLO attainment, TTFT/TBT, switches."""
    from hpn.gpus import get_gpu
    from hpn.pool.simulate import simulate as run
    from hpn.pool.traces import market

    p = cfg.pool
    get_gpu(p.gpu)
    span = float(p.duration)
    slo, options = _slo(p.ttft_slo, p.tbt_slo), _options(p, p.policy)  # named before the trace
    if (p.trace is None) == (p.models is None):
        raise InputError("trace", "give either --trace FILE or --models M (synthetic market)")
    if p.trace is not None:
        tr = trace_of(p)
    else:
        assert p.models is not None
        tr = market(p.models, p.rate, span, seed=p.seed, zipf=p.zipf, cv=p.cv)
    res = run(
        tr,
        p.policy,
        p.gpu,
        p.gpus,
        p.prefill_gpus,
        p.decode_gpus,
        slo,
        p.switch,
        options=options,
    )
    return Outcome(res.rounded())


# --- goodput -------------------------------------------------------------------------------


class _GoodputFields(Model):
    """The ``[pool]`` table of ``pool goodput``: its fields, then the policy knobs."""

    policy: str | None = Field(
        None, description=POLICY_HELP + " (default: all five, the paper's comparison)"
    )
    rate: float = Field(0.1, gt=0, description="req/s per model")
    prefill_gpus: int | None = Field(
        None, description=f"prefill partition (policies that split: {_SPLIT})"
    )
    decode_gpus: int | None = Field(
        None, description=f"decode partition (policies that split: {_SPLIT})"
    )
    gpus: int | None = Field(
        None, description=f"GPUs (default 16, the paper's 2 x 8; {_SPLIT} split them 3:5)"
    )
    gpu: str = Field("h800", description=_GPU)
    duration: Seconds = Field("300s", description="length of each simulated trace")
    ttft_slo: Seconds = slo_field("10s", "TTFT")
    tbt_slo: Seconds = slo_field("100ms", "TBT")
    metric: str | None = Field(
        None,
        description="deadline (per-token deadlines) or artifact "
        "(default: deadline; the comparison shows both)",
    )
    switch: str = Field("optimized", description="model switch: optimized or unoptimized")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="random seed")


if TYPE_CHECKING:
    GoodputOptions = _GoodputFields
else:
    GoodputOptions = _with_knobs("GoodputOptions", _GoodputFields)


class GoodputConfig(Model):
    """``hpn pool goodput``: ``[pool]``."""

    pool: GoodputOptions = Field(default_factory=GoodputOptions)


@dataclass
class GoodputResult(Result):
    policy: str
    rate: float
    metric: str
    max_models: int
    attainment_at_max: float
    models_per_gpu: float
    models_per_decode_gpu: float | None
    evaluated: dict[str, float]
    unserved: dict[str, int]

    def heading(self) -> str:
        return f"pool goodput: {self.policy}"

    def rows(self) -> list[tuple[str, Any]]:
        at_max = f"{self.attainment_at_max:.1%}" if self.max_models else "-"
        rows: list[tuple[str, Any]] = [
            ("max models", f"{self.max_models} at {self.rate:g} req/s each ({self.metric})"),
            ("SLO attainment at max", at_max),
            ("models per GPU", self.models_per_gpu),
        ]
        if self.models_per_decode_gpu is not None:
            rows.append(("models per decode GPU", self.models_per_decode_gpu))
        tried = ", ".join(f"{m}: {a:.1%}" for m, a in self.evaluated.items())
        rows.append(("attainment by models tried", tried))
        if self.unserved:
            left = ", ".join(f"{m}: {n}" for m, n in self.unserved.items())
            rows.append(("models left unplaced", left))
        return rows


DEFAULT_GPUS = 16  # the paper's testbed: 2 nodes x 8 GPUs (A §7.1)


def _search(
    p: GoodputOptions, policy: str, metric: str, results: dict[int, Any] | None = None
) -> dict[str, Any]:
    from hpn.pool.search import goodput as search

    unsized = p.gpus is None and p.prefill_gpus is None and p.decode_gpus is None
    return search(
        policy,
        p.rate,
        float(p.duration),
        p.seed,
        metric=metric,
        results=results,
        gpu=p.gpu,
        gpus=DEFAULT_GPUS if unsized else p.gpus,
        prefill_gpus=p.prefill_gpus,
        decode_gpus=p.decode_gpus,
        slo=_slo(p.ttft_slo, p.tbt_slo),
        switch=p.switch,
        options=_options(p, policy),
    )


def _own(p: GoodputOptions, policy: str) -> GoodputOptions:
    """``p`` with the knobs of other policies cleared (in the comparison a knob applies to its
    own policy), and a prefill/decode split given as plain GPUs to policies without one."""
    from hpn.pool.policies import get_policy

    name = get_policy(policy).name
    update: dict[str, Any] = {f: None for f, k in _knobs().items() if name not in k.owners}
    if not get_policy(policy).split and p.gpus is None and p.prefill_gpus is not None:
        update.update(gpus=p.prefill_gpus + (p.decode_gpus or 0), prefill_gpus=None)
        update["decode_gpus"] = None
    return p.model_copy(update=update)


def _slo_table(runs: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The ``slo`` table (plot kind slo-load): attainment by load, one policy per run."""
    table: dict[str, list[Any]] = {"policy": [], "load": [], "models": [], "slo_attainment": []}
    for out in runs:
        for m, att in out["evaluated"].items():
            table["policy"].append(out["policy"])
            table["load"].append(int(m) * out["rate"])  # req/s over all models
            table["models"].append(int(m))
            table["slo_attainment"].append(att)
    return table


def goodput(cfg: GoodputConfig) -> Outcome[GoodputResult | ComparisonResult]:
    """Largest number of models (at ``rate`` each) served with >= 90 % SLO attainment; with
    no policy, every policy side by side (:func:`hpn.app.pool_compare.compare`)."""
    p = cfg.pool
    if p.policy is None:
        from hpn.app.pool_compare import compare

        both = compare(p, lambda q, pol, m, memo: _search(_own(q, pol), pol, m, memo), _slo_table)
        return cast("Outcome[GoodputResult | ComparisonResult]", both)
    out = _search(p, p.policy, p.metric or "deadline")
    return Outcome(GoodputResult.from_dict(out), {"slo": _slo_table([out])})


# --- capacity ------------------------------------------------------------------------------


class _CapacityFields(Model):
    """The ``[pool]`` table of ``pool capacity``: its fields, then the policy knobs."""

    mix: str = Field("production", description="production or a mix TOML file")
    policy: str = Field("aegaeon", description=POLICY_HELP)
    gpu: str | None = Field(None, description="GPU type (default: the mix's, h20 for production)")
    duration: Seconds = Field("30min", description="length of the simulated trace")
    ttft_slo: Seconds = slo_field("10s", "TTFT")
    tbt_slo: Seconds = slo_field("100ms", "TBT")
    metric: str = Field("deadline", description="deadline or artifact")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="random seed")

    @field_validator("mix")
    @classmethod
    def _mix_file(cls, value: str) -> str:
        return value if value == "production" else allowed_path(value)


if TYPE_CHECKING:
    CapacityOptions = _CapacityFields
else:
    CapacityOptions = _with_knobs("CapacityOptions", _CapacityFields)


class CapacityConfig(Model):
    """``hpn pool capacity``: ``[pool]``."""

    pool: CapacityOptions = Field(default_factory=CapacityOptions)


@dataclass
class CapacityResult(Result):
    policy: str
    gpu: str
    metric: str
    models: int
    gpus: int
    groups: list[CapacityGroup]
    duration_s: float

    def heading(self) -> str:
        return f"pool capacity: {self.policy}"

    def rows(self) -> list[tuple[str, Any]]:
        rows: list[tuple[str, Any]] = [
            ("GPUs", f"{self.gpus:,} {self.gpu} for {self.models} models ({self.metric})"),
            ("trace", f"{self.duration_s:g} s"),
        ]
        for g in self.groups:
            split = (
                f" ({g['prefill_gpus']} prefill + {g['decode_gpus']} decode)"
                if "prefill_gpus" in g
                else ""
            )
            worst = f", worst model {g['worst_model']:.1%}" if "worst_model" in g else ""
            rows.append(
                (
                    f"TP={g['tp']} group",
                    f"{g['models']} models on {g['gpus']} GPUs{split}: "
                    f"attainment {g['attainment']:.1%}{worst}",
                )
            )
        return rows


def capacity(cfg: CapacityConfig) -> Outcome[CapacityResult]:
    """Fewest GPUs that keep every model of a mix at >= 90 % SLO attainment."""
    from hpn.pool.mixes import load_mix
    from hpn.pool.search import capacity as search

    p = cfg.pool
    m = load_mix(p.mix)
    sim: dict[str, Any] = {"slo": _slo(p.ttft_slo, p.tbt_slo), "options": _options(p, p.policy)}
    if p.gpu:
        sim["gpu"] = p.gpu
    out = search(m, p.policy, float(p.duration), p.seed, metric=p.metric, **sim)
    return Outcome(CapacityResult.from_dict(out), {"groups": out["groups"]})


SIMULATE = Command("pool simulate", SimulateConfig, simulate, flags=("pool",))
GOODPUT = Command("pool goodput", GoodputConfig, goodput, flags=("pool",))
CAPACITY = Command("pool capacity", CapacityConfig, capacity, flags=("pool",))


class PoliciesConfig(Model):
    """``hpn pool policies``: no tables."""


class PolicyEntry(TypedDict):
    """A registered pool policy."""

    name: str
    summary: str
    split: bool  # prefill and decode run on separate instances


@dataclass
class PoliciesResult(Result):
    policies: list[PolicyEntry]

    def lines(self) -> list[str]:
        split = " (prefill/decode split)"
        return [f"{p['name']:12s} {p['summary']}{split * p['split']}" for p in self.policies]


def policies(cfg: PoliciesConfig) -> Outcome[PoliciesResult]:
    """The registered pool policies: name, summary, whether prefill and decode run apart."""
    from hpn.pool.policies import POLICIES

    rows = [PolicyEntry(name=n, summary=c.summary, split=c.split) for n, c in POLICIES.items()]
    return Outcome(PoliciesResult(rows))


POLICIES = Command("pool policies", PoliciesConfig, policies, stored=False)
