"""Fabric options shared by every command that builds a fabric.

The preset comes from ``--preset``, else the config file, else ``hpn``.
Precedence: preset defaults < ``--config`` file (its ``[fabric]`` table, or the top level) <
named flags < ``--set field=value``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hpn.config import Model, load_toml
from hpn.errors import InputError
from hpn.topology import Fabric, build, make_spec
from hpn.topology.presets import PRESETS

_FABRIC = "Fabric"

PresetOpt = Annotated[
    str | None,
    typer.Option("--preset", help=f"Fabric preset: {', '.join(PRESETS)}.", rich_help_panel=_FABRIC),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="TOML file with a \\[fabric] table.", rich_help_panel=_FABRIC),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Any spec field: --set tor_backup_ports=4 (repeatable).",
        rich_help_panel=_FABRIC,
    ),
]
PodsOpt = Annotated[int | None, typer.Option(help="Pods.", rich_help_panel=_FABRIC)]
SegmentsOpt = Annotated[int | None, typer.Option(help="Segments per pod.", rich_help_panel=_FABRIC)]
SinglePlaneOpt = Annotated[
    bool, typer.Option("--single-plane", help="Every ToR to every Agg.", rich_help_panel=_FABRIC)
]
SingleTorOpt = Annotated[
    bool, typer.Option("--single-tor", help="One ToR per NIC.", rich_help_panel=_FABRIC)
]
NoRailOpt = Annotated[
    bool,
    typer.Option("--no-rail", help="A host's NICs on one ToR pair.", rich_help_panel=_FABRIC),
]
AggOversubOpt = Annotated[
    float | None,
    typer.Option(
        "--agg-oversubscription", help="Agg down:up ratio (HPN 15).", rich_help_panel=_FABRIC
    ),
]
ChipOpt = Annotated[
    str | None,
    typer.Option(help="Switch chip capacity: 25.6T, 51.2T, 102.4T.", rich_help_panel=_FABRIC),
]
KOpt = Annotated[int | None, typer.Option("--k", help="Fat-tree radix.", rich_help_panel=_FABRIC)]
SpeedOpt = Annotated[
    str | None, typer.Option(help="Fat-tree link speed, e.g. 100G.", rich_help_panel=_FABRIC)
]


def _routing_help() -> str:
    from hpn.routing import ROUTERS

    return "Routing policy: " + "; ".join(f"{n} ({r.summary})" for n, r in ROUTERS.items())


RoutingOpt = Annotated[str, typer.Option(help=_routing_help())]

FrontendOpt = Annotated[
    bool,
    typer.Option("--frontend", help="Also build the frontend network.", rich_help_panel=_FABRIC),
]


def _parse_value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip()


def parse_sets(sets: list[str] | None) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}``."""
    out: dict[str, Any] = {}
    for item in sets or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError("--set", f"expected field=value, got {item!r}")
        out[key.strip()] = _parse_value(value)
    return out


def spec_from_options(
    preset: str | None = None,
    config: Path | None = None,
    sets: list[str] | None = None,
    *,
    pods: int | None = None,
    segments: int | None = None,
    single_plane: bool = False,
    single_tor: bool = False,
    no_rail: bool = False,
    agg_oversubscription: float | None = None,
    chip: str | None = None,
    k: int | None = None,
    speed: str | None = None,
    frontend: bool = False,
) -> Model:
    """A validated fabric spec from the shared CLI options."""
    fields: dict[str, Any] = {}
    if config is not None:
        data = load_toml(config)
        table = data.get("fabric", data)
        if not isinstance(table, dict):
            raise InputError(f"{config}: fabric", "expected a table")
        preset = preset or table.get("preset")
        fields.update({k_: v for k_, v in table.items() if k_ != "preset"})
    preset = preset or "hpn"
    flags = {
        "--pods": ("pods", pods),
        "--segments": ("segments", segments),
        "--single-plane": ("dual_plane", False if single_plane else None),
        "--single-tor": ("dual_tor", False if single_tor else None),
        "--no-rail": ("rail_optimized", False if no_rail else None),
        "--agg-oversubscription": ("agg_oversubscription", agg_oversubscription),
        "--chip": ("chip", chip),
        "--k": ("k", k),
        "--speed": ("speed", speed),
        "--frontend": ("frontend", True if frontend else None),
    }
    if preset not in PRESETS:
        raise InputError("--preset", f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    known = PRESETS[preset].spec.model_fields
    for flag, (name, value) in flags.items():
        if value is None:
            continue
        if name not in known:
            raise InputError(flag, f"does not apply to preset {preset!r}")
        fields[name] = value
    for name, value in parse_sets(sets).items():
        if name not in known:
            raise InputError(
                "--set", f"{name!r} is not a field of preset {preset!r}; fields: {', '.join(known)}"
            )
        fields[name] = value
    return make_spec(preset, fields)


def fabric_from_options(*args: Any, **kwargs: Any) -> Fabric:
    """Build the fabric the shared CLI options describe."""
    return build(spec_from_options(*args, **kwargs))


_FABRIC_PARAMS: tuple[tuple[str, Any, Any], ...] = (
    ("preset", PresetOpt, None),
    ("config", ConfigOpt, None),
    ("sets", SetOpt, None),
    ("pods", PodsOpt, None),
    ("segments", SegmentsOpt, None),
    ("single_plane", SinglePlaneOpt, False),
    ("single_tor", SingleTorOpt, False),
    ("no_rail", NoRailOpt, False),
    ("agg_oversubscription", AggOversubOpt, None),
    ("chip", ChipOpt, None),
    ("k", KOpt, None),
    ("speed", SpeedOpt, None),
    ("frontend", FrontendOpt, False),
)


def fabric_command(fn):
    """Give a typer command the shared fabric options; it receives the validated ``spec``.

    ``fn`` declares a keyword parameter ``spec``; the wrapper adds ``--preset``, ``--config``,
    ``--set`` and the named flags to its signature, builds the spec from them and calls
    ``fn(spec=spec, ...)``. A command whose own ``config`` argument is a job file (train, fail)
    keeps it; the file's ``[fabric]`` table, if any, is then the fabric config.
    """
    import functools
    import inspect

    sig = inspect.signature(fn, eval_str=True)
    own = [p for p in sig.parameters.values() if p.name != "spec"]
    names = {p.name for p in own}
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann)
        for name, ann, default in _FABRIC_PARAMS
        if name not in names
    ]

    @functools.wraps(fn)
    def wrapper(**kwargs: Any):
        fab = {p.name: kwargs.pop(p.name) for p in added}
        file = fab.pop("config", None)
        if "config" in names and kwargs.get("config") is not None:
            file = kwargs["config"] if "fabric" in load_toml(kwargs["config"]) else None
        spec = spec_from_options(fab.pop("preset", None), file, fab.pop("sets", None), **fab)
        return fn(spec=spec, **kwargs)

    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    wrapper.__signature__ = sig.replace(
        parameters=[
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.kind in kinds else p for p in own
        ]
        + added
    )
    wrapper.__annotations__ = {}
    return wrapper
