import pytest

from hpn.errors import InputError
from hpn.topology import build
from hpn.topology.bom import Prices, bill_of_materials, chip_power


def test_pod_bom_counts_and_thermal():
    b = bill_of_materials(build("hpn"))
    assert b["totals"]["switches"] == 360
    links = {(x["tier"], x["speed"]): x for x in b["links"]}
    assert links[("nic_tor", "200G")]["cables"] == 32_640
    assert links[("tor_agg", "400G")]["transceivers"] == 2 * 14_400
    assert b["chip"]["power_w"] == 750
    # Fig 9b: 51.2T needs the optimized vapor chamber
    assert [k for k, v in b["thermal"].items() if v["fits"]] == ["optimized_vapor_chamber"]
    assert b["totals"]["switch_power_kw"] == pytest.approx(360 * 0.75)


def test_chip_power_interpolates_and_flags_extrapolation():
    assert chip_power(25.6e12) == (520.0, False)
    w, extra = chip_power(102.4e12)
    assert extra and w > 750
    w, extra = chip_power(38.4e12)
    assert not extra and 520 < w < 750


def test_cost_needs_every_price():
    f = build("hpn", segments=1)
    prices = Prices(
        switch={"51.2T": 100.0},
        transceiver={"200G": 1.0, "400G": 2.0},
        cable={"200G": 0.5, "400G": 0.5},
    )
    b = bill_of_materials(f, prices)
    n_sw = b["totals"]["switches"]
    tx = sum(x["transceivers"] * (1.0 if x["speed"] == "200G" else 2.0) for x in b["links"])
    assert b["cost"]["total"] == pytest.approx(100 * n_sw + tx + 0.5 * b["totals"]["cables"])
    with pytest.raises(InputError) as e:
        bill_of_materials(f, Prices(switch={"25.6T": 1.0}))
    assert "prices.switch" in str(e.value)
