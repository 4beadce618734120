"""Unit fields that keep their text (``hpn.config.Seconds``, ``Bytes``, ``Rate``): the value is
the SI number, the JSON form (a stored config) is the text given."""

from __future__ import annotations

import copy
import pickle

import pytest
from pydantic import Field, ValidationError

from hpn.config import Bytes, Model, Rate, Seconds, dump_toml


class Cfg(Model):
    duration: Seconds = Field("300s")
    size: Bytes = Field("2MB")
    rate: Rate = Field("2Mbps")
    slo: Seconds | None = None


def test_values_are_si_numbers_and_json_is_the_text_given():
    c = Cfg()
    assert (c.duration, c.size, c.rate) == (300.0, 2e6, 2e6)
    assert c.model_dump(mode="json") == {
        "duration": "300s",
        "size": "2MB",
        "rate": "2Mbps",
        "slo": None,
    }  # not the formatted "5min", "1.90735MiB", "2M"
    given = Cfg(duration="0.5min", size="1GiB", slo="100ms")
    assert given.duration == 30.0 and given.size == 2**30 and given.slo == pytest.approx(0.1)
    assert given.model_dump(mode="json")["duration"] == "0.5min"
    assert 'duration = "0.5min"' in dump_toml(given.model_dump(mode="json"))


def test_round_trips_through_json_pickle_and_copy():
    c = Cfg(duration="90s", slo="5ms")
    again = Cfg.model_validate(c.model_dump(mode="json"))
    assert again.model_dump(mode="json") == c.model_dump(mode="json")
    for other in (pickle.loads(pickle.dumps(c)), copy.deepcopy(c)):
        assert other.model_dump(mode="json") == c.model_dump(mode="json")
    assert Cfg(duration=2).model_dump(mode="json")["duration"] == "2s"  # a number: formatted


def test_bad_text_is_refused_at_validation():
    with pytest.raises(ValidationError, match="cannot read 'xx' as a duration"):
        Cfg(duration="xx")
    with pytest.raises(ValidationError, match="unknown unit"):
        Cfg(size="3parsecs")


# --- the app's unit fields: typed, so parsed at validation; services get SI numbers

from hpn.app.lab import FailConfig, TrafficConfig  # noqa: E402
from hpn.app.serve import ReplayConfig, ServeConfig  # noqa: E402
from hpn.config import Quantity  # noqa: E402

_FIELDS = [  # config, table, required fields, field, text given, SI value
    (TrafficConfig, "lab", {}, "size", "1MiB", 2**20),
    (TrafficConfig, "lab", {}, "rate", "0.5Mbps", 5e5),
    (FailConfig, "lab", {}, "rate", "3Mbps", 3e6),
    (ServeConfig, "serve", {"models": "m"}, "ttft_slo", "2.5s", 2.5),
    (ServeConfig, "serve", {"models": "m"}, "tbt_slo", "50ms", 0.05),
    (ServeConfig, "serve", {"models": "m"}, "startup", "1min", 60.0),
    (ReplayConfig, "replay", {"trace": "t"}, "ttft_slo", "1500ms", 1.5),
    (ReplayConfig, "replay", {"trace": "t"}, "tbt_slo", "0.2s", 0.2),
    (ReplayConfig, "replay", {"trace": "t"}, "duration", "5min", 300.0),
]


@pytest.mark.parametrize("cls,table,base,name,text,value", _FIELDS)
def test_app_unit_fields_are_numbers_that_keep_their_text(cls, table, base, name, text, value):
    cfg = cls.model_validate({table: {**base, name: text}})
    got = getattr(getattr(cfg, table), name)
    assert isinstance(got, Quantity) and got == pytest.approx(value)
    dumped = cfg.model_dump(mode="json")
    assert dumped[table][name] == text  # a stored config reads (and hashes) as written
    assert cls.model_validate(dumped).model_dump(mode="json") == dumped


@pytest.mark.parametrize(
    "cls,table,base,name,bad,says",
    [
        (TrafficConfig, "lab", {}, "size", "0", "> 0|greater than 0"),
        (TrafficConfig, "lab", {}, "rate", "2parsecs", "unknown unit"),
        (FailConfig, "lab", {}, "rate", "0Mbps", "> 0|greater than 0"),
        (ServeConfig, "serve", {"models": "m"}, "tbt_slo", "abc", "as a duration"),
        (ServeConfig, "serve", {"models": "m"}, "ttft_slo", "0s", "> 0|greater than 0"),
        (ServeConfig, "serve", {"models": "m"}, "startup", "-1s", ">= 0"),
        (ReplayConfig, "replay", {"trace": "t"}, "ttft_slo", "0ms", "> 0|greater than 0"),
        (ReplayConfig, "replay", {"trace": "t"}, "duration", "xx", "as a duration"),
    ],
)
def test_app_unit_fields_refuse_bad_text_at_validation(cls, table, base, name, bad, says):
    with pytest.raises(ValidationError, match=says):
        cls.model_validate({table: {**base, name: bad}})


class _Stop(Exception):
    """Raised by a faked service once it has seen its arguments."""


