"""The generated reference docs match the code (run `make docs` after changing a model)."""

from pathlib import Path

from hpn.reference import cli_markdown, config_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reference"


def test_config_reference_is_current():
    assert (DOCS / "config.md").read_text() == config_markdown() + "\n", "run `make docs`"


def test_cli_reference_is_current():
    assert (DOCS / "cli.md").read_text() == cli_markdown() + "\n", "run `make docs`"


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
