"""Nested arguments and results (pytrees): containers round-trip, their structure is part of
the signature, and a known structure hits the cache."""

import collections
import dataclasses
from typing import NamedTuple

import numpy as np
import pyasc
import pytest


class Pair(NamedTuple):
    a: np.ndarray
    b: float


@dataclasses.dataclass
class Params:
    w: np.ndarray
    scale: float
    bias: object = None


Point = collections.namedtuple("Point", "x y")


def tree_equal(got, expected):
    if isinstance(expected, (dict, tuple, list)) or dataclasses.is_dataclass(expected) or expected is None:
        assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, dict):
        assert list(got) == sorted(expected)
        for k in expected:
            tree_equal(got[k], expected[k])
    elif isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            tree_equal(g, e)
    elif dataclasses.is_dataclass(expected):
        for f in dataclasses.fields(expected):
            tree_equal(getattr(got, f.name), getattr(expected, f.name))
    elif expected is None:
        assert got is None
    else:
        got, expected = np.asarray(got), np.asarray(expected)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def double(tree):
    """Double every array leaf, keeping the structure (the reference on NumPy arrays)."""
    if isinstance(tree, dict):
        return {k: double(v) for k, v in tree.items()}
    if isinstance(tree, Pair):
        return Pair(double(tree.a), double(tree.b))
    if isinstance(tree, Point):
        return Point(double(tree.x), double(tree.y))
    if isinstance(tree, (tuple, list)):
        return type(tree)(double(v) for v in tree)
    if isinstance(tree, Params):
        return Params(double(tree.w), double(tree.scale), double(tree.bias))
    if tree is None:
        return None
    return tree * 2


X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.linspace(-1, 1, 4)

TREES = [
    (X, Y),
    [X, Y, X],
    {"b": X, "a": (Y, [X])},
    Pair(X, 2.0),
    Point(Y, X),
    Params(X, 3.0),
    Params(X, 0.5, bias=(Y, None)),
    {"n": None, "deep": [[(X,)]], "s": 7},
    (),
    [],
    {},
]


@pytest.mark.parametrize("tree", TREES, ids=lambda t: type(t).__name__)
def test_round_trip_of_every_container_kind(tree):
    op = pyasc.operator(double)
    got = op(tree)
    expected = double(tree)
    if isinstance(expected, dict):
        expected = dict(sorted(expected.items()))
    tree_equal(got, expected)


def test_results_in_a_structure_from_plain_arguments():
    @pyasc.operator
    def f(x, y):
        return {"sum": x.sum(), "pair": Pair(x * y[:1].sum(), 1.5), "list": [x + 1, None]}

    got = f(X, Y)
    assert isinstance(got, dict) and isinstance(got["pair"], Pair) and isinstance(got["list"], list)
    assert got["list"][1] is None
    np.testing.assert_allclose(got["sum"], X.sum())
    np.testing.assert_allclose(got["pair"].a, X * Y[:1].sum())
    np.testing.assert_allclose(got["list"][0], X + 1)
    # A plain tuple of arrays is still a tuple.
    t = pyasc.operator(lambda x: (x, x + 1))(X)
    assert type(t) is tuple


def test_structure_is_part_of_the_signature():
    op = pyasc.operator(lambda t: t[0] + t[1] if isinstance(t, (tuple, list)) else t["a"] + t["b"])
    op((X, X))
    assert op.cache_info().compiles == 1
    op((X, X))
    assert op.cache_info().hits == 1 and op.cache_info().compiles == 1
    op([X, X])
    assert op.cache_info().compiles == 2
    op({"a": X, "b": X})
    assert op.cache_info().compiles == 3
    op({"a": X, "c": X} | {"b": X})  # other keys: another structure
    assert op.cache_info().compiles == 4
    op({"b": X, "a": X})  # the same keys in another order: the same structure (sorted, as JAX)
    assert op.cache_info().compiles == 4 and op.cache_info().hits == 2
    op((X, X, X))  # another length
    assert op.cache_info().compiles == 5
    op((X, np.ones((2, 3), np.float64)))  # the same structure, another dtype
    assert op.cache_info().compiles == 6
    op((X, X))
    assert op.cache_info().hits == 3
    op.cache_clear()
    op((X, X))
    assert op.cache_info().compiles == 7


def test_dataclass_and_namedtuple_types_are_part_of_the_structure():
    op = pyasc.operator(lambda p: p[0] * 2 if isinstance(p, tuple) else p.w * 2)
    op(Pair(X, 1.0))
    op(Point(X, 1.0))
    op((X, 1.0))
    op(Params(X, 1.0))
    assert op.cache_info().compiles == 4


def test_scalar_leaves_are_weak_and_never_recompile():
    op = pyasc.operator(lambda p: p.w * p.scale)
    for s in (1.0, 2.5, -3.0):
        np.testing.assert_allclose(op(Params(X, s)), X * s)
    assert op.cache_info().compiles == 1


