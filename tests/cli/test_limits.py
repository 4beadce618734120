"""The one table of command limits: stated in help and docs, checked alike by the CLI, sweeps
and the dashboard, raised only by ``--allow-large`` on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpn.app import COMMANDS, command, limits_text
from hpn.app.limits import LIMITS, describe
from hpn.errors import InputError

REPO = Path(__file__).resolve().parents[2]
HUGE = {"pool": {"models": 5000, "gpus": 8, "duration": "30s"}}


def test_every_limit_is_of_a_command_and_stated_in_the_reference():
    cli_md = (REPO / "docs/reference/cli.md").read_text()
    for name, rows in LIMITS.items():
        assert name in COMMANDS
        cmd = COMMANDS.get(name)
        for lim in rows:
            table = lim.field.split(".")[0]
            assert table in cmd.config.model_fields, (name, lim.field)
        assert describe(name) in " ".join(cli_md.split())


def test_parse_refuses_past_a_limit_and_allow_large_raises_it():
    cmd = COMMANDS.get("pool simulate")
    with pytest.raises(InputError) as e:
        cmd.parse(HUGE)
    assert e.value.field == "pool.models" and "1,000" in e.value.message
    assert cmd.parse(HUGE, allow_large=True).pool.models == 5000
    with pytest.raises(InputError):
        cmd.parse({"pool": {**HUGE["pool"], "models": 200_000}}, allow_large=True)


def test_dashboard_and_sweeps_check_the_same_limits_without_override():
    with pytest.raises(InputError) as e:
        command("pool simulate").parse(HUGE)  # what a dashboard job submit calls
    assert e.value.field == "pool.models"
    assert limits_text("pool simulate")  # listed by /api/commands


def test_a_limit_at_its_bound_passes():
    cmd = COMMANDS.get("pool simulate")
    assert cmd.parse({"pool": {**HUGE["pool"], "models": 1000}}).pool.models == 1000
