"""What a figure draws: the paper's bar beside the model's for the same category."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hpn.reproduce import load
from hpn.reproduce.figures import _title, bar_data, draw
from hpn.reproduce.measure import Measured

CLAIMS = {c.id: c for c in load()[0]}


def test_an_up_to_claim_pairs_the_paper_with_the_models_headline():
    c = CLAIMS["hpn.s6.1.path-selection"]  # paper: "up to" 34.7; model: one bar per job
    m = Measured(26.8, {"model": [["job a", 26.8], ["job b", 20.0]]})
    cats, paper, model = bar_data(c, m)
    assert cats == ["up to", "job a", "job b"]
    assert paper == {"up to": 34.7}
    assert model == {"up to": 26.8, "job a": 26.8, "job b": 20.0}


def test_a_model_without_a_series_draws_its_headline_beside_the_paper():
    c = replace(CLAIMS["hpn.tab3.dp"], points={})
    cats, paper, model = bar_data(c, Measured(5.4, {}))
    assert (cats, paper, model) == (["GB"], {"GB": 5.5}, {"GB": 5.4})


def test_the_crash_rate_is_drawn_beside_the_models_single_tor_rate():
    c = CLAIMS["hpn.s2.3.crashes"]
    m = Measured(1.77, {"model": [["single-ToR", 1.77], ["dual-ToR", 5e-5]]})
    cats, paper, model = bar_data(c, m)
    assert cats == ["single-ToR", "dual-ToR"] and paper == {"single-ToR": 1.5}


def test_a_failed_measure_draws_the_paper_only():
    cats, paper, model = bar_data(CLAIMS["hpn.fig16.gpt3"], None)
    assert model == {} and paper == {"DCN+": 25.6, "HPN": 27.2}


def test_every_normalized_figure_names_a_category_of_the_paper():
    for c in CLAIMS.values():
        base = c.figure.get("normalize")
        if base is not None:
            assert base in {str(x) for x, _ in c.points["paper"]}, c.id


def test_a_long_title_is_cut_with_an_ellipsis_not_silently():
    t = _title("word " * 200)
    assert t.count("\n") == 2 and t.endswith("…")


@pytest.mark.parametrize("cid", ["hpn.fig16.llama7b", "hpn.fig9.heat-sinks", "hpn.fig18.flap-dual"])
def test_bar_figures_with_options_draw(cid, tmp_path):
    c = CLAIMS[cid]
    series = {"model": [[str(x), 0.0 if "flap" in cid else y] for x, y in c.points["paper"]]}
    out = draw(c, Measured(c.value, series), "pass", tmp_path / "f.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
