"""Fabric options shared by every command that builds a fabric (the ``[fabric]`` table).

The preset comes from ``--preset``, else the config file, else ``hpn``.
Precedence: preset defaults < ``--config`` file (its ``[fabric]`` table, or the top level) <
named flags < ``--set field=value``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hpn.errors import InputError

_FABRIC = "Fabric"

PresetOpt = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="Fabric preset: hpn, rail-only, dcn-plus or fat-tree.",
        rich_help_panel=_FABRIC,
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="TOML file: the command's tables (\\[fabric], ...) or fabric fields only.",
        rich_help_panel=_FABRIC,
    ),
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


def fabric_table(
    table: dict[str, Any] | None = None,
    preset: str | None = None,
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
) -> dict[str, Any]:
    """The ``[fabric]`` table: a config file's table overridden by the shared flags."""
    fields: dict[str, Any] = {}
    if table is not None:
        if not isinstance(table, dict):
            raise InputError("fabric", "expected a table")
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
    from hpn.topology.presets import PRESETS

    known = PRESETS.get(preset, "--preset").spec.model_fields
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
    return {"preset": preset, **fields}


FABRIC_PARAMS: tuple[tuple[str, Any, Any], ...] = (
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
"""``(name, annotation, default)`` of the shared fabric options."""

FABRIC_FLAGS = (
    "--preset",
    "--config",
    "--set",
    "--pods",
    "--segments",
    "--single-plane",
    "--single-tor",
    "--no-rail",
    "--agg-oversubscription",
    "--chip",
    "--k",
    "--speed",
    "--frontend",
)
