"""Plot kinds from run tables, PNG and offline HTML files, `hpn plot`, the HTML report."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hpn.errors import InputError
from hpn.plots import KINDS, available, draw, render_run
from hpn.report import write_html
from hpn.store import Run, record_run
from tests.conftest import assert_input_error
from tests.plots.synthetic import everything, traffic_like

PNG = b"\x89PNG"


def _offline(text: str) -> None:
    assert not re.search(r"<script[^>]*\bsrc=", text)  # plotly.js inline, nothing fetched
    assert "Plotly.newPlot" in text


def test_every_kind_draws_from_its_table():
    run = Run(everything())
    assert set(available(run)) == {"busbw", "timeline", "fault-throughput", "slo-load"}
    bus = draw("busbw", [run])
    assert [ln.name for ln in bus.lines] == ["hpn", "dcn-plus"] and bus.log_x
    np.testing.assert_allclose(bus.lines[0].y, [1.0, 200.0, 360.0])
    assert draw("fault-throughput", [run]).markers == [(1.5, "ToR link down")]
    assert {b.group for b in draw("timeline", [run]).bars} == {"compute", "dp", "pp"}
    slo = draw("slo-load", [run])
    assert [ln.name for ln in slo.lines] == ["aegaeon", "serverless"]
    t = Run(traffic_like())
    heat = draw("tier-util", [t])
    assert heat.z.shape == (3, 6) and heat.rows == ["nic_tor", "tor_agg", "agg_core"]
    cdf = draw("fct-cdf", [t])
    assert cdf.lines[0].y[-1] == 1.0 and np.all(np.diff(cdf.lines[0].x) >= 0)


def test_render_run_writes_png_and_offline_html():
    run = Run(traffic_like())
    files = render_run(run)
    assert sorted(f.name for f in files) == [
        "fct-cdf.html",
        "fct-cdf.png",
        "tier-util.html",
        "tier-util.png",
    ]
    for f in files:
        if f.suffix == ".png":
            assert f.read_bytes()[:4] == PNG
        else:
            _offline(f.read_text())


def test_kind_errors():
    run = Run(traffic_like())
    with pytest.raises(InputError, match="unknown plot kind"):
        draw("nope", [run])
    with pytest.raises(InputError, match="needs table 'busbw'"):
        draw("busbw", [run])
    assert set(KINDS) >= {"tier-util", "fct-cdf", "busbw", "timeline", "fault-throughput"}


def test_cli_plot_one_run_several_runs_and_xy(cli, tmp_path: Path):
    a, b = traffic_like(0), traffic_like(1)
    r = cli("plot", str(a), "--json")
    assert r.code == 0, r.err
    assert {Path(f).name for f in r.json()["files"]} >= {"fct-cdf.png", "tier-util.html"}
    r = cli("plot", str(a), str(b), "--kind", "fct-cdf", "--format", "png", "--out", str(tmp_path))
    assert r.code == 0, r.err
    assert (tmp_path / "fct-cdf.png").read_bytes()[:4] == PNG
    r = cli(
        "plot",
        str(a),
        str(b),
        "--x",
        "traffic.seed",
        "--y",
        "makespan_s",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert r.code == 0, r.err
    assert {Path(f).name for f in r.json()["files"]} == {"xy.png", "xy.html"}
    assert_input_error(cli("plot", str(a), "--kind", "busbw"), "--kind", "busbw")
    assert_input_error(cli("plot", str(a), "--x", "traffic.seed"), "--x/--y")
    assert_input_error(cli("plot", str(a), "--format", "gif"), "--format")


def test_plot_flag_on_a_command(cli):
    r = cli("topo", "summary", "--preset", "fat-tree", "--k", "4", "--plot")
    assert r.code == 0, r.err
    folder = Path(r.err.strip().removeprefix("run saved to "))
    assert (folder / "plots" / "counts.png").exists() and (
        folder / "plots" / "counts.html"
    ).exists()


def test_report_is_one_offline_file(tmp_path: Path):
    runs = [everything(), traffic_like(), record_run("x", {"a": 1}, {"y": 2})]
    out = write_html(runs, tmp_path / "report.html", title="demo <report>")
    text = out.read_text()
    _offline(text)
    assert "demo &lt;report&gt;" in text
    assert text.count("Plotly.newPlot") == 6  # 4 + 2 charts, the third run has none
    assert text.count("plotly.js v") == 1  # the library once, not per chart
