"""Hypothesis over config files and traces: any input is either accepted or refused as bad
input (an InputError: one line, exit 2), never a crash."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpn.errors import InputError
from tests.cli.harness import invoke

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
scalars = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.booleans(),
)
KEYS = ["preset", "segments", "pods", "chip", "k", "speed", "dual_plane", "gpus_per_host", "x"]
fabric_tables = st.dictionaries(
    st.sampled_from(KEYS), st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=5
)


@SETTINGS
@given(fabric=fabric_tables)
def test_any_fabric_table_is_accepted_or_refused_cleanly(fabric):
    from hpn.app import COMMANDS

    try:
        COMMANDS.get("topo summary").parse({"fabric": fabric})
    except InputError as e:
        assert str(e) and "\n" not in str(e)


toml_text = st.text(alphabet=st.sampled_from(list('[]=."\n abcfikprst0123456789-_')), max_size=80)


@SETTINGS
@given(text=toml_text)
def test_any_config_file_gives_exit_0_or_one_line_and_2(text):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "c.toml"
        f.write_text(text)
        r = invoke(["topo", "summary", "--config", str(f), "--json"], Path(d), {}, limit_s=60)
    assert "Traceback" not in r.err, r.err
    assert r.code in (0, 2), r.err
    if r.code == 2:
        assert len([ln for ln in r.err.splitlines() if ln.strip()]) == 1, r.err


cell = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.text(alphabet=st.sampled_from(list("0123456789:.-,x ")), max_size=14),
)
rows = st.lists(st.lists(cell, min_size=1, max_size=5), max_size=6)
HEADERS = [
    "Request Time,Model Name,Input Length,Output Length",
    "TIMESTAMP,ContextTokens,GeneratedTokens",
    "",
    "garbage",
]


@SETTINGS
@given(header=st.sampled_from(HEADERS), body=rows)
def test_any_trace_file_loads_or_is_refused_with_input_error(header, body):
    from hpn.pool.traces import load_trace

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "t.csv"
        f.write_text("\n".join([header, *(",".join(r) for r in body)]) + "\n")
        try:
            t = load_trace(f)
        except InputError as e:
            assert "\n" not in str(e)
            return
    assert len(t) >= 1
    assert (t.input_len >= 0).all() and (t.output_len >= 1).all()
    assert (t.input_len <= 2**20).all() and (t.output_len <= 2**20).all()
