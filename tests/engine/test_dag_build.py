"""FlowDAG's batched building blocks give the arrays the one-at-a-time calls give."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine.dag import ID, FlowDAG
from hpn.errors import InputError

FIELDS = ("kind", "src", "dst", "size", "group", "keys", "dep_before", "dep_after", "delay")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6), st.booleans())
def test_groups_are_the_coupled_calls_in_label_order(sizes, solo_first):
    rng = np.random.default_rng(sum(sizes))
    n = sum(sizes)
    src, dst = rng.integers(0, 50, n), rng.integers(0, 50, n)
    keys = rng.integers(0, 2**40, n)
    one, many = FlowDAG(), FlowDAG()
    for d in (one, many):
        if solo_first:  # a group numbered before: labels continue from it
            d.add_flows([1, 2], [3, 4], 1e3, coupled=True)
        d.add_compute([0], [1e-6])
    lo = 0
    for m in sizes:
        ids = one.add_flows(
            src[lo : lo + m], dst[lo : lo + m], 1e6, keys=keys[lo : lo + m], coupled=True
        )
        one.add_deps(0 if not solo_first else 2, ids)
        lo += m
    ids = many.add_flows(src, dst, 1e6, keys=keys, groups=np.repeat(np.arange(len(sizes)), sizes))
    many.add_deps(0 if not solo_first else 2, ids)
    a, b = one.tasks, many.tasks
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert getattr(a, name).dtype == getattr(b, name).dtype


def test_group_labels_must_be_dense():
    with pytest.raises(InputError, match="groups"):
        FlowDAG().add_flows([0, 1], [1, 0], 1.0, groups=[0, 2])


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(st.integers(0, 9), st.lists(st.integers(0, 9), max_size=4)),
    st.one_of(st.integers(0, 9), st.lists(st.integers(0, 9), max_size=4)),
)
def test_dependencies_broadcast_like_numpy(before, after):
    b, a = np.asarray(before, np.int64), np.asarray(after, np.int64)
    try:
        want = [x.ravel() for x in np.broadcast_arrays(b, a)]
    except ValueError:
        with pytest.raises(ValueError):
            FlowDAG().add_deps(before, after)
        return
    d = FlowDAG()
    d.add_deps(before, after)
    for got, ref in zip(d._deps[0], want, strict=True):
        np.testing.assert_array_equal(got, ref)
        assert got.dtype == ID  # stored task ids are int32


def test_a_dependency_id_beyond_int32_is_an_unknown_task_not_a_wrapped_one():
    d = FlowDAG()
    d.add_compute([0, 0], 1.0)
    d.add_deps(0, 2**32 + 1)  # would wrap to task 1 as int32
    assert d.tasks.dep_after.tolist() == [-1]
    with pytest.raises(InputError, match="unknown task"):
        d.validate(num_nodes=1)
