"""The registry of fabric presets: name -> (spec model, builder)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from hpn.config import Model, one_line
from hpn.registry import Registry
from hpn.topology.dcn_plus import build_dcn_plus
from hpn.topology.fabric import Fabric
from hpn.topology.fat_tree import build_fat_tree
from hpn.topology.hpn import build_hpn
from hpn.topology.spec import DcnPlusSpec, FatTreeSpec, HpnSpec, RailOnlySpec


@dataclass(frozen=True)
class Preset:
    name: str
    spec: type[Model]
    build: Callable[[Any], Fabric]
    summary: str


PRESETS: Registry[Preset] = Registry("preset")


def register(name: str, spec: type[Model], build: Callable[[Any], Fabric], summary: str) -> None:
    PRESETS.add(name, Preset(name, spec, build, summary), summary)


register("hpn", HpnSpec, build_hpn, "HPN: dual-ToR, rail-optimized, dual-plane, 15:1 core")
register("rail-only", RailOnlySpec, build_hpn, "HPN segments with a per-rail tier 2 (Table 4)")
register("dcn-plus", DcnPlusSpec, build_dcn_plus, "DCN+: 3-tier dual-ToR Clos, not rail-optimized")
register("fat-tree", FatTreeSpec, build_fat_tree, "k-ary fat tree")


def make_spec(preset: str, fields: dict[str, Any] | None = None) -> Model:
    """A validated spec of ``preset`` with ``fields`` overriding its defaults."""
    entry = PRESETS.get(preset, "preset")
    fields = dict(fields or {})
    fields.pop("preset", None)
    try:
        return entry.spec(**fields)
    except ValidationError as e:
        raise one_line(e, "fabric") from None


def spec_from_table(table: dict[str, Any] | None) -> Model:
    """A spec from a config's ``[fabric]`` table (its ``preset`` key, else ``hpn``)."""
    fields = dict(table or {})
    return make_spec(fields.pop("preset", "hpn"), fields)


def build(spec: Model | str, **fields: Any) -> Fabric:
    """Build a fabric from a spec, or from a preset name and field overrides."""
    if isinstance(spec, str):
        spec = make_spec(spec, fields)
    elif fields:
        spec = spec.model_copy(update=fields)
    return PRESETS[spec.preset].build(spec)  # type: ignore[attr-defined]
