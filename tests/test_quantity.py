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
