"""Trace readers on valid and malformed input; the synthetic market generator."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.pool.traces import calibrate_zipf, detect_format, load_trace, market
from hpn.pool.traces.aegaeon import read_aegaeon
from hpn.pool.traces.azure import read_azure
from hpn.pool.traces.base import parse_float, parse_int
from hpn.pool.traces.servegen import read_servegen
from hpn.pool.traces.synthetic import zipf_shares

FIX = Path(__file__).parent / "fixtures"


def test_aegaeon_reader_valid():
    t = read_aegaeon(FIX / "aegaeon_small.csv")
    assert len(t) == 4
    assert t.arrival.tolist() == [0.054, 1.5, 2.25, 60.0]
    assert t.names == ("synth_model_00", "synth_model_08", "synth_model_06")
    assert t.kinds == ("qwen2.5-7b", "llama-2-13b", "yi-1.5-9b")  # NN mod 10 rule
    assert t.input_len.tolist() == [512, 128, 1024, 100]
    assert t.model.tolist() == [0, 1, 2, 0]


def test_azure_reader_valid_crlf_no_final_newline():
    t = read_azure(FIX / "azure_small.csv", models=2, seed=1)
    assert len(t) == 3
    assert t.arrival[0] == 0.0
    assert t.arrival[1] == pytest.approx(4.314579, abs=1e-6)
    assert t.arrival[2] == pytest.approx(4.3194101, abs=1e-7)  # 7th digit kept
    assert set(t.model.tolist()) <= {0, 1}
    assert t.output_len.tolist() == [44, 109, 3]


def test_servegen_reader_windows_and_dataset():
    t = read_servegen(FIX / "servegen", start=0, duration=1800, seed=3)
    assert len(t) > 0
    assert t.arrival.min() >= 600 and t.arrival.max() < 1800  # only active windows
    in_first = t.arrival < 1200
    assert int(in_first.sum()) <= 30  # ceil(0.05 * 600) arrivals drawn
    assert set(t.input_len[in_first].tolist()) <= {100, 300}  # from the dataset PMF
    assert set(t.output_len[in_first].tolist()) == {20}


def test_detect_format():
    assert detect_format(FIX / "aegaeon_small.csv") == "aegaeon"
    assert detect_format(FIX / "azure_small.csv") == "azure"
    assert detect_format(FIX / "servegen") == "servegen"
    assert len(load_trace(FIX / "aegaeon_small.csv")) == 4


@pytest.mark.parametrize(
    "row, needle",
    [
        ("00:00:01.5,m,10,10", "Request Time"),
        ("00:00:01.500,m,ten,10", "Input Length"),
        ("00:00:01.500,m,10,0", "Output Length"),
        ("00:00:01.500,m,10", "4 columns"),
        ("00:00:01.500,,10,10", "Model Name"),
    ],
)
def test_aegaeon_malformed_names_line_and_column(tmp_path, row, needle):
    p = tmp_path / "t.csv"
    p.write_text(f"Request Time,Model Name,Input Length,Output Length\n00:00:00.000,m,1,1\n{row}\n")
    with pytest.raises(InputError) as e:
        read_aegaeon(p)
    assert e.value.field.endswith(":3")
    assert needle in str(e.value)


def test_bad_header_and_missing_file(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b,c\n")
    with pytest.raises(InputError, match=":1"):
        read_aegaeon(p)
    with pytest.raises(InputError, match="no such file"):
        read_azure(tmp_path / "nope.csv")


def test_azure_malformed_timestamp(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\nyesterday,1,1\n"
    )
    with pytest.raises(InputError, match=r":3.*TIMESTAMP"):
        read_azure(p)


def test_servegen_malformed(tmp_path):
    p = tmp_path / "chunk-1-trace.csv"
    p.write_text("0,0.1,1,Gamma,1,10\n600,0.1,1,Poisson,1,10\n")
    with pytest.raises(InputError, match=r":2.*pattern"):
        read_servegen(p)
    (tmp_path / "chunk-1-trace.csv").write_text("0,0.1,1,Gamma,1,10\n")
    (tmp_path / "chunk-1-dataset.json").write_text('{"0": {"input_tokens": "{1: oops}"}}')
    with pytest.raises(InputError, match="input_tokens"):
        read_servegen(p)


rows = st.lists(
    st.tuples(
        st.integers(0, 10 * 3600 * 1000),
        st.integers(0, 99),
        st.integers(1, 2000),
        st.integers(1, 2000),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(rows)
def test_aegaeon_roundtrip(tmp_path_factory, data):
    data = sorted(data)
    lines = ["Request Time,Model Name,Input Length,Output Length"]
    for ms, m, i, o in data:
        h, rest = divmod(ms, 3600_000)
        mi, rest = divmod(rest, 60_000)
        s, frac = divmod(rest, 1000)
        lines.append(f"{h:02d}:{mi:02d}:{s:02d}.{frac:03d},synth_model_{m:02d},{i},{o}")
    p = tmp_path_factory.mktemp("rt") / "t.csv"
    p.write_text("\r\n".join(lines))
    t = read_aegaeon(p)
    assert np.allclose(t.arrival, [d[0] / 1000 for d in data])
    assert t.input_len.tolist() == [d[2] for d in data]
    assert [t.names[k] for k in t.model] == [f"synth_model_{d[1]:02d}" for d in data]


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2),
    st.sampled_from([0, 1, 2, 3]),
    st.text(alphabet="abc-:.;x ", min_size=1, max_size=8),
)
def test_aegaeon_garbage_cell_is_input_error(tmp_path_factory, line_no, col, junk):
    good = ["00:00:01.000", "m", "5", "5"]
    lines = ["Request Time,Model Name,Input Length,Output Length"] + [",".join(good)] * 3
    cells = list(good)
    cells[col] = junk
    lines[line_no + 1] = ",".join(cells)
    p = tmp_path_factory.mktemp("g") / "t.csv"
    p.write_text("\n".join(lines) + "\n")
    try:
        read_aegaeon(p)
    except InputError as e:
        assert e.field.endswith(f":{line_no + 2}")


def test_market_seeded_nested_and_calibrated():
    a = market(10, 0.2, 600, seed=5)
    b = market(10, 0.2, 600, seed=5)
    c = market(11, 0.2, 600, seed=5)
    assert np.array_equal(a.arrival, b.arrival) and np.array_equal(a.input_len, b.input_len)
    assert not np.array_equal(a.arrival, market(10, 0.2, 600, seed=6).arrival)
    sub = c.select(c.model < 10)
    assert np.array_equal(sub.arrival, a.arrival)  # nested in the number of models
    assert 0.7 * 1200 < len(a) < 1.3 * 1200
    assert a.output_len.min() >= 16 and (a.input_len + a.output_len).max() <= 4096
    s = calibrate_zipf(779)
    shares = zipf_shares(779, s)
    assert shares[-round(0.941 * 779) :].sum() == pytest.approx(0.0135, rel=1e-3)


def test_market_gamma_burstier_than_poisson():
    p = market(1, 5.0, 2000, seed=1)
    g = market(1, 5.0, 2000, seed=1, cv=3.0)
    cv = lambda t: np.std(np.diff(t.arrival)) / np.mean(np.diff(t.arrival))  # noqa: E731
    assert cv(p) == pytest.approx(1.0, abs=0.1)
    assert cv(g) > 2.0


@pytest.mark.parametrize(
    ("parse", "text", "says"),
    [
        (parse_int, "12.5", "t.csv:3: column 'Input Length': expected an integer, got '12.5'"),
        (parse_int, " 7x", "t.csv:3: column 'Input Length': expected an integer, got ' 7x'"),
        (parse_int, "-1", "t.csv:3: column 'Input Length': must be in 0..1,048,576, got -1"),
        (parse_float, "abc", "t.csv:3: column 'Input Length': expected a number, got 'abc'"),
        (parse_float, "inf", "t.csv:3: column 'Input Length': must be a finite number >= 0.0"),
    ],
)
def test_a_bad_cell_names_file_line_column_and_what_was_expected(parse, text, says):
    with pytest.raises(InputError) as e:
        parse(text, "t.csv:3", "Input Length")
    assert str(e.value) == says


def test_a_good_cell_is_read_stripped():
    assert parse_int(" 42 ", "t.csv:3", "c") == 42 and parse_float(" 0.5", "t.csv:3", "c") == 0.5


@pytest.mark.parametrize(
    ("read", "header", "row", "short"),
    [
        (
            read_aegaeon,
            "Request Time,Model Name,Input Length,Output Length",
            "00:00:01.000,m,5,5",
            "00:00:02.000,m,5",
        ),
        (
            read_azure,
            "TIMESTAMP,ContextTokens,GeneratedTokens",
            "2023-11-16 18:15:46,5,5",
            "2023-11-16 18:15:47,5",
        ),
    ],
)
def test_csv_readers_frame_rows_alike(tmp_path, read, header, row, short):
    p = tmp_path / "t.csv"
    p.write_text(f"{header}\n\n{row}\n   \n{row}\n")  # blank lines skipped
    assert len(read(p)) == 2
    p.write_text(f"{header}\n{row}\n\n{short}\n")
    with pytest.raises(InputError) as e:
        read(p)
    n = header.count(",") + 1
    assert str(e.value) == f"{p}:4: expected {n} columns, got {n - 1}"
    p.write_text(f"{header},extra\n{row}\n")
    with pytest.raises(InputError) as e:
        read(p)
    assert str(e.value) == f"{p}:1: expected header {header}"
