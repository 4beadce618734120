"""Plots a network engineer reads at a glance: units, relative throughput, legends, ticks."""

from __future__ import annotations

import numpy as np

from hpn.plots import draw
from hpn.plots.html import figure
from hpn.plots.kinds import _join, size_text, size_ticks
from hpn.store import Run, record_run


def _fault_run(base: float, dip: float, end: float, label: str) -> Run:
    t = {"time_s": [0.0, 2.0, 2.0, 5.0, 5.0, end], "throughput": [base, base, dip, dip, base, base]}
    ev = {"time_s": [2.0, 2.0, 5.0], "label": ["down a", "down b", "up a"]}
    res = {"baseline_samples_per_s": base}
    return Run(record_run("fail", {"x": label}, res, {"throughput": t, "events": ev}, label=label))


def test_fault_throughput_is_relative_from_zero_and_lines_end_together():
    a = _fault_run(666.3, 665.8, 20.0, "dual-tor")
    b = _fault_run(666.3, 0.0, 35.0, "single-tor")
    c = draw("fault-throughput", [a, b])
    assert "fraction of fault-free" in c.ylabel and c.y_from_zero
    assert np.isclose(c.lines[0].y.min(), 665.8 / 666.3) and c.lines[1].y.min() == 0
    assert c.lines[0].x[-1] == c.lines[1].x[-1] == 35.0
    fig = figure(c)
    assert fig.layout.yaxis.rangemode == "tozero"
    # one marker per time, labels merged; markers from both runs are not repeated
    assert [(x, t) for x, t, _ in c.marker_levels()] == [(2.0, "down a, down b"), (5.0, "up a")]


def test_close_markers_get_staggered_labels():
    a = _fault_run(1.0, 0.0, 1000.0, "x")
    levels = [lv for _, _, lv in draw("fault-throughput", [a]).marker_levels()]
    assert levels == [0, 1]  # 2 s and 5 s are closer than 4 % of 1000 s


def test_legends_say_each_word_once():
    assert _join("goodput aegaeon", "aegaeon") == "goodput aegaeon"
    assert _join("allreduce 448 GPUs hpn", "hpn") == "allreduce 448 GPUs hpn"
    assert _join("", "hpn") == "hpn"


def test_sizes_are_written_in_bytes_units():
    assert size_text(1e9) == "1 GB" and size_text(64e6) == "64 MB"
    assert size_text(2**20) == "1 MiB" and size_text(2**30) == "1 GiB" and size_text(512) == "512 B"
    ticks = size_ticks(np.array([1e6, 64e6, 1e9, 1e9]))
    assert ticks == [(1e6, "1 MB"), (64e6, "64 MB"), (1e9, "1 GB")]
    assert len(size_ticks(np.geomspace(1, 2**30, 31))) <= 10


def test_busbw_axis_ticks_name_the_sizes():
    t = {"fabric": ["hpn"] * 3, "size_bytes": [1e6, 64e6, 1e9], "busbw_gbps": [10.0, 80, 90]}
    r = Run(record_run("collective", {}, {}, {"busbw": t}, label="allreduce hpn"))
    c = draw("busbw", [r])
    assert [txt for _, txt in c.xticks] == ["1 MB", "64 MB", "1 GB"]
    fig = figure(c)
    assert list(fig.layout.xaxis.ticktext) == ["1 MB", "64 MB", "1 GB"]


def test_slo_load_says_what_load_is():
    t = {"policy": ["aegaeon"] * 2, "load": [0.5, 1.0], "slo_attainment": [1.0, 0.9]}
    r = Run(record_run("pool goodput", {}, {}, {"slo": t}))
    c = draw("slo-load", [r])
    assert c.xlabel == "load (requests/s, all models together)" and "fraction" in c.ylabel
