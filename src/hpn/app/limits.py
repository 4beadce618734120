"""The stated limits of every command: one table, checked before any work.

A :class:`Limit` bounds one size of a command's config (models, GPUs, requests, simulated time,
faults, flaps, ...). :meth:`hpn.app.base.Command.parse` checks the command's limits right after
validating its config, so the CLI, sweeps (every point, before the first runs) and the dashboard
(when a job is submitted) refuse the same configs, with the same one line. The bounds are sized
so that a run finishes in minutes and a few GB on one core; ``--allow-large`` (CLI only, never
the dashboard) raises a limit to its ``large`` bound where a bigger run still makes sense.

Bounds that are validity, not size (``segments >= 1``, ``port 0 or 1``), stay on the config
models; fabric sizes are bounded by the switch chips' port budgets (:mod:`hpn.topology.budget`).
:func:`describe` gives the text each command's help and ``docs/reference/cli.md`` show.

A single duration, size or rate no real run comes near (an SLO of ``1e9h``) is refused by its
field: :func:`bounded` makes a config field whose bounds its help and the reference state
(the ``*_MAX`` constants below are the app's; the pool's policy knobs and the failure model
keep theirs with their defaults).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hpn.errors import InputError

DAY = 86_400.0


def _count(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.4g}"


def _duration(v: float) -> str:
    from hpn.units import format_duration

    return format_duration(v)


def _bandwidth(v: float) -> str:
    from hpn.units import format_bandwidth

    return f"{format_bandwidth(v)}bps"


def _size(v: float) -> str:
    from hpn.units import format_size

    return format_size(v)


@dataclass(frozen=True)
class Limit:
    """An upper bound on one size of a command's config.

    Parameters
    ----------
    field
        The config field the error names (``pool.models``; the CLI reports the flag typed).
    what
        What is bounded, as the message and the docs say it (``models``).
    hi
        The bound everyone gets (CLI, sweeps, dashboard).
    large
        The bound with ``--allow-large`` (None: no override).
    measure
        ``measure(config) -> value`` (None: the field's own value; a None value is not checked).
    unit
        ``""`` (a count), ``"s"`` (a duration) or ``"B"`` (bytes): how values are printed.
    """

    field: str
    what: str
    hi: float
    large: float | None = None
    measure: Callable[[Any], float | None] | None = None
    unit: str = ""

    def fmt(self, v: float) -> str:
        return {"s": _duration, "B": _size}.get(self.unit, _count)(v)

    def value(self, cfg: Any) -> float | None:
        if self.measure is not None:
            return self.measure(cfg)
        obj = cfg
        for part in self.field.split("."):
            obj = getattr(obj, part, None)
        return obj

    def check(self, cfg: Any, allow_large: bool = False) -> None:
        v = self.value(cfg)
        if v is None:
            return
        hi = self.large if allow_large and self.large is not None else self.hi
        if v > hi:
            more = (
                f" (--allow-large: {self.fmt(self.large)})"
                if self.large and hi < self.large
                else ""
            )
            raise InputError(
                self.field, f"{self.what} must be <= {self.fmt(hi)}{more}, got {self.fmt(v)}"
            )

    def text(self) -> str:
        more = f" ({self.fmt(self.large)} with --allow-large)" if self.large else ""
        return f"{self.what} <= {self.fmt(self.hi)}{more}"


# --- measures ----------------------------------------------------------------------------------


def _span(value: float | None) -> float | None:
    return None if value is None else float(value)  # a Seconds field: parsed at validation


def _pool_span(cfg: Any) -> float | None:
    return _span(cfg.pool.duration)


def _pool_requests(cfg: Any) -> float | None:
    """Synthetic requests: models x rate x duration (the trace a run simulates)."""
    p = cfg.pool
    span = _span(p.duration)
    if p.models is None or span is None or p.trace is not None:
        return None
    return p.models * p.rate * span


def _goodput_models() -> int:
    import inspect

    from hpn.pool.search import goodput

    return int(inspect.signature(goodput).parameters["limit"].default)


def _goodput_requests(cfg: Any) -> float | None:
    span = _span(cfg.pool.duration)
    return None if span is None else _goodput_models() * cfg.pool.rate * span


def _mix(cfg: Any) -> Any:
    from hpn.pool.mixes import load_mix

    try:
        return load_mix(cfg.pool.mix)
    except InputError:
        return None  # reported by the service, naming the file


def _mix_requests(cfg: Any) -> float | None:
    span, mix = _span(cfg.pool.duration), _mix(cfg)
    return None if span is None or mix is None else float(sum(mix.rates)) * span


def _mix_models(cfg: Any) -> float | None:
    mix = _mix(cfg)
    return None if mix is None else len(mix.names)


def _trace(cfg: Any) -> Any:
    """The trace file a ``pool simulate`` config names, read (once: the run reuses it)."""
    if cfg.pool.trace is None:
        return None
    from hpn.pool.traces import load_for

    p = cfg.pool
    try:
        span = _span(p.duration) or 0.0
        return load_for(p.trace, models=p.trace_models, seed=p.seed, duration=span)
    except InputError:
        return None  # reported by the service, naming the file


def _trace_measure(what: str) -> Callable[[Any], float | None]:
    def measure(cfg: Any) -> float | None:
        tr = _trace(cfg)
        if tr is None:
            return None
        return {"models": len(tr.names), "rows": len(tr), "span": tr.duration}[what]

    return measure


def _replay_time(cfg: Any) -> float | None:
    """Wall time of a replay: the trace's span x ``time_scale`` (read as the replay reads it)."""
    from hpn.pool.traces import load_for

    o = cfg.replay
    try:
        tr = load_for(o.trace, models=o.trace_models, seed=o.seed, duration=float(o.duration))
    except InputError:
        return None  # reported by the service, naming the file
    return float(tr.duration) * o.time_scale


def _failures_drawn(cfg: Any) -> float:
    """Failures a reliability run draws, about: trials x months x the rates x 2 links (and at
    most as many ToRs) per GPU (each is drawn, placed and timed)."""
    r = cfg.reliability
    return r.trials * r.months * (r.link_rate + r.tor_rate) * 2 * r.gpus


def _faults(cfg: Any) -> list[Any]:
    from hpn.failures.faults import parse_fault

    return [parse_fault(f) for f in cfg.fail.faults]


def _fault_count(cfg: Any) -> float:
    return len(cfg.fail.faults)


def _outages(cfg: Any) -> float:
    return sum(f.count for f in _faults(cfg))


def _fault_end(cfg: Any) -> float:
    ends = [b if math.isfinite(b) else a for f in _faults(cfg) for a, b in f.windows()]
    return max(ends, default=0.0)


def _fail_duration(cfg: Any) -> float | None:
    return cfg.fail.duration


def _micro_batches(cfg: Any) -> float:
    """The most micro-batches one pipeline of a job runs in an iteration."""
    most = 0.0
    for job in cfg.job:
        p = job.parallel
        dp = p.dp or ((job.gpus or p.tp * p.pp) // (p.tp * p.pp)) or 1
        most = max(most, p.global_batch / (dp * p.micro_batch))
    return most


def _sizes(cfg: Any) -> list[float]:
    from hpn.units import parse_sizes

    try:
        return parse_sizes(cfg.collective.sizes, "sizes")
    except InputError:
        return []


def _size_count(cfg: Any) -> float:
    return len(_sizes(cfg))


def _largest_size(cfg: Any) -> float | None:
    return max(_sizes(cfg), default=None)


def _traffic_size(cfg: Any) -> float | None:
    return float(cfg.traffic.size)  # a Bytes field: parsed at validation


def _lab_send(cfg: Any) -> float | None:
    """Seconds a lab pattern's connections send: bytes per connection / rate (a matrix's
    sizes are its own)."""
    t = cfg.lab
    return None if t.matrix is not None else float(t.size) / t.connections * 8 / float(t.rate)


# --- the table ---------------------------------------------------------------------------------

MAX_MODELS = 1_000
MAX_GPUS = 4_096
MAX_SPAN = DAY

_POOL_GPUS = tuple(
    Limit(f"pool.{name}", f"{what}GPUs", MAX_GPUS, 65_536)
    for name, what in (("gpus", ""), ("prefill_gpus", "prefill "), ("decode_gpus", "decode "))
)
_POOL_SPAN = Limit("pool.duration", "trace length", MAX_SPAN, 30 * DAY, _pool_span, "s")
_REQUESTS = 2_000_000
_FAULT_TIME = Limit(
    "fail.faults", "fault times (at + repair, last flap)", DAY, 30 * DAY, _fault_end, "s"
)

LIMITS: dict[str, tuple[Limit, ...]] = {
    "pool simulate": (
        Limit("pool.models", "models", MAX_MODELS, 100_000),
        *_POOL_GPUS,
        _POOL_SPAN,
        Limit(
            "pool.duration",
            "synthetic requests (models x rate x duration)",
            _REQUESTS,
            100_000_000,
            _pool_requests,
        ),
        Limit("pool.trace", "trace models", MAX_MODELS, 100_000, _trace_measure("models")),
        Limit("pool.trace", "trace requests", _REQUESTS, 100_000_000, _trace_measure("rows")),
        Limit("pool.trace", "trace span", MAX_SPAN, 30 * DAY, _trace_measure("span"), "s"),
    ),
    "pool goodput": (
        *_POOL_GPUS,
        _POOL_SPAN,
        Limit(
            "pool.duration",
            "requests per tried market (1,024 models x rate x duration)",
            _REQUESTS,
            100_000_000,
            _goodput_requests,
        ),
    ),
    "pool replay": (
        Limit(
            "replay.time_scale",
            "replay time (trace span x time scale)",
            MAX_SPAN,
            None,
            _replay_time,
            "s",
        ),
    ),
    "pool capacity": (
        _POOL_SPAN,
        Limit(
            "pool.duration",
            "requests (the mix's rates x duration)",
            _REQUESTS,
            100_000_000,
            _mix_requests,
        ),
        Limit("pool.mix", "models in the mix", MAX_MODELS, 100_000, _mix_models),
    ),
    "fail": (
        Limit("fail.faults", "faults", 64, 4_096, _fault_count),
        Limit("fail.faults", "outages (one per fault, count per flap)", 256, 100_000, _outages),
        _FAULT_TIME,
        Limit("fail.duration", "simulated time", DAY, 30 * DAY, _fail_duration, "s"),
    ),
    "train": (
        Limit("job", "jobs", 16, 256, lambda c: len(c.job)),
        Limit(
            "job.parallel.global_batch", "micro-batches per pipeline", 4_096, 65_536, _micro_batches
        ),
    ),
    "collective": (
        Limit("collective.sizes", "sizes", 64, 1_024, _size_count),
        Limit("collective.sizes", "message size", 2**40, None, _largest_size, "B"),
        Limit("collective.jobs", "jobs", 64, 1_024),
    ),
    "traffic": (Limit("traffic.size", "flow size", 2**40, None, _traffic_size, "B"),),
    "lab traffic": (
        Limit("lab.size", "send time (size / connections / rate)", 600, None, _lab_send, "s"),
    ),
    "reliability": (
        Limit("reliability.trials", "trials", 100_000, 10_000_000),
        Limit("reliability.months", "months", 120, 1_200),
        Limit(
            "reliability.gpus",
            "failures drawn (trials x months x (link + ToR rate) x 2 per GPU)",
            100_000_000,
            1_000_000_000,
            _failures_drawn,
        ),
    ),
}
"""Each command's size limits (commands not listed are bounded by their config models)."""


def limits_of(command: str) -> tuple[Limit, ...]:
    return LIMITS.get(command, ())


def check_fabric(spec: Any) -> None:
    """Refuse a fabric spec past its switch chips' port budgets (its preset's check: what
    building it would refuse, without building it)."""
    from hpn.topology.presets import PRESETS

    preset = getattr(spec, "preset", None)
    check = PRESETS[preset].check if isinstance(preset, str) and preset in PRESETS else None
    if check is None:
        return
    try:
        check(spec)
    except InputError as e:  # name the field that asks too much of the tier
        field = _TIER_FIELD.get(e.field)
        if field is None:
            raise
        raise InputError(field, f"the {e.field} tier {e.message}") from None


_TIER_FIELD = {"core": "fabric.pods", "agg": "fabric.segments"}


def check(command: str, cfg: Any, allow_large: bool = False) -> None:
    """Refuse ``cfg`` (a parsed config of ``command``) past one of its limits (InputError)."""
    if getattr(cfg, "fabric", None) is not None:
        check_fabric(cfg.fabric)
    for lim in limits_of(command):
        lim.check(cfg, allow_large)


def describe(command: str) -> str:
    """One line of the command's limits, for its help and the reference (empty: none)."""
    rows = limits_of(command)
    return "Limits: " + "; ".join(lim.text() for lim in rows) + "." if rows else ""


def overridable(command: str) -> bool:
    """Whether ``--allow-large`` raises one of the command's limits."""
    return any(lim.large is not None for lim in limits_of(command))


# --- bounds of one value (checked by the config models; stated in help) -----------------------

HOUR = 3_600.0
SLO_MAX = HOUR
"""TTFT and TBT SLOs at most (Aegaeon's are 10 s and 100 ms; an hour per token is no SLO)."""
STARTUP_MAX = HOUR
"""An engine start-up at most (vLLM's cold start is tens of seconds, A §2)."""
ALPHA_MAX = 1.0
"""Software latency per collective step at most (NCCL's are microseconds)."""
LINK_MAX = 1e12
"""A host link at most, bytes/s (PCIe 5.0 x16 is 64 GB/s)."""
MEMORY_MAX = 2**40
"""An engine instance's device budget at most, bytes (an H200 has 141 GB)."""
ZIPF_MAX = 20.0
"""A synthetic market's Zipf exponent at most: at 20 the second of two models gets 2^-20 (1e-6)
of the first's requests (`hpn.pool.traces.synthetic.zipf_shares`), so a larger one changes
nothing a run can show; `calibrate_zipf` searches the same range."""

_SHOW = {"s": _duration, "B": _size, "bps": _bandwidth}


def bounds_text(bounds: dict[str, float], unit: str = "") -> str:
    """``{"gt": 0, "le": 3600}`` as help states it: ``> 0, <= 1h``."""
    from hpn.config import BOUND_OPS  # (with the config models: pydantic is loaded)

    show = _SHOW.get(unit) or (lambda v: f"{v:,.6g}")
    return ", ".join(f"{BOUND_OPS[b]} {show(v) if v else 0}" for b, v in bounds.items())


def bounded(
    default: Any,
    description: str,
    *,
    unit: str = "s",
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
) -> Any:
    """A config field with bounds (``gt``, ``ge``, ``lt``, ``le``; ``unit`` as
    :class:`Limit`'s, or ``"bps"``), stated after its description (``TTFT SLO (> 0, <= 1h)``):
    what ``--help`` and the reference show."""
    from pydantic import Field

    given = {k: v for k, v in {"gt": gt, "ge": ge, "lt": lt, "le": le}.items() if v is not None}
    text = f"{description} ({bounds_text(given, unit)})"
    return Field(default, description=text, gt=gt, ge=ge, lt=lt, le=le)


def slo_field(default: str, what: str) -> Any:
    """A TTFT or TBT SLO field (``what``: ``TTFT``): > 0, <= :data:`SLO_MAX`."""
    return bounded(default, f"{what} SLO", gt=0, le=SLO_MAX)
