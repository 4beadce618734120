"""``hpn serve ...`` and ``hpn pool replay``: the real serving engine (`hpn.serve`).

Services only: each takes its config model and calls the engine package; torch and
transformers are imported when a command runs (the ``engine`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from pydantic import Field, field_validator

from hpn.app.base import Command, FileInput, Outcome, Result
from hpn.app.limits import LINK_MAX, MAX_SPAN, MEMORY_MAX, STARTUP_MAX, bounded, slo_field
from hpn.app.pool import POLICY_HELP
from hpn.config import Model, Seconds
from hpn.errors import InputError

if TYPE_CHECKING:  # imported when a command runs (a fast ``hpn --help``)
    from hpn.pool.calibration import LatencyFit

_DEVICE = "cuda or cpu (default: cuda when present)"


def _needs_engine() -> None:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise InputError("engine", "needs the engine extra: pip install -e '.[engine]'") from None


def _slo(ttft: float, tbt: float):
    from hpn.pool.policies.base import Slo

    return Slo(float(ttft), float(tbt))


class DeviceOptions(Model):
    """Where instances run (shared by ``serve`` and ``serve profile``)."""

    device: str | None = Field(None, description=_DEVICE)
    memory: int | None = bounded(
        None,
        "device budget per instance in bytes (CPU default 1 GiB; CUDA default and most: "
        "90 % of the free memory shared by the instances)",
        unit="B",
        ge=1 << 20,
        le=MEMORY_MAX,
    )
    link: float | None = bounded(
        None,
        "host link bytes/s (CPU default 1e9; CUDA: unthrottled)",
        unit="",
        gt=0,
        le=LINK_MAX,
    )
    threads: int | None = Field(None, ge=1, le=256, description="CPU threads per instance")


# --- serve make-models ---------------------------------------------------------------------


class MakeModelsOptions(Model):
    """The ``[models]`` table of ``serve make-models``."""

    dir: str = Field(
        ..., description="folder to write the checkpoints into", json_schema_extra={"flag": None}
    )
    count: int = Field(8, ge=1, le=256, description="number of checkpoints")
    sizes: list[str] = Field(["5m", "20m"], description="parameter counts, in turn (1m..2b)")
    seed: int = Field(0, ge=0, description="seed of model i is seed + i")
    max_len: int = Field(2048, ge=64, le=1 << 17, description="context length in the config")

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, value: list[str]) -> list[str]:
        from hpn.serve.store import parse_size  # torch-free: checked before the engine loads

        for size in value:
            parse_size(size)
        return value


class MakeModelsConfig(Model):
    models: MakeModelsOptions


class ModelEntry(TypedDict):
    """A checkpoint written: its folder name, architecture and parameter count."""

    name: str
    arch: str
    params: int


@dataclass
class MakeModelsResult(Result):
    title = "serve make-models"
    dir: str
    models: list[ModelEntry] = field(default_factory=list)

    def rows(self):
        return [("dir", self.dir)] + [(m["name"], f"{m['params']:,} params") for m in self.models]


def make_models(cfg: MakeModelsConfig) -> Outcome[MakeModelsResult]:
    from hpn.store.record import check_folder

    o = cfg.models
    check_folder(Path(o.dir), "dir")  # before any work: a file in the way, read-only
    _needs_engine()
    from hpn.serve.store import make_models as make

    infos = make(o.dir, o.count, o.sizes, o.seed, o.max_len)
    models = [ModelEntry(name=i.name, arch=i.arch, params=i.n_params) for i in infos]
    return Outcome(MakeModelsResult(str(Path(o.dir)), models))


# --- serve profile -------------------------------------------------------------------------


class ProfileOptions(DeviceOptions):
    """The ``[profile]`` table of ``serve profile``."""

    models: str = Field(..., description="checkpoint folder")
    out: str = Field("profile.json", min_length=1, description="profile file to write")
    concurrent: int = Field(1, ge=1, le=64, description="instances busy at once while timing")


class ProfileConfig(Model):
    profile: ProfileOptions


@dataclass
class ProfileResult(Result):
    title = "serve profile"
    out: str
    models: int
    fits: dict[str, LatencyFit] = field(default_factory=dict)  # by model

    def rows(self):
        rows = [("profile", self.out), ("models", self.models)]
        for m, f in self.fits.items():
            rows.append((m, f"r2 prefill {f['r2_prefill']}, decode {f['r2_decode']}"))
        return rows


def profile(cfg: ProfileConfig) -> Outcome[ProfileResult]:
    from hpn.serve.store import scan

    o = cfg.profile
    scan(o.models)  # a bad folder is named before torch loads (seconds)
    _needs_engine()
    from hpn.serve.profile import profile_models

    prof = profile_models(
        o.models, o.out, o.device, o.memory, o.link, o.threads, concurrent=o.concurrent
    )
    return Outcome(ProfileResult(o.out, len(prof["fits"]), prof["fits"]))


# --- serve (start) -------------------------------------------------------------------------


class ServeOptions(DeviceOptions):
    """The ``[serve]`` table of ``serve start``."""

    models: str = Field(..., description="checkpoint folder")
    policy: str = Field("aegaeon", description=POLICY_HELP)
    prefill: int = Field(1, ge=0, le=64, description="prefill instances (aegaeon)")
    decode: int = Field(1, ge=0, le=64, description="decode instances (aegaeon)")
    workers: int = Field(2, ge=0, le=64, description="instances (policies without a split)")
    port: int = Field(8000, ge=1, le=65535, description="port on 127.0.0.1")
    profile: str | None = Field(None, description="profile file (default: measure at start)")
    ttft_slo: Seconds = slo_field("10s", "TTFT")
    tbt_slo: Seconds = slo_field("100ms", "TBT")
    max_model_len: int | None = Field(
        None, ge=16, description="context tokens at most (default: each model's own)"
    )
    max_tokens: int | None = Field(None, ge=1, description="output tokens per request at most")
    kv_blocks: int | None = Field(
        None, ge=1, description="KV blocks (16 tokens) per instance at most (default: memory)"
    )
    startup: Seconds | None = bounded(
        None,
        "serverless: engine start-up per scale-up, e.g. 22.3s as the pool "
        "charges (default: the model build alone, as measured)",
        ge=0,
        le=STARTUP_MAX,
    )


class ServeConfig(Model):
    serve: ServeOptions


@dataclass
class ServeResult(Result):
    title = "serve"
    stopped: bool = True


def serve(cfg: ServeConfig) -> Outcome[ServeResult]:
    from hpn.serve.engine import cluster_for
    from hpn.serve.store import scan

    o = cfg.serve
    cluster_for(o.policy, o.prefill, o.decode, o.workers)  # bad input is named before
    scan(o.models)  # torch loads (seconds), in the order the server checks it
    _needs_engine()
    from hpn.serve.server import Limits, serve_models

    serve_models(
        o.models,
        o.policy,
        o.prefill,
        o.decode,
        o.workers,
        o.port,
        o.profile,
        o.device,
        o.memory,
        o.link,
        o.threads,
        _slo(o.ttft_slo, o.tbt_slo),
        Limits(max_model_len=o.max_model_len, max_tokens=o.max_tokens),
        kv_blocks=o.kv_blocks,
        startup=None if o.startup is None else float(o.startup),
    )
    return Outcome(ServeResult())


# --- pool replay ---------------------------------------------------------------------------


class ReplayOptions(Model):
    """The ``[replay]`` table of ``pool replay``."""

    trace: str = Field(
        ...,
        description="trace file (Aegaeon/Azure CSV) or ServeGen folder",
        json_schema_extra={"flag": None},
    )
    url: str = Field("http://127.0.0.1:8000", description="the server's base URL")
    time_scale: float = Field(1.0, gt=0, description="arrival times x this")
    map: str | None = Field(None, description="trace model -> served model: a=b,c=d")
    ttft_slo: Seconds = slo_field("10s", "TTFT")
    tbt_slo: Seconds = slo_field("100ms", "TBT")
    max_input: int = Field(1024, ge=1, description="prompt tokens at most")
    max_output: int = Field(256, ge=1, description="output tokens at most")
    trace_models: int = Field(10, ge=1, description="Azure trace: models to spread over")
    duration: Seconds = bounded("300s", "ServeGen window length", gt=0, le=MAX_SPAN)
    seed: int = Field(0, ge=0, le=2**63 - 1, description="seed (Azure model assignment, ServeGen)")

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        from urllib.parse import urlsplit

        u = urlsplit(value)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        return value

    @field_validator("map")
    @classmethod
    def _one_each(cls, value: str | None) -> str | None:
        from hpn.serve.replay import parse_map

        keys = [k.partition("=")[0].strip() for k in (value or "").split(",")]
        parse_map(value)  # TRACE_MODEL=SERVED_MODEL, each
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise ValueError(f"trace model {twice[0]!r} mapped twice; map each one once")
        return value


class ReplayConfig(Model):
    replay: ReplayOptions


@dataclass
class ReplayResult(Result):
    title = "pool replay"
    url: str
    requests: int
    slo_attainment: float
    slo_attainment_artifact: float
    finished: int
    failed: int
    errors: int
    ttft_p50_s: float
    ttft_p99_s: float
    tbt_p50_s: float
    tbt_p99_s: float
    span_s: float
    models: int
    per_model: dict[str, float] = field(default_factory=dict)
    per_model_artifact: dict[str, float] = field(default_factory=dict)

    def rows(self):
        return [(k, v) for k, v in self.to_json().items() if not k.startswith("per_model")]


def replay(cfg: ReplayConfig) -> Outcome[ReplayResult]:
    from hpn.serve.replay import replay_trace

    o = cfg.replay
    out, tables = replay_trace(
        o.url,
        trace=o.trace,
        time_scale=o.time_scale,
        mapping=o.map,
        slo=_slo(o.ttft_slo, o.tbt_slo),
        max_input=o.max_input,
        max_output=o.max_output,
        trace_models=o.trace_models,
        duration=float(o.duration),
        seed=o.seed,
    )
    names = {f for f in ReplayResult.__dataclass_fields__}
    res = ReplayResult(**{k: v for k, v in out.items() if k in names})
    warn = out.get("warning")
    return Outcome(res, tables, warnings=[warn] if warn else [])


MAKE_MODELS = Command(
    "serve make-models",
    MakeModelsConfig,
    make_models,
    flags=("models",),
    stored=False,
    files=(FileInput("dir", "folder to write into", lambda p: {"models": {"dir": str(p)}}),),
)
PROFILE = Command("serve profile", ProfileConfig, profile, flags=("profile",), stored=False)
SERVE = Command("serve start", ServeConfig, serve, flags=("serve",), stored=False)
REPLAY = Command(
    "pool replay",
    ReplayConfig,
    replay,
    flags=("replay",),
    files=(FileInput("trace", "trace to replay", lambda p: {"replay": {"trace": str(p)}}),),
)
