"""The registry of fabric presets: name -> (spec model, builder, port-budget check, summary).

A preset is one entry here: its spec model's fields become the ``[fabric]`` table's fields
(``--set`` and the shared fabric flags reach them), its check refuses a spec past the switch
chips' port budgets when a command's config is parsed, and its summary is its help text in
``--preset``, the reference docs and ``hpn topo``. Nothing else names it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from hpn.config import Model, one_line
from hpn.lazy import lazy_function
from hpn.registry import Registry
from hpn.topology.fabric import Fabric
from hpn.topology.spec import DcnPlusSpec, FatTreeSpec, HpnSpec, RailOnlySpec


@dataclass(frozen=True)
class Preset:
    """A fabric preset: its spec model, builder, port-budget check and one-line summary."""

    name: str
    spec: type[Model]
    build: Callable[[Any], Fabric]
    summary: str
    check: Callable[[Any], Any] | None = None  # raises InputError past a port budget
    routing: str = "ecmp"  # the routing its hosts and switches use by default


PRESETS: Registry[Preset] = Registry("preset", group="hpn.presets")


def register(
    name: str,
    spec: type[Model],
    build: Callable[[Any], Fabric],
    summary: str,
    check: Callable[[Any], Any] | None = None,
    routing: str = "ecmp",
) -> None:
    """Register a preset: its spec model, builder, port-budget check and one-line summary.

    Parameters
    ----------
    name
        Preset name (``--preset``).
    spec
        Pydantic spec model.
    build
        ``build(spec) -> Fabric``.
    summary
        One line for help and docs.
    check
        ``check(spec)``: raises :class:`~hpn.errors.InputError` (field ``core``, ``agg`` or
        ``tor``) for a spec past a chip's port budget, before anything is built; None: the
        spec model's bounds suffice.
    routing
        The routing policy its hosts and switches use when a command names none (``hpn``:
        HPN's host-side path selection, P §6.1).
    """
    PRESETS.add(name, Preset(name, spec, build, summary, check, routing), summary)


# the builders and checks are imported when a run uses them (a fat tree needs no HPN module)
build_hpn, hpn_shape = (lazy_function("hpn.topology.hpn", f) for f in ("build_hpn", "hpn_shape"))
build_dcn_plus = lazy_function("hpn.topology.dcn_plus", "build_dcn_plus")
check_dcn_plus = lazy_function("hpn.topology.dcn_plus", "check_dcn_plus")
build_fat_tree = lazy_function("hpn.topology.fat_tree", "build_fat_tree")
register(
    "hpn",
    HpnSpec,
    build_hpn,
    "HPN: dual-ToR, rail-optimized, dual-plane, 15:1 core",
    hpn_shape,
    routing="hpn",
)
register(
    "rail-only",
    RailOnlySpec,
    build_hpn,
    "HPN segments with a per-rail tier 2 (Table 4)",
    hpn_shape,
    routing="hpn",
)
register(
    "dcn-plus",
    DcnPlusSpec,
    build_dcn_plus,
    "DCN+: 3-tier dual-ToR Clos, not rail-optimized",
    check_dcn_plus,
)
register("fat-tree", FatTreeSpec, build_fat_tree, "k-ary fat tree")


def make_spec(preset: str, fields: dict[str, Any] | None = None) -> Model:
    """A validated spec of ``preset`` with ``fields`` overriding its defaults.

    Parameters
    ----------
    preset
        Preset name.
    fields
        Spec fields to override (a ``preset`` key is ignored).

    Returns
    -------
    Model
        The validated spec.

    Raises
    ------
    InputError
        For an unknown preset or a bad field value.
    """
    entry = PRESETS.get(preset, "preset")
    fields = dict(fields or {})
    fields.pop("preset", None)
    try:
        return entry.spec(**fields)
    except ValidationError as e:
        raise one_line(e, "fabric") from None


def spec_from_table(table: dict[str, Any] | None) -> Model:
    """A spec from a config's ``[fabric]`` table (its ``preset`` key, else ``hpn``).

    Parameters
    ----------
    table
        The table; None: the default HPN spec.

    Returns
    -------
    Model
        The validated spec.
    """
    fields = dict(table or {})
    return make_spec(fields.pop("preset", "hpn"), fields)


def build(spec: Model | str, **fields: Any) -> Fabric:
    """Build a fabric from a spec, or from a preset name and field overrides.

    Parameters
    ----------
    spec
        A spec model, or a preset name.
    **fields
        Spec fields to override.

    Returns
    -------
    Fabric
        The fabric.

    Examples
    --------
    >>> f = build("fat-tree", k=4)
    >>> f.num_nodes, f.num_links
    (36, 96)
    """
    if isinstance(spec, str):
        spec = make_spec(spec, fields)
    elif fields:
        spec = spec.model_copy(update=fields)
    return PRESETS[spec.preset].build(spec)  # type: ignore[attr-defined]
