"""Dashboard pages: headline figures in the runs index, the busbw table of a collective run."""

from __future__ import annotations

from hpn.store import Index, Run, record_run, runs_root
from hpn.store.headline import headline
from hpn.web.pages import run_page, runs_page


def test_headline_prefers_the_commands_key_figures():
    figs = {"preset": "hpn", "design": "single-tor", "gpus": 256, "seed": 1, "halted_s": 5.0}
    figs |= {"throughput_loss": 0.1, "crashes": 0, "iterations": 40}
    assert list(headline("fail", figs)) == ["design", "throughput_loss", "halted_s", "crashes"]
    assert list(headline("unknown", {"preset": "x", "seed": 1, "a": 1, "b": 2})) == ["a", "b"]


def test_runs_index_shows_headline_figures_and_collective_page_its_busbw():
    t = {
        "fabric": ["hpn ecmp"] * 2,
        "size_bytes": [1e6, 1e9],
        "time_s": [0.001, 0.1],
        "algbw_gbps": [1.0, 10.0],
        "busbw_gbps": [1.9, 19.375],
    }
    res = {"aaa": 1, "op": "allreduce", "algo": "ring", "routing": "ecmp", "gpus": 64, "jobs": 1}
    folder = record_run("collective", {}, res, {"busbw": t})
    html = runs_page(Index(runs_root()).rows(), str(runs_root()))
    assert "op=allreduce, algo=ring, gpus=64, jobs=1" in html
    assert "aaa=" not in html
    page = run_page(Run(folder), [])
    assert "<h2>bus bandwidth</h2>" in page
    assert "<td>1 GB</td><td>0.1</td><td>10</td><td>19.38</td>" in page