def test_arguments_in_containers_are_not_modified():
    t = {"a": X.copy(), "b": [Y.copy()]}

    def f(t):
        t["a"] += 1
        return t["a"]

    with pytest.raises(pyasc.TraceError, match="argument"):
        pyasc.operator(f)(t)
    np.testing.assert_array_equal(t["a"], X)


def test_mixed_plain_and_nested_arguments_and_keywords():
    @pyasc.operator
    def f(x, p, scale=2.0):
        return x + p.a * p.b * scale

    np.testing.assert_allclose(f(X, Pair(X, 3.0)), X + X * 3.0 * 2.0)
    np.testing.assert_allclose(f(X, p=Pair(X, 3.0), scale=1.0), X + X * 3.0)


def test_device_arrays_in_containers():
    d = pyasc.to_device(X)
    out = pyasc.operator(lambda t: {"y": t[0] * 2 + t[1]})((d, X))
    assert isinstance(out["y"], pyasc.DeviceArray)
    np.testing.assert_allclose(out["y"].numpy(), X * 3)


def test_gears_with_containers():
    @pyasc.operator(dynamic_shape=True, gears="pow2")
    def f(t):
        return {"s": t[0].sum(), "y": t[1] * 2}

    a = np.arange(5, dtype=np.float32)
    got = f((a, a))
    np.testing.assert_allclose(got["s"], a.sum())
    np.testing.assert_allclose(np.asarray(got["y"])[:5], a * 2)
    f((np.arange(7, dtype=np.float32), np.arange(7, dtype=np.float32)))
    assert f.cache_info().compiles == 1


def test_get_compiled_op_with_containers():
    op = pyasc.operator(lambda t: t["a"] + t["b"])
    op({"a": X, "b": X})
    assert op.get_compiled_op({"a": X, "b": X}).kernels()
    assert op.cache_info().compiles == 1


def test_get_compiled_op_before_the_first_call_of_an_operator_with_nested_results():
    # The first trace finds the nested result: the plan comes from the companion operator.
    op = pyasc.operator(lambda x: (x * 2, (x + 1, x - 1)))
    plan = op.get_compiled_op(X)
    assert plan.kernels() and "mul" in plan.graph_ir()
    a, (b, c) = op(X)
    np.testing.assert_array_equal(a, X * 2)
    np.testing.assert_array_equal(b, X + 1)
    np.testing.assert_array_equal(c, X - 1)
    assert op.cache_info().compiles == 1


def test_class_form_and_complex_leaves():
    z = (X + 1j * X).astype(np.complex64)
    got = pyasc.operator(lambda t: [t[0] * 2, t[1]])((z, X))
    assert isinstance(got, list)
    np.testing.assert_allclose(got[0], z * 2)


def test_class_form_takes_and_returns_structures():
    class Net(pyasc.AscendOperatorBase):
        def compute(self, inputs):
            (params, x) = inputs
            return {"y": x @ params["w"] + params["b"], "aux": (params["b"] * 0,)}

    w, b = np.ones((3, 2), np.float32), np.arange(2, dtype=np.float32)
    got = Net()({"w": w, "b": b}, X)
    np.testing.assert_allclose(got["y"], X @ w + b)
    assert isinstance(got["aux"], tuple)


def _trees(leaves):
    from hypothesis import strategies as st

    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.lists(kids, max_size=3),
            st.lists(kids, max_size=3).map(tuple),
            st.dictionaries(st.sampled_from("abcd"), kids, max_size=3),
            st.builds(Pair, kids, kids),
            st.builds(Params, kids, kids, kids),
            st.just(None),
        ),
        max_leaves=8,
    )


def test_random_structures_round_trip_and_hit_the_cache():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    leaves = st.sampled_from([X, Y, np.float32(2), 3, 1.5, np.arange(3, dtype=np.int64)])

    @settings(max_examples=40, deadline=None)
    @given(tree=_trees(leaves))
    def run(tree):
        tree = [tree]  # a bare None argument is an error (None is an empty node inside containers)
        op = pyasc.operator(double)
        got = op(tree)
        tree_equal(got, _sorted(double(tree)))
        before = op.cache_info()
        tree_equal(op(tree), _sorted(double(tree)))
        after = op.cache_info()
        assert after.compiles == before.compiles and after.hits >= before.hits + (before.compiles > 0)

    run()


def _sorted(tree):
    if isinstance(tree, dict):
        return {k: _sorted(tree[k]) for k in sorted(tree)}
    if isinstance(tree, Pair):
        return Pair(_sorted(tree.a), _sorted(tree.b))
    if isinstance(tree, (list, tuple)):
        return type(tree)(_sorted(t) for t in tree)
    if isinstance(tree, Params):
        return Params(_sorted(tree.w), _sorted(tree.scale), _sorted(tree.bias))
    return tree
