"""The generated reference docs match the code (run `make docs` after changing a model)."""

from pathlib import Path

from hpn.reference import REGISTRIES, cli_markdown, config_markdown, names_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reference"


def test_config_reference_is_current():
    assert (DOCS / "config.md").read_text() == config_markdown() + "\n", "run `make docs`"


def test_cli_reference_is_current():
    assert (DOCS / "cli.md").read_text() == cli_markdown() + "\n", "run `make docs`"


def test_kept_flags_are_written_through_and_equal_the_models(tmp_path, monkeypatch):
    """``hpn CMD --help`` builds from the user cache's copy, which the first derivation writes."""
    from hpn.app import COMMANDS, flagcache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for name in COMMANDS:
        assert flagcache.cached(name) is None, name  # an empty cache
        derived = flagcache.get(name)
        assert flagcache.cached(name) == derived == flagcache.flags_of(name), name
    assert str(tmp_path) in flagcache.path_of("traffic")


def test_names_reference_is_current():
    assert (DOCS / "names.md").read_text() == names_markdown() + "\n", "run `make docs`"


def test_every_registry_is_listed():
    """Each family is one Registry, and the names reference lists every one of its names."""
    import importlib

    from hpn.registry import Registry

    text = names_markdown()
    for title, target in REGISTRIES:
        module, _, attr = target.partition(":")
        reg = getattr(importlib.import_module(module), attr)
        assert isinstance(reg, Registry), title
        assert len(reg) > 0 and all(f"| `{n}` |" in text for n in reg), title


def test_every_preset_and_command_is_documented():
    config, cli = config_markdown(), cli_markdown()
    for preset in ("hpn", "rail-only", "dcn-plus", "fat-tree"):
        assert f"Fabric: `{preset}`" in config
    for command in (
        "topo summary",
        "traffic",
        "route polarization",
        "collective",
        "train",
        "fail",
        "reliability",
        "pool simulate",
        "sweep",
        "dash",
    ):
        assert f"## `hpn {command}`" in cli


# Option help that names a registry's entries (written out, so that ``hpn CMD --help`` needs no
# import of the domain module that fills the registry): it must name every entry.
HELP_LISTS = (
    ("hpn.app.traffic:TrafficOptions", "pattern", "hpn.workload.patterns:PATTERNS"),
    ("hpn.app.collective:CollectiveOptions", "op", "hpn.workload.collectives.ops:OPS"),
    (
        "hpn.app.collective:CollectiveOptions",
        "algo",
        "hpn.workload.collectives.algorithms:ALGORITHMS",
    ),
    ("hpn.app.pool:SimulateOptions", "policy", "hpn.pool.policies:POLICIES"),
    ("hpn.app.pool:GoodputOptions", "policy", "hpn.pool.policies:POLICIES"),
    ("hpn.app.pool:CapacityOptions", "policy", "hpn.pool.policies:POLICIES"),
    ("hpn.routing.config:RoutingTable", "ecmp_hash", "hpn.routing.hashing:HASHES"),
)


def _obj(target: str):
    import importlib

    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def test_option_help_names_every_registered_entry():
    for model, field, registry in HELP_LISTS:
        text = _obj(model).model_fields[field].description
        missing = [n for n in _obj(registry) if n not in text]
        assert not missing, f"{model}.{field} help lacks {missing}: list them from {registry}"
