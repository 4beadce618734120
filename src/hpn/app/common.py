"""Config pieces shared by commands: the ``[fabric]`` table and its flags, progress callbacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema

from hpn.config import Model
from hpn.errors import InputError
from hpn.routing.config import RoutingTable as _RoutingTable

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called by long services; the CLI draws a bar with it."""


def _fabric(value: Any) -> Model:
    from hpn.topology.presets import spec_from_table

    if isinstance(value, Model):
        return value
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InputError("fabric", f"expected a table, got {type(value).__name__}")
    return spec_from_table(value)


FabricSpec = Annotated[
    Any,
    BeforeValidator(_fabric),
    WithJsonSchema({"type": "object", "description": "a [fabric] table: preset and its fields"}),
]
"""A ``[fabric]`` table (``preset`` plus that preset's spec fields), validated into its spec."""


def fabric_field() -> Any:
    """The ``fabric`` field of a command config (default: the ``hpn`` preset)."""
    return Field(default_factory=dict, validate_default=True, description="the fabric")


# The ``[routing]`` table: its fields (``--ecmp-seeds``, ``--ecmp-offset``, ...) live with the
# routing semantics; ``hashing()`` gives the fields the user set (None: the defaults).
RoutingTable = _RoutingTable


def routing_field() -> Any:
    """The ``routing`` field of a command config."""
    return Field(default_factory=RoutingTable, description="hash settings of the routing")


def _preset_help() -> str:
    from hpn.topology.presets import PRESETS

    return f"fabric preset: {', '.join(PRESETS)}"


def _applies(field: str, text: str) -> str:
    """``text``, naming the presets whose spec has ``field`` unless all have it."""
    from hpn.topology.presets import PRESETS

    having = [n for n, p in PRESETS.items() if field in p.spec.model_fields]
    return text if len(having) == len(PRESETS) else f"{text} ({', '.join(having)})"


class FabricFlags(Model):
    """The shared fabric flags of every fabric command, turned into its ``[fabric]`` table.

    Precedence: preset defaults < the config's ``[fabric]`` table < named flags < ``--set``.
    The preset comes from ``--preset``, else the table, else ``hpn``.
    """

    preset: str | None = Field(None, description=_preset_help())
    sets: list[str] = Field(
        default_factory=lambda: [],  # (for `list` pydantic parses a signature from text: 5 ms)
        description="any spec field: --set tor_backup_ports=4 (repeatable)",
        json_schema_extra={"flag": "--set"},
    )
    pods: int | None = Field(None, description=_applies("pods", "pods"))
    segments: int | None = Field(None, description=_applies("segments", "segments per pod"))
    single_plane: bool = Field(False, description=_applies("dual_plane", "every ToR to every Agg"))
    single_tor: bool = Field(False, description=_applies("dual_tor", "one ToR per NIC"))
    no_rail: bool = Field(
        False, description=_applies("rail_optimized", "a host's NICs on one ToR pair")
    )
    agg_oversubscription: float | None = Field(
        None, description=_applies("agg_oversubscription", "Agg down:up ratio")
    )
    chip: str | None = Field(
        None, description=_applies("chip", "switch chip capacity: 25.6T, 51.2T, 102.4T")
    )
    k: int | None = Field(None, description=_applies("k", "radix"))
    speed: str | None = Field(None, description=_applies("speed", "link speed, e.g. 100G"))
    frontend: bool = Field(
        False, description=_applies("frontend", "also build the frontend network")
    )

    def table(self, table: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``[fabric]`` table: a config file's ``table`` overridden by these flags."""
        fields: dict[str, Any] = {}
        preset = self.preset
        if table is not None:
            if not isinstance(table, dict):
                raise InputError("fabric", "expected a table")
            preset = table.get("preset") if preset is None else preset
            fields.update({k: v for k, v in table.items() if k != "preset"})
        preset = "hpn" if preset is None else preset  # "" is a name, refused below
        flags = {
            "--pods": ("pods", self.pods),
            "--segments": ("segments", self.segments),
            "--single-plane": ("dual_plane", False if self.single_plane else None),
            "--single-tor": ("dual_tor", False if self.single_tor else None),
            "--no-rail": ("rail_optimized", False if self.no_rail else None),
            "--agg-oversubscription": ("agg_oversubscription", self.agg_oversubscription),
            "--chip": ("chip", self.chip),
            "--k": ("k", self.k),
            "--speed": ("speed", self.speed),
            "--frontend": ("frontend", True if self.frontend else None),
        }
        from hpn.topology.presets import PRESETS

        known = PRESETS.get(preset, "--preset").spec.model_fields
        for flag, (name, value) in flags.items():
            if value is None:
                continue
            if name not in known:
                raise InputError(flag, f"does not apply to preset {preset!r}")
            fields[name] = value
        for name, value in parse_sets(self.sets).items():
            if name not in known:
                raise InputError(
                    "--set",
                    f"{name!r} is not a field of preset {preset!r}; fields: {', '.join(known)}",
                )
            fields[name] = value
        return {"preset": preset, **fields}


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
        if key.strip() in out:
            raise InputError("--set", f"{key.strip()!r} given twice; set each field once")
        out[key.strip()] = _parse_value(value)
    return out
