"""Reference documentation generated from the code, so it cannot drift.

``docs/reference/config.md`` lists every field of every config model (from pydantic) and
``docs/reference/cli.md`` every command and option (from the typer app),
``docs/reference/names.md`` every registered name (presets, policies, patterns, ...: each
family's :class:`hpn.registry.Registry`). ``make docs``
rewrites them; a test fails when they are out of date.

    python -m hpn.reference docs/reference
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def _models() -> list[tuple[str, type[BaseModel], str]]:
    from hpn.failures.config import FailCfg, RecoveryCfg, ReliabilityCfg, SimpleStep
    from hpn.routing.ecmp import HashConfig
    from hpn.sweep.spec import SweepSpec
    from hpn.topology.bom import Prices
    from hpn.topology.presets import PRESETS
    from hpn.workload.training.config import (
        CommCfg,
        GpuCfg,
        JobConfig,
        ModelCfg,
        OverlapCfg,
        ParallelCfg,
        PlacementCfg,
    )

    fabrics = [(f"Fabric: `{n}`", p.spec, f'[fabric] preset = "{n}"') for n, p in PRESETS.items()]
    return [
        *fabrics,
        ("Prices (`hpn topo bom --prices`)", Prices, "[prices]"),
        ("Switch and host hashing", HashConfig, "routing hashing={...}"),
        ("Training job", JobConfig, "a job file, or [[job]]"),
        ("Training job: model", ModelCfg, "[model]"),
        ("Training job: parallelism", ParallelCfg, "[parallel]"),
        ("Training job: GPU", GpuCfg, "[gpu]"),
        ("Training job: overlap", OverlapCfg, "[overlap]"),
        ("Training job: communication", CommCfg, "[comm]"),
        ("Training job: placement", PlacementCfg, "[placement]"),
        ("Failure injection (`hpn fail`)", FailCfg, "[fail]"),
        ("Recovery (timeouts, checkpoints)", RecoveryCfg, "part of [fail] / [reliability]"),
        ("Reliability Monte Carlo (`hpn reliability`)", ReliabilityCfg, "[reliability]"),
        ("Simple iteration (`hpn fail`)", SimpleStep, "[iteration]"),
        ("Sweep file (`hpn sweep`)", SweepSpec, "a sweep TOML"),
    ]


_UNITS = {
    "parse_bandwidth": "bandwidth",
    "parse_size": "size",
    "parse_duration": "duration",
    "allowed_path": "path",
}


def _unit(metadata: Any) -> str | None:
    for m in metadata or ():
        unit = _UNITS.get(getattr(getattr(m, "func", None), "__name__", ""))
        if unit:
            return unit
    return None


def _type(field: Any) -> str:
    unit = _unit(field.metadata)
    if unit:
        return unit
    ann = field.annotation
    args = getattr(ann, "__args__", ())
    inner = [_unit(getattr(a, "__metadata__", ())) for a in args]
    if any(inner):
        return " or ".join(
            u or getattr(a, "__name__", str(a)).replace("NoneType", "None")
            for u, a in zip(inner, args, strict=True)
        )
    text = str(ann) if args else getattr(ann, "__name__", str(ann))
    text = text.replace("typing.", "").replace("NoneType", "None").replace("hpn.", "")
    return text.replace(" | ", " or ").replace("|", " or ")


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    d = field.get_default(call_default_factory=True)
    return "-" if d is None else f"`{d!r}`"


def _command_models() -> list[tuple[str, type[BaseModel], str]]:
    """Each command's config tables (one section per table model), from :data:`hpn.app.COMMANDS`."""
    from hpn.app import COMMANDS

    out: list[tuple[str, type[BaseModel], str]] = []
    for name in COMMANDS:
        cmd = COMMANDS.get(name)
        out.append((f"Command `hpn {name}`", cmd.config, f"a config for `hpn {name}`"))
        for table, field in cmd.config.model_fields.items():
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                out.append((f"`hpn {name}`: [{table}]", ann, f"[{table}]"))
    return out


