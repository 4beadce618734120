import ipaddress

import numpy as np
import pytest

from hpn.errors import InputError
from hpn.routing.addressing import address_plan, random_sports, roce_tuples
from hpn.topology import NodeKind, build


def test_one_subnet_per_tor_pair_and_unique_ips():
    f = build("hpn", segments=2)
    plan = address_plan(f)
    gpus = f.nodes_of(NodeKind.GPU)
    assert plan.prefix_len == 24  # 136 NICs per ToR pair
    assert len(np.unique(plan.ip[gpus])) == len(gpus)
    # NIC r of every host in a segment shares rail r's subnet
    nd = f.nodes
    key = nd.segment[gpus] * 8 + nd.index[gpus]
    for k in np.unique(key):
        assert len(np.unique(plan.subnet[gpus[key == k]])) == 1
    assert len(np.unique(plan.subnet[gpus])) == 2 * 8
    net = ipaddress.ip_network(f"{plan.ip_str(int(gpus[0]))}/24", strict=False)
    assert ipaddress.ip_address(plan.ip_str(int(gpus[8]))) in net  # next host, same rail


def test_switches_have_no_address():
    f = build("hpn", segments=1)
    plan = address_plan(f)
    tor = int(f.nodes_of(NodeKind.TOR)[0])
    with pytest.raises(InputError):
        plan.ip_str(tor)
    with pytest.raises(InputError):
        roce_tuples(plan, np.array([tor]), np.array([0]), np.array([50000]))


def test_sports_are_seeded_and_dynamic():
    a, b = random_sports(3, 1000), random_sports(3, 1000)
    assert np.array_equal(a, b) and a.min() >= 49152 and a.max() <= 65535
    assert not np.array_equal(a, random_sports(4, 1000))
