"""Per-tier bytes and Agg queues of a training iteration; the ToR-port queues of Fig 14."""

from __future__ import annotations

import numpy as np
import pytest

from hpn.topology import build
from hpn.workload.dcqcn import standing_queue
from hpn.workload.queues import nic_port_queues
from hpn.workload.training.config import JobConfig
from hpn.workload.training.traffic import agg_links, observe, window_peak

MODEL = {"layers": 4, "hidden": 1024, "heads": 8, "seq_len": 512, "vocab": 32000}


def job(first_host: int, dp: int = 4) -> JobConfig:
    return JobConfig.model_validate(
        {
            "name": "j",
            "placement": {"first_host": first_host},
            "model": MODEL,
            "parallel": {"tp": 8, "pp": 1, "dp": dp, "global_batch": dp},
        }
    )


@pytest.fixture(scope="module")
def fabric():
    return build("hpn", segments=2)


def test_window_peak_closed_forms():
    t, r = np.array([0.0, 1.0, 3.0]), np.array([6.0, 0.0, 2.0])  # 6 bytes/s for 1 s, ...
    # period 4 s carries 6 + 0 + 2 = 8 bytes: any whole number of periods averages 2
    assert window_peak(t, r, 4.0, 8.0) == pytest.approx(2.0)
    # a 1 s window is best on the 6 bytes/s step; a 2 s one takes it and 1 s of the 2 before
    assert window_peak(t, r, 4.0, 1.0) == pytest.approx(6.0)
    assert window_peak(t, r, 4.0, 2.0) == pytest.approx(4.0)


def test_a_job_inside_one_segment_sends_nothing_up(fabric):
    tr = observe(fabric, [job(0)], "hpn", seed=1)
    assert tr.ingress_bytes == 0 and tr.ingress_peak_bps == 0 and tr.queue_max_bytes == 0
    assert tr.tier_bytes["nic_tor up"] > 0


def test_cross_segment_bytes_sampled_and_counted_agree(fabric):
    nd = fabric.nodes
    gpus0 = (nd.kind == 0) & (nd.segment == 0) & ~nd.backup  # segment 0's GPUs
    per = int(np.count_nonzero(gpus0)) // 8  # hosts per segment
    tr = observe(fabric, [job(per - 2)], "hpn", seed=1, interval=2e-6)  # ~700 samples
    assert tr.ingress_bytes > 0
    assert tr.tier_bytes["tor_agg up"] == pytest.approx(tr.ingress_bytes)
    assert tr.tier_bytes["tor_agg down"] == pytest.approx(tr.ingress_bytes)  # up, then down
    assert tr.ingress_sampled_bytes == pytest.approx(tr.ingress_bytes, rel=0.03)
    assert tr.ingress_mean_bps == pytest.approx(8 * tr.ingress_bytes / tr.iteration_s)
    # the iteration is far shorter than 10 s: the window's peak is about the mean (read from
    # the samples, so within their error against the counted bytes, asserted above)
    assert 0.97 * tr.ingress_mean_bps <= tr.ingress_peak_bps <= 1.05 * tr.ingress_mean_bps
    up, down = agg_links(fabric)
    assert len(up) == len(down) > 0


def test_port_queues_follow_the_flow_counts():
    one = nic_port_queues(build("hpn", segments=2, dual_plane=False), hashing={"bond_hash": "rr"})
    two = nic_port_queues(build("hpn", segments=2), hashing={"bond_hash": "rr"})
    for pq in (one, two):  # 2 peers x 4 connections into every NIC
        assert np.all(pq.hot_flows + pq.cold_flows == 8)
        assert np.all(pq.hot_flows >= pq.cold_flows)
        sat = pq.hot_load >= 200e9 * (1 - 1e-6)
        want = [standing_queue(200e9, int(n)) for n in pq.hot_flows[sat]]
        assert np.allclose(pq.hot_queue[sat], want)
        assert np.all(pq.hot_queue[~sat] == 0)
    assert np.all(two.hot_flows == 4)  # dual-plane: no Agg choice, even ports
    assert one.summary()["hot_flows_max"] > 4
    assert one.summary()["hot_queue_max"] > two.summary()["port_queue_mean"]
