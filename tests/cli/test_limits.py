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


# --- bounds of one value (issues 25/26/29): stated in help, checked at parse, at the bound fine


@pytest.mark.parametrize(
    ("name", "table", "field", "at", "past", "stated"),
    [
        ("pool simulate", "pool", "ttft_slo", "1h", "3601s", "(> 0, <= 1h)"),
        ("pool goodput", "pool", "tbt_slo", "60min", "1.01h", "(> 0, <= 1h)"),
        ("pool simulate", "pool", "keep_alive", "24h", "1441min", "(>= 0, <= 24h, default 0)"),
        ("pool capacity", "pool", "startup", "1h", "3601s", "(>= 0, <= 1h, default 22.3s)"),
        ("collective", "collective", "alpha", "1s", "1001ms", "(>= 0, <= 1s)"),
    ],
)
def test_a_bounded_value_is_stated_and_checked_alike(name, table, field, at, past, stated):
    cmd = COMMANDS.get(name)
    info = cmd.config.model_fields[table].annotation.model_fields[field]
    assert stated in info.description
    extra = {"policy": "serverless"} if field in ("keep_alive", "startup") else {}
    parsed = getattr(cmd.parse({table: {**extra, field: at}}), table)  # at the bound: fine
    assert parsed.model_dump(mode="json")[field] == at  # kept as written
    with pytest.raises(InputError) as e:
        cmd.parse({table: {**extra, field: past}})
    assert e.value.field == f"{table}.{field}" and "must be <=" in e.value.message
