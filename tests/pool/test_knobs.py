"""A policy's knobs are its ``Knobs`` model: every knob is a ``[pool]`` field and a flag."""

import json

import pytest
from pydantic import Field
from typer.testing import CliRunner

from hpn.app.flags import table_flags
from hpn.app.pool import CAPACITY, GOODPUT, SIMULATE, _knobs, _options
from hpn.cli import app
from hpn.config import Model
from hpn.errors import InputError
from hpn.pool.policies import POLICIES

runner = CliRunner()
COMMANDS = (SIMULATE, GOODPUT, CAPACITY)


def test_every_knob_of_every_policy_is_a_field_and_a_flag_of_every_pool_command():
    for cmd in COMMANDS:
        table = cmd.config.model_fields["pool"].annotation
        flags = {f.key.partition("__")[2]: f for f in table_flags("pool", table)}
        for name, cls in POLICIES.items():
            for knob in cls.Knobs.model_fields:
                assert knob in table.model_fields, (cmd.name, name, knob)
                assert name in flags[knob].help.lower(), flags[knob].help


def test_a_knob_given_reaches_only_its_policy():
    cfg = SIMULATE.parse({"pool": {"models": 2, "prefetch": False, "max_group": 3}})
    assert _options(cfg.pool, "aegaeon") == {"prefetch": False, "max_group": 3}
    owners = "aegaeon or aegaeon-artifact"
    with pytest.raises(InputError, match=f"applies to policy {owners}, not serverless"):
        _options(cfg.pool, "serverless")


def test_unit_knobs_take_units_and_their_bounds():
    cfg = SIMULATE.parse({"pool": {"models": 2, "keep_alive": "2min", "interval": "500ms"}})
    assert _options(cfg.pool, "serverless") == {"keep_alive": 120.0, "interval": 0.5}
    for bad in ({"interval": "0s"}, {"kv_fraction": 1.0}, {"scale_up_below": 0}):
        with pytest.raises(InputError, match="pool." + next(iter(bad))):
            SIMULATE.parse({"pool": {"models": 2, **bad}})


def _run(*args):
    base = ["pool", "simulate", "--models", "20", "--rate", "0.3", "--gpus", "4"]
    r = runner.invoke(app, [*base, "--duration", "60s", "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.mark.parametrize(
    "policy, flags",
    [
        ("aegaeon", ["--no-prefetch"]),
        ("serverless", ["--interval", "5s"]),
        ("serverless-artifact", ["--scale-up-below", "4"]),
        ("serverless-artifact", ["--start-timeout", "2s"]),
    ],
)
def test_the_knobs_no_flag_reached_before_change_the_run(policy, flags):
    default, changed = _run("--policy", policy), _run("--policy", policy, *flags)
    keep = ("slo_attainment", "switches", "finished")
    assert {k: default[k] for k in keep} != {k: changed[k] for k in keep}


def test_two_policies_declaring_one_knob_share_its_field(monkeypatch):
    from hpn.pool.policies.dedicated import Dedicated

    class Knobs(Model):
        target: int = Field(3, ge=1, description="target concurrency per instance")

    class Twin(Dedicated):
        name = "twin"
        summary = "a test policy"

    Twin.Knobs = Knobs
    monkeypatch.setitem(POLICIES._items, "twin", Twin)
    monkeypatch.setitem(POLICIES._summaries, "twin", Twin.summary)
    knobs = _knobs()
    assert knobs["target"].owners == ("serverless", "twin")
    assert "(>= 1, default 1, 3)" in knobs["target"].info.description  # bound, defaults