def _section(title: str, model: type[BaseModel], where: str) -> list[str]:
    out = [f"## {title}", "", f"Where: {where}. Model: `{model.__module__}.{model.__name__}`."]
    if model.__doc__:
        out += ["", " ".join(model.__doc__.split())]
    out += ["", "| field | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        desc = (field.description or "").replace("|", "\\|")
        out.append(f"| `{name}` | {_type(field)} | {_default(field)} | {desc} |")
    out.append("")
    return out


def config_markdown() -> str:
    out = [
        "# Config reference",
        "",
        "Generated from the pydantic models by `python -m "
        "hpn.reference`; do not edit. Sizes, bandwidths and durations take human units "
        "(`400G`, `4GiB`, `10us`).",
        "",
    ]
    for title, model, where in _models() + _command_models():
        out += _section(title, model, where)
    return "\n".join(out)


def cli_markdown() -> str:
    import typer

    from hpn.cli import app

    root = typer.main.get_command(app)
    out = [
        "# CLI reference",
        "",
        "Generated from the typer app by `python -m hpn.reference`; do not edit.",
        "",
    ]

    def walk(cmd: Any, path: str) -> None:
        if hasattr(cmd, "commands"):
            for name in sorted(cmd.commands):
                walk(cmd.commands[name], f"{path} {name}")
            return
        out.extend([f"## `{path}`", "", " ".join((cmd.help or "").split()), ""])
        rows = []
        for p in cmd.params:
            if p.name == "help":
                continue
            kind = "option" if getattr(p, "param_type_name", "") == "option" else "argument"
            if kind == "argument":
                names = f"`{p.metavar or p.name}`"
            else:
                names = ", ".join(f"`{o}`" for o in p.opts) if p.opts else f"`{p.name}`"
            helptext = " ".join((getattr(p, "help", None) or "").split())
            helptext = helptext.replace("|", "\\|")
            default = "" if p.default in (None, False) or callable(p.default) else f"{p.default}"
            if helptext.endswith("]") and " [default: " in helptext:  # as help states it
                helptext, default = helptext[:-1].rsplit(" [default: ", 1)
            rows.append(f"| {names} | {kind} | {default} | {helptext} |")
        if rows:
            out.extend(["| name | kind | default | meaning |", "|---|---|---|---|", *rows, ""])

    walk(root, "hpn")
    return "\n".join(out)


REGISTRIES = (
    ("Commands", "hpn.app:COMMANDS"),
    ("Fabric presets", "hpn.topology.presets:PRESETS"),
    ("Routing policies", "hpn.routing:ROUTERS"),
    ("Hash functions", "hpn.routing.hashing:HASHES"),
    ("Traffic patterns", "hpn.workload.patterns:PATTERNS"),
    ("Collective operations", "hpn.workload.collectives.ops:OPS"),
    ("Collective algorithms", "hpn.workload.collectives.algorithms:ALGORITHMS"),
    ("AICB parallelism policies", "hpn.workload.training.aicb:PARALLELISM"),
    ("Fault kinds", "hpn.failures.faults:KINDS"),
    ("Pool policies", "hpn.pool.policies:POLICIES"),
    ("Trace formats", "hpn.pool.traces:READERS"),
    ("Plot kinds", "hpn.plots.kinds:KINDS"),
)
"""Every family of named things: its title and where its registry lives."""


def names_markdown() -> str:
    import importlib

    out = [
        "# Names reference",
        "",
        "Generated from the registries by `python -m hpn.reference`; do not edit. An unknown "
        "name is refused as `FIELD: unknown KIND 'x'; choose from: ...`.",
        "",
    ]
    for title, target in REGISTRIES:
        module, _, attr = target.partition(":")
        reg = getattr(importlib.import_module(module), attr)
        out += [f"## {title}", "", f"Field `{reg.field}`.", "", "| name | summary |", "|---|---|"]
        out += ["| `{}` | {} |".format(n, reg.summary(n).replace("|", "\\|")) for n in reg]
        out.append("")
    return "\n".join(out)


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    docs = (("config.md", config_markdown()), ("cli.md", cli_markdown()))
    for name, text in (*docs, ("names.md", names_markdown())):
        p = folder / name
        p.write_text(text + "\n")
        paths.append(p)
    return paths


if __name__ == "__main__":
    for p in write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/reference")):
        print(f"wrote {p}")
