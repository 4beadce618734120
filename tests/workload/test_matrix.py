"""Traffic matrices: htsim connection-matrix and CSV readers/writers, round trips, bad lines."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine import simulate
from hpn.errors import InputError
from hpn.topology import build
from hpn.workload import endpoints, make_pattern
from hpn.workload.matrix import Matrix, dag_matrix, matrix_dag, read_matrix, write_matrix

CM = """# a comment
Nodes 16
Connections 3

0->5 id 1 start 0 size 2000000
5->0 id 2 start 12.5 size 1000 prio 3
15->7 start 0 size 0
"""


def test_reads_htsim_connection_matrix(tmp_path):
    p = tmp_path / "m.cm"
    p.write_text(CM)
    m = read_matrix(p)
    assert m.nodes == 16 and len(m) == 3
    assert m.src.tolist() == [0, 5, 15] and m.dst.tolist() == [5, 0, 7]
    assert m.size.tolist() == [2e6, 1000, 0]
    assert m.start.tolist() == [0, 12.5e-6, 0]


def test_runs_exactly_the_files_flows(tmp_path):
    f = build("fat-tree", k=4, speed=100e9)
    p = tmp_path / "m.cm"
    p.write_text(CM)
    dag = matrix_dag(read_matrix(p), f)
    ep = endpoints(f)
    t = dag.tasks
    assert t.src.tolist() == ep[[0, 5, 15]].tolist() and t.dst.tolist() == ep[[5, 0, 7]].tolist()
    res = simulate(f, dag, "ecmp", seed=1)
    assert len(res.fct) == 3
    # flow 1 alone on its path starts at 12.5 us: its FCT is size / rate + path latency
    assert res.fct[1] == pytest.approx(1000 * 8 / 100e9 + res.path_latency[1], rel=1e-9)


def test_reads_csv_with_and_without_header(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("src,dst,bytes,start\n0,1,100,0.5\n2,3,200\n")
    m = read_matrix(p)
    assert m.src.tolist() == [0, 2] and m.size.tolist() == [100, 200]
    assert m.start.tolist() == [0.5, 0.0] and m.nodes == 4
    p.write_text("0,1,100\n")
    assert len(read_matrix(p)) == 1


@pytest.mark.parametrize(
    ("name", "text", "line", "what"),
    [
        ("a.cm", "Nodes 4\nConnections 1\n0->9 start 0 size 1\n", 3, "not a host"),
        ("a.cm", "Nodes 4\nConnections 1\n0->1 start 0 size -5\n", 3, "size must be >= 0"),
        ("a.cm", "Nodes 4\nConnections 1\n0->1 start 0 size 1 color 2\n", 3, "unknown token"),
        ("a.cm", "Nodes 4\nConnections 1\n0->1 size 1\n", 3, "missing 'start"),
        ("a.cm", "Nodes 4\nConnections 2\n0->1 start 0 size 1\n", 2, "Connections 2"),
        ("a.cm", "Nodes 4\nConnections 1\n2->2 start 0 size 1\n", 3, "to itself"),
        ("a.cm", "Nodes 4\nConnections 1\nx->1 start 0 size 1\n", 3, "source must be an integer"),
        ("a.cm", "Nodes 4\nConnections 1\n0->1 start 0 size 1 id 0\n", 3, "id must be >= 1"),
        ("a.cm", "Nodes 4\nTriggers 1\n", 2, "not supported"),
        ("a.cm", "Connections 1\n0->1 start 0 size 1\n", 2, "before the 'Nodes N'"),
        ("a.cm", "hello\n", 1, "expected a header"),
        ("a.csv", "src,dst,bytes\n0,1\n", 2, "expected src,dst,bytes"),
        ("a.csv", "0,1,1.5\n", 1, "whole"),
        ("a.csv", "0,1,10,-1\n", 1, "start must be a finite number"),
    ],
)
def test_a_bad_line_names_file_line_and_problem(tmp_path, name, text, line, what):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError) as e:
        read_matrix(p)
    assert e.value.field == f"{p}:{line}"
    assert what in e.value.message


def test_unreadable_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read|no such file"):
        read_matrix(tmp_path / "missing.cm")


@pytest.mark.parametrize("suffix", [".cm", ".csv"])
def test_written_pattern_read_back_runs_identically(tmp_path, suffix):
    f = build("fat-tree", k=8, speed=100e9)
    dag = make_pattern("permutation", f, 2e6, seed=3)
    p = tmp_path / f"perm{suffix}"
    write_matrix(dag_matrix(dag, f), p)
    again = matrix_dag(read_matrix(p), f)
    a = simulate(f, dag, seed=1)
    b = simulate(f, again, seed=1)
    assert np.array_equal(a.paths.links, b.paths.links)
    assert np.array_equal(a.fct, b.fct)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 30), st.integers(0, 30), st.integers(0, 2**31), st.integers(0, 10**6)
        ),
        max_size=20,
    ),
    st.sampled_from(["htsim", "csv"]),
)
def test_any_matrix_round_trips(tmp_path_factory, rows, fmt):
    rows = [r for r in rows if r[0] != r[1]]
    src, dst, size, start = (
        np.array(c, dtype)
        for c, dtype in zip(
            zip(*rows, strict=True) if rows else ([], [], [], []),
            (np.int64, np.int64, np.float64, np.float64),
            strict=True,
        )
    )
    m = Matrix(31, src, dst, size, start / 1e6)
    p = tmp_path_factory.mktemp("m") / f"x.{fmt}"
    write_matrix(m, p, fmt)
    back = read_matrix(p, fmt)
    assert np.array_equal(back.src, m.src) and np.array_equal(back.dst, m.dst)
    assert np.array_equal(back.size, m.size)
    np.testing.assert_allclose(back.start, m.start, rtol=1e-12, atol=0)
    if fmt == "htsim":
        assert back.nodes == 31


def test_writing_refuses_what_a_matrix_cannot_say(tmp_path):
    f = build("fat-tree", k=4)
    m = Matrix(16, np.array([0]), np.array([1]), np.array([1.5]), np.array([0.0]))
    with pytest.raises(InputError, match="whole bytes"):
        write_matrix(m, tmp_path / "x.cm")
    assert not (tmp_path / "x.cm").exists()
    from hpn.engine import FlowDAG

    dag = FlowDAG()
    a = dag.add_flows([0], [1], 10)
    b = dag.add_flows([1], [2], 10)
    dag.add_deps(a, b)
    with pytest.raises(InputError, match="independent flows"):
        dag_matrix(dag, f)
