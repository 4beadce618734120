"""Fault specs: parsing, refusals, and the links each kind takes down."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.failures import fault_links, parse_fault
from hpn.topology import build
from hpn.topology.fabric import LinkTier, NodeKind


@pytest.fixture(scope="module")
def fab():
    return build("hpn", segments=2, gpus_per_host=2)


def test_parse_link_and_flap():
    f = parse_fault("link:host=12,nic=3,port=1,at=30s,repair=90s")
    assert (f.kind, f.keys, f.at, f.repair) == ("link", {"host": 12, "nic": 3, "port": 1}, 30, 90)
    assert f.windows() == [(30.0, 120.0)]
    assert parse_fault("link:host=0,nic=0,at=1min").repair == math.inf
    g = parse_fault("flap:host=1,nic=0,at=10s,down=2s,count=3,every=5s")
    assert g.windows() == [(10, 12), (15, 17), (20, 22)]
    assert parse_fault("flap:host=1,nic=0,at=0,down=2s").windows() == [(0, 2)]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("link", "expected KIND"),
        ("bogus:host=1", "expected KIND"),
        ("link:host=1,nic=2", "needs at"),
        ("link:host=1,nic=2,at=3s,color=red", "not 'color'"),
        ("link:host=x,nic=2,at=3s", "integer"),
        ("link:host=1,nic=2,at=soon", "at"),
        ("link:host=1,nic=2,port=2,at=1s", "port must be 0 or 1"),
        ("link:host=1,host=2,nic=2,at=1s", "twice"),
        ("link:host=1,nic,at=1s", "key=value"),
        ("flap:host=1,nic=0,at=0,down=2s,count=2,every=1s", "must exceed down"),
        ("flap:host=1,nic=0,at=0,down=0s", "down > 0"),
        ("tor:rail=1,at=0", "needs segment"),
        ("agg:plane=0,at=0", "needs index"),
        ("link:host=-1,nic=0,at=0", ">= 0"),
    ],
)
def test_malformed_specs_are_refused(text, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_fault(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_any_string_parses_or_is_an_input_error(text):
    with contextlib.suppress(InputError):
        parse_fault(text)


def test_link_maps_to_the_nic_port_both_directions(fab):
    links = fault_links(fab, parse_fault("link:host=3,nic=1,port=1,at=0"))
    lk, n = fab.links, fab.nodes
    assert len(links) == 2 and links[0] ^ 1 == links[1]
    up = links[lk.src[links] == lk.dst[links[::-1]]][0]
    gpu = lk.src[links[0]] if n.kind[lk.src[links[0]]] == NodeKind.GPU else lk.dst[links[0]]
    assert (n.host[gpu], n.index[gpu]) == (3, 1)
    assert lk.port[up] == 1 and lk.tier[up] == LinkTier.NIC_TOR


def test_tor_by_position_or_by_nic_is_the_same(fab):
    a = fault_links(fab, parse_fault("tor:segment=0,rail=1,plane=1,at=0"))
    b = fault_links(fab, parse_fault("tor:host=3,nic=1,port=1,at=0"))
    np.testing.assert_array_equal(a, b)
    lk = fab.links
    tor = np.bincount(np.concatenate([lk.src[a], lk.dst[a]])).argmax()
    assert fab.nodes.kind[tor] == NodeKind.TOR
    assert len(a) == np.count_nonzero((lk.src == tor) | (lk.dst == tor))


def test_tor_agg_agg_and_core_links(fab):
    ta = fault_links(fab, parse_fault("tor-agg:segment=1,rail=0,plane=0,uplink=5,at=0"))
    assert len(ta) == 2 and (fab.links.tier[ta] == LinkTier.TOR_AGG).all()
    ag = fault_links(fab, parse_fault("agg:plane=1,index=3,at=0"))
    assert (fab.links.tier[ag] == LinkTier.TOR_AGG).all() and len(ag) == 2 * 2 * 2
    with pytest.raises(InputError, match="uplinks"):
        fault_links(fab, parse_fault("tor-agg:segment=1,rail=0,uplink=999,at=0"))
    with pytest.raises(InputError, match="no host 999"):
        fault_links(fab, parse_fault("link:host=999,nic=0,at=0"))
    two = build("hpn", pods=2, segments=1, gpus_per_host=1)
    cl = fault_links(two, parse_fault("core-link:pod=1,plane=0,agg=2,uplink=1,at=0"))
    assert len(cl) == 2 and (two.links.tier[cl] == LinkTier.AGG_CORE).all()
