import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.units import (
    format_bandwidth,
    parse_bandwidth,
    parse_duration,
    parse_size,
    parse_size_list,
)


@pytest.mark.parametrize(
    "text,bps",
    [
        ("400G", 400e9),
        ("200Gbps", 200e9),
        ("51.2T", 51.2e12),
        ("51.2Tbps", 51.2e12),
        ("100M", 100e6),
        ("400GB/s", 3.2e12),
        ("2880Gbps", 2.88e12),
        (" 1.6 Tbps ", 1.6e12),
        (10, 10.0),
        ("1e9", 1e9),
    ],
)
def test_bandwidth(text, bps):
    assert parse_bandwidth(text) == pytest.approx(bps, rel=1e-12)


@pytest.mark.parametrize(
    "text,nbytes",
    [
        ("4GB", 4e9),
        ("4GiB", 4 * 2**30),
        ("2MB", 2e6),
        ("1M", 2**20),
        ("4G", 4 * 2**30),
        ("512", 512.0),
        ("1.5KiB", 1536.0),
        ("8B", 8.0),
    ],
)
def test_size(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize(
    "text,seconds",
    [
        ("10us", 1e-5),
        ("25ns", 25e-9),
        ("2ms", 2e-3),
        ("1.5s", 1.5),
        ("5min", 300.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("0.0005ms", 5e-7),
    ],
)
def test_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize(
    "parser,text",
    [
        (parse_bandwidth, "fast"),
        (parse_bandwidth, "400GB"),
        (parse_bandwidth, "-1G"),
        (parse_size, "4Gbps"),
        (parse_size, "nan"),
        (parse_duration, "10 parsecs"),
        (parse_duration, ""),
        (parse_bandwidth, True),
        (parse_size, [1]),
    ],
)
def test_errors_name_the_field(parser, text):
    with pytest.raises(InputError) as e:
        parser(text, "myfield")
    assert str(e.value).startswith("myfield:")


def test_size_list():
    assert parse_size_list("1M,4M, 16M") == [2**20, 4 * 2**20, 16 * 2**20]
    with pytest.raises(InputError):
        parse_size_list(" , ")


@given(st.floats(min_value=1, max_value=1e16, allow_nan=False))
def test_bandwidth_format_round_trip(x):
    assert math.isclose(parse_bandwidth(format_bandwidth(x)), x, rel_tol=1e-5)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("2h", "duration"),
        ("1e9h", "duration"),
        ("10us", "duration"),
        ("5min", "duration"),
        ("4GB", "size"),
        ("4GiB", "size"),
        ("100Gbps", "bandwidth"),
        ("400GB/s", "bandwidth"),
        ("4G", None),  # a size or a bandwidth
        ("300", None),
        ("abc", None),
    ],
)
def test_unit_kind_names_the_quantity_a_unit_is_of(text, kind):
    from hpn.units import unit_kind

    assert unit_kind(text) == kind