def test_lab_services_receive_si_numbers(monkeypatch):
    from hpn.app import lab
    from hpn.lab import service

    seen: dict = {}

    def fake(name):
        def record(*args, **kwargs):
            seen[name] = args
            raise _Stop

        return record

    monkeypatch.setattr(service, "traffic", fake("traffic"))
    monkeypatch.setattr(service, "fail", fake("fail"))
    with pytest.raises(_Stop):
        lab.traffic(TrafficConfig.model_validate({"lab": {"size": "1kB", "rate": "2Mbps"}}))
    with pytest.raises(_Stop):
        lab.fail(FailConfig.model_validate({"lab": {"rate": "1.5Mbps"}}))
    size, rate = seen["traffic"][2], seen["traffic"][5]
    assert (type(size), size, type(rate), rate) == (float, 1000.0, float, 2e6)
    assert (type(seen["fail"][7]), seen["fail"][7]) == (float, 1.5e6)


def test_replay_service_receives_si_numbers(monkeypatch):
    from hpn.app import serve
    from hpn.serve import replay

    seen: dict = {}

    def fake(url, **kw):
        seen.update(kw)
        raise _Stop

    monkeypatch.setattr(replay, "replay_trace", fake)
    cfg = ReplayConfig.model_validate(
        {"replay": {"trace": "t", "duration": "2min", "ttft_slo": "3s", "tbt_slo": "40ms"}}
    )
    with pytest.raises(_Stop):
        serve.replay(cfg)
    assert type(seen["duration"]) is float and seen["duration"] == 120.0
    assert (seen["slo"].ttft, seen["slo"].tbt) == pytest.approx((3.0, 0.04))
    assert type(seen["slo"].ttft) is float


_CLI = """
import contextlib, io, json, sys
from hpn.cli import main
out = []
for args in json.loads(sys.argv[1]):
    sys.argv = ["hpn", *args]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main()
        except SystemExit as e:
            out.append([e.code, err.getvalue()])
print(json.dumps(out))
"""


def test_cli_names_the_flag_and_exits_2_before_any_work(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    cases = {  # nothing here exists: the unit is refused first, naming its flag
        ("lab", "traffic", "--name", "zz", "--size", "xx"): "--size: cannot read 'xx'",
        ("lab", "traffic", "--name", "zz", "--rate", "0"): "--rate: must be > 0",
        ("lab", "fail", "--name", "zz", "--rate", "5zz"): "--rate: unknown unit",
        ("serve", "start", "--models", str(tmp_path), "--tbt-slo", "abc"): "--tbt-slo: cannot",
        ("serve", "start", "--models", str(tmp_path), "--startup", "-1s"): "--startup:",
        ("pool", "replay", str(tmp_path / "t.csv"), "--duration", "xx"): "--duration: cannot",
        ("pool", "replay", str(tmp_path / "t.csv"), "--ttft-slo", "0s"): "--ttft-slo: must be > 0",
    }
    src = str(Path(__file__).resolve().parents[1] / "src")
    p = subprocess.run(
        [sys.executable, "-c", _CLI, json.dumps([list(c) for c in cases])],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
    )
    for (code, err), says in zip(json.loads(p.stdout), cases.values(), strict=True):
        assert code == 2 and err.startswith("error: ") and says in err, (says, err)
        assert len(err.strip().splitlines()) == 1


# --- bounds: a unit field's ``Field(gt=..., le=...)`` is checked (a plain validator would drop
# it: pydantic applies a field's constraints to the type's float schema first), and the error
# restates the bound in the unit the value was given in

from hpn.config import Duration, one_line  # noqa: E402


class Bounded(Model):
    slo: Seconds = Field("10s", gt=0, le=3600)
    maybe: Seconds | None = Field(None, ge=0, le=3600)
    size: Bytes = Field("1MB", le=2**30)
    probe: Duration = Field("100ms", gt=0, le=3600)


def _why(**given) -> str:
    with pytest.raises(ValidationError) as e:
        Bounded(**given)
    return str(one_line(e.value, "t"))


@pytest.mark.parametrize(
    ("given", "line"),
    [
        ({"slo": "1e9h"}, "t.slo: must be <= 1h (got '1e9h')"),
        ({"slo": "3601s"}, "t.slo: must be <= 1h (got '3601s')"),
        ({"slo": "0s"}, "t.slo: must be > 0 (got '0s')"),
        ({"maybe": "2h"}, "t.maybe: must be <= 1h (got '2h')"),
        ({"size": "2GiB"}, "t.size: must be <= 1GiB (got '2GiB')"),
        ({"probe": "61min"}, "t.probe: must be <= 1h (got '61min')"),
        ({"probe": "0ms"}, "t.probe: must be > 0 (got '0ms')"),
    ],
)
def test_bounds_of_unit_fields_are_checked_and_stated_in_units(given, line):
    assert _why(**given) == line


def test_a_value_at_its_bound_passes_and_keeps_its_text():
    b = Bounded(slo="1h", maybe="60min", size="1GiB", probe="3600s")
    assert (b.slo, b.maybe, b.size, b.probe) == (3600.0, 3600.0, 2**30, 3600.0)
    assert b.model_dump(mode="json")["slo"] == "1h" and isinstance(b.slo, Quantity)
    assert Bounded(slo=b.slo).slo.text == "1h"  # a Quantity passes through as it is


def test_a_bare_number_past_a_bound_keeps_pydantic_s_words():
    assert "less than or equal to 3600" in _why(slo=4000)
