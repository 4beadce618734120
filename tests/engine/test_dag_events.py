"""Dependencies, compute tasks, delays, capacity events, sampling and refusals."""

import numpy as np
import pytest

from hpn.engine import CapacityEvents, FlowDAG, simulate
from hpn.errors import InputError
from hpn.topology import build
from hpn.topology.fabric import LinkTier
from tests.engine.fabrics import star

B, S = 100e9, 1e6
T = S * 8 / B  # one flow alone on the star


def test_compute_then_flow_then_compute_with_delays():
    f = star(2, B, latency=1e-6)
    dag = FlowDAG()
    c1 = dag.add_compute(0, 5e-6)
    fl = dag.add_flows(0, 1, S, delay=2e-6)
    c2 = dag.add_compute(1, 3e-6)
    dag.chain([c1[0], fl[0], c2[0]])
    r = simulate(f, dag)
    assert r.start[0] == pytest.approx(7e-6)
    assert r.task_finish[c2[0]] == pytest.approx(7e-6 + T + 2e-6 + 3e-6)
    assert r.makespan == pytest.approx(r.task_finish[c2[0]])


def test_start_delays_without_dependencies():
    f = star(3, B, latency=0.0)
    dag = FlowDAG()
    dag.add_flows([0, 1], [2, 2], S, delay=[0.0, T])  # second starts as the first ends
    r = simulate(f, dag)
    np.testing.assert_allclose(r.fct, [T, T], rtol=1e-12)


def test_same_time_finishes_are_one_batch():
    f = star(9, B, latency=0.0)
    dag = FlowDAG()
    dag.add_flows(np.arange(8), 8, S)
    r = simulate(f, dag)
    assert r.stats["rate_computations"] == 2  # the start, then the one batch of finishes


@pytest.mark.parametrize(
    "build_dag,match",
    [
        (lambda d: d.add_flows(0, 1, -1.0), "size"),
        (lambda d: d.add_flows(0, 99, 1.0), "unknown node 99"),
        (lambda d: d.add_compute(0, -1e-6), "duration"),
        (lambda d: d.add_flows(0, 1, 1.0, delay=np.nan), "delay"),
    ],
)
def test_bad_input_is_refused(build_dag, match):
    dag = FlowDAG()
    build_dag(dag)
    with pytest.raises(InputError, match=match):
        simulate(star(2), dag)


def test_cycles_are_refused():
    dag = FlowDAG()
    a = dag.add_flows([0, 1, 0], [1, 0, 1], S)
    dag.chain(a)
    dag.add_deps(a[2], a[0])
    with pytest.raises(InputError, match="cycle"):
        simulate(star(2), dag)
    d2 = FlowDAG()
    c = d2.add_compute(0, 1e-6)
    d2.add_deps(c, c)
    with pytest.raises(InputError, match="cycle"):
        simulate(star(2), d2)


def test_flow_to_itself_and_unreachable_are_refused():
    dag = FlowDAG()
    dag.add_flows(0, 0, S)
    with pytest.raises(InputError, match="own source"):
        simulate(star(2), dag)
    f = build("hpn", segments=1, tor_uplinks=0)  # no Aggs: rails are islands
    gpu = f.nodes_of(0)
    other_rail_other_host = gpu[8 + 1]
    dag = FlowDAG()
    dag.add_flows(gpu[0], other_rail_other_host, S)
    with pytest.raises(InputError, match="no path"):
        simulate(f, dag)


def test_link_down_then_repaired_pauses_the_flow():
    f = star(2, B, latency=0.0)
    up = f.link_between(0, 2)
    dag = FlowDAG()
    dag.add_flows(0, 1, S)
    ev = CapacityEvents.of([(T / 4, up, 0.0), (T, up, B)])
    r = simulate(f, dag, capacity_events=ev)
    assert r.fct[0] == pytest.approx(T + 0.75 * T)


def test_link_down_forever_is_a_dag_that_never_finishes():
    f = star(2, B)
    dag = FlowDAG()
    dag.add_flows(0, 1, S)
    ev = CapacityEvents.of([(T / 2, f.link_between(0, 2), 0.0)])
    with pytest.raises(InputError, match="never finish"):
        simulate(f, dag, capacity_events=ev)


def test_halved_capacity_halves_the_rate():
    f = star(2, B, latency=0.0)
    dag = FlowDAG()
    dag.add_flows(0, 1, S)
    ev = CapacityEvents.of([(T / 2, f.link_between(2, 1), B / 2)])
    r = simulate(f, dag, capacity_events=ev)
    assert r.fct[0] == pytest.approx(T / 2 + T)


def test_failed_nic_port_reroutes_to_the_other_port():
    f = build("hpn", segments=2)
    gpu = f.nodes_of(0)
    src, dst = gpu[0], gpu[8]  # rail 0 of hosts 0 and 1: one ToR hop on either port
    dag = FlowDAG()
    dag.add_flows(src, dst, S)
    first = simulate(f, dag, seed=1)
    port_link = int(first.paths[0][0])
    assert f.links.tier[port_link] == LinkTier.NIC_TOR
    t_rate = S * 8 / f.links.capacity[port_link]
    ev = CapacityEvents.of([(t_rate / 2, port_link, 0.0)], reroute=True)
    r = simulate(f, dag, seed=1, capacity_events=ev)
    new_first = int(r.paths[0][0])
    assert new_first != port_link and f.links.port[new_first] != f.links.port[port_link]
    assert r.fct[0] == pytest.approx(first.fct[0], rel=1e-9)  # same speed on the other port
    assert r.link_bytes[port_link] == pytest.approx(S / 2)
    assert r.link_bytes[new_first] == pytest.approx(S / 2)


def test_utilization_series_per_tier_and_link():
    f = star(3, B, latency=0.0)
    dag = FlowDAG()
    dag.add_flows([0, 1], [2, 2], S)
    down = f.link_between(3, 2)
    r = simulate(f, dag, sample_interval=T / 2, sample_links=np.array([down]))
    s = r.series
    assert s.time[0] == 0 and np.allclose(np.diff(s.time[:4]), T / 2)
    np.testing.assert_allclose(s.links[:4, 0], 1.0)  # the ToR -> host 2 link is full
    # NIC tier: 3 hosts x 2 directions = 6 links of B; 2 uplinks at B/2 + 1 downlink at B
    np.testing.assert_allclose(s.tier[:4, LinkTier.NIC_TOR], 2 * B / (6 * B))


def test_same_inputs_same_seed_bit_identical():
    f = build("fat-tree", k=8)
    from hpn.workload import make_pattern

    r1 = simulate(f, make_pattern("permutation", f, 1e6, seed=4), seed=9)
    r2 = simulate(f, make_pattern("permutation", f, 1e6, seed=4), seed=9)
    assert r1.finish.tobytes() == r2.finish.tobytes()
    assert r1.link_bytes.tobytes() == r2.link_bytes.tobytes()
    assert r1.paths.links.tobytes() == r2.paths.links.tobytes()
    r3 = simulate(f, make_pattern("permutation", f, 1e6, seed=4), seed=10)
    assert r3.paths.links.tobytes() != r1.paths.links.tobytes()
