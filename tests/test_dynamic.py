"""Dynamic shapes against NumPy: ``dynamic_shape=True`` reuses one trace per rank/dtype (a
function that reads ``x.shape`` is traced per shape), gears pad geared dimensions with zeros up
to the gear (one compile per gear, ``get_context().get_max_dim`` gives it), and the article's
``pad_sequence``."""

from __future__ import annotations

import inspect

import numpy as np
import pyasc
import pytest
from conftest import assert_matches, assert_ulp


def _ints(rng, shape, dtype=np.float32):
    return rng.integers(-8, 9, shape).astype(dtype)


def _softmax64(v):
    v = np.asarray(v, np.float64)
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _body(x, b):
    y = x * 2 + b
    return y, y.max(axis=-1), y.sum(axis=-1), pyasc.softmax(y)


def test_dynamic_elementwise_and_reductions_over_30_leading_extents():
    dyn = pyasc.operator(dynamic_shape=True)(_body)
    rng = np.random.default_rng(0)
    b = _ints(rng, (16,))
    extents = list(rng.permutation(np.arange(1, 31)))
    for n in extents:
        x = _ints(rng, (int(n), 16))
        y, mx, sm, p = dyn(x, b)
        ref = x * np.float32(2) + b
        assert_matches(y, ref)
        assert_matches(mx, ref.max(axis=-1))
        assert_matches(sm, ref.sum(axis=-1))  # small integers: exact in float32
        assert p.dtype == np.float32 and p.shape == ref.shape
        assert_ulp(p, _softmax64(ref), 8)
        # Bitwise the same as a plan compiled for exactly this shape.
        static = pyasc.operator(_body)(x, b)[3]
        np.testing.assert_array_equal(p, static)
    info = dyn.cache_info()
    assert info.compiles <= 2, info  # a leading extent of 1 is a different broadcast pattern
    assert info.hits + info.misses == len(extents)


def test_dynamic_softmax_of_affine_matches_numpy_with_views_and_trailing_extents():
    @pyasc.operator(dynamic_shape=True)
    def f(x, b):
        return pyasc.softmax(x * 2 + b)

    rng = np.random.default_rng(1)
    for n, m in [(3, 5), (7, 5), (2, 9), (11, 33), (4, 1), (6, 128)]:
        x = rng.standard_normal((m, n)).astype(np.float32).T  # a transposed view
        b = rng.standard_normal(m).astype(np.float32)
        got = f(x, b)
        assert got.dtype == np.float32 and got.shape == (n, m)
        y32 = x * np.float32(2) + b  # the float32 input of softmax, exactly as NumPy rounds it
        # float32 rounding of y - max(y) is amplified by exp: the project's composite tolerance
        tol = 64 * np.finfo(np.float32).eps
        np.testing.assert_allclose(got, _softmax64(y32), rtol=tol, atol=tol)
        np.testing.assert_array_equal(got, pyasc.operator(lambda t, c: pyasc.softmax(t * 2 + c))(x, b))
    assert f.cache_info().compiles <= 3, f.cache_info()


def test_dynamic_integer_elementwise_exact():
    @pyasc.operator(dynamic_shape=True)
    def f(x, y):
        return (x * 3 - y) // 2, x % 5, np.maximum(x, y)

    rng = np.random.default_rng(2)
    for n in range(2, 32):
        x = rng.integers(-100, 100, (n, 3)).astype(np.int32)
        y = rng.integers(-100, 100, (n, 3)).astype(np.int64)
        for g, w in zip(f(x, y), ((x * 3 - y) // 2, x % 5, np.maximum(x, y))):
            assert_matches(g, w)
    assert f.cache_info().compiles == 1, f.cache_info()


def test_reading_shape_retraces_per_shape():
    @pyasc.operator(dynamic_shape=True)
    def f(x):
        return x * x.shape[0] + x.shape[-1]

    shapes = [(2, 3), (3, 3), (4, 5), (3, 3), (2, 3), (9, 1)]
    for s in shapes:
        x = np.arange(np.prod(s), dtype=np.float64).reshape(s)
        assert_matches(f(x), x * s[0] + s[-1])
    assert f.cache_info().compiles == len(set(shapes)), f.cache_info()


def test_new_rank_or_dtype_compiles_again():
    @pyasc.operator(dynamic_shape=True)
    def f(x):
        return x + 1

    for s in [(3,), (5,), (8,)]:
        assert_matches(f(np.ones(s, np.float32)), np.ones(s, np.float32) + 1)
    assert f.cache_info().compiles == 1
    for s in [(2, 3), (4, 3), (5, 7)]:
        assert_matches(f(np.ones(s, np.float32)), np.ones(s, np.float32) + 1)
    assert f.cache_info().compiles == 2
    for s in [(2, 3, 4), (5, 1, 2)]:
        assert_matches(f(np.ones(s, np.float32)), np.ones(s, np.float32) + 1)
    after_rank3 = f.cache_info().compiles
    assert after_rank3 in (3, 4), f.cache_info()  # (5, 1, 2) may be another broadcast pattern
    assert_matches(f(np.ones((3,), np.int64)), np.ones((3,), np.int64) + 1)
    assert f.cache_info().compiles == after_rank3 + 1


def test_static_operator_compiles_per_shape():
    @pyasc.operator
    def f(x):
        return x + 1

    for n in (3, 4, 5):
        f(np.ones(n))
    assert f.cache_info().compiles == 3


# ---------------------------------------------------------------------------------------------
# gears


def test_gears_pad_dim0_to_the_gear_and_compile_once_per_gear():
    seen = []

    @pyasc.operator(dynamic_shape=True, gears={0: [4, 8, 16]})
    def f(x):
        seen.append(pyasc.get_context().get_max_dim(0))
        return x * 2 + 1, np.exp(x)

    rng = np.random.default_rng(3)
    for n in [1, 3, 4, 5, 8, 9, 16, 2, 7, 12]:
        x = _ints(rng, (n, 3))
        gear = 4 if n <= 4 else 8 if n <= 8 else 16
        xp = np.pad(x, ((0, gear - n), (0, 0)))
        y, e = f(x)
        assert_matches(y, xp * np.float32(2) + np.float32(1))  # padded rows are f(0)
        assert e.shape == (gear, 3) and e.dtype == np.float32
        assert_ulp(e, np.exp(xp.astype(np.float64)), 2)
    assert f.cache_info().compiles == 3, f.cache_info()
    assert sorted(set(seen)) == [4, 8, 16]


def test_gears_extent_above_largest_gear_is_shape_error():
    @pyasc.operator(dynamic_shape=True, gears={0: [4, 8, 16]})
    def f(x):
        return x + 1

    with pytest.raises(pyasc.ShapeError):
        f(np.ones((17, 2), np.float32))
    assert_matches(f(np.ones((16, 2), np.float32)), np.full((16, 2), 2, np.float32))


def test_gears_pow2():
    maxes = []

    @pyasc.operator(dynamic_shape=True, gears="pow2")
    def f(x):
        maxes.append(pyasc.get_context().get_max_dim(0))
        return x - 3

    gears = set()
    for n in range(1, 21):
        x = np.arange(n * 2, dtype=np.int32).reshape(n, 2)
        gear = 1 << (n - 1).bit_length()
        gears.add(gear)
        assert_matches(f(x), np.pad(x, ((0, gear - n), (0, 0))) - 3)
    assert f.cache_info().compiles == len(gears) == 6, f.cache_info()
    assert sorted(set(maxes)) == sorted(gears)


def test_gears_on_another_dim():
    @pyasc.operator(dynamic_shape=True, gears={1: [2, 6]})
    def f(x):
        return x + pyasc.get_context().get_max_dim(1)

    for m in (1, 2, 3, 6):
        x = np.ones((3, m), np.int64)
        gear = 2 if m <= 2 else 6
        assert_matches(f(x), np.pad(x, ((0, 0), (0, gear - m))) + gear)
    assert f.cache_info().compiles == 2, f.cache_info()


def test_gears_with_a_broadcast_bias():
    @pyasc.operator(dynamic_shape=True, gears={0: [4, 8]})
    def f(x, b):
        return x * 2 + b

    x = np.ones((5, 3), np.float32)
    b = np.arange(3, dtype=np.float32)
    assert_matches(f(x, b), np.pad(x, ((0, 3), (0, 0))) * 2 + b)


def test_gears_need_dynamic_shape():
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.operator(gears={0: [4, 8]})
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.operator(dynamic_shape=False, gears="pow2")
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.operator(dynamic_shape=True, gears="pow3")


# ---------------------------------------------------------------------------------------------
# the article's pad_sequence


def _pad_sequence(x):
    max_len = pyasc.get_context().get_max_dim(0)
    return np.pad(x, (0, max_len - x.shape[0]))


def test_pad_sequence_without_gears_returns_x():
    op = pyasc.operator(dynamic_shape=True)(_pad_sequence)
    rng = np.random.default_rng(4)
    for n in (1, 5, 8, 13):
        x = _ints(rng, (n,))
        assert_matches(op(x), x)
    x2 = _ints(rng, (6, 3), np.float64)
    assert_matches(op(x2), x2)


def test_pad_sequence_pow2_pads_to_the_gear():
    op = pyasc.operator(dynamic_shape=True, gears="pow2")(_pad_sequence)
    rng = np.random.default_rng(5)
    gears = set()
    for n in (1, 3, 4, 5, 9, 16, 17):
        x = _ints(rng, (n,))
        gear = 1 << (n - 1).bit_length()
        gears.add(gear)
        assert_matches(op(x), np.pad(x, (0, gear - n)))
    assert op.cache_info().compiles == len(gears) == 5, op.cache_info()


def test_pad_sequence_explicit_gears():
    op = pyasc.operator(dynamic_shape=True, gears={0: [8, 32]})(_pad_sequence)
    for n in (1, 8, 9, 32):
        x = np.arange(n, dtype=np.int32) + 1
        gear = 8 if n <= 8 else 32
        assert_matches(op(x), np.pad(x, (0, gear - n)))
    with pytest.raises(pyasc.ShapeError):
        op(np.ones(33, np.int32))


# ---------------------------------------------------------------------------------------------
# data movement under dynamic shapes


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_dynamic_pad_over_extents(mode):
    @pyasc.operator(dynamic_shape=True)
    def f(x):
        return np.pad(x, ((2, 5), (1, 3)), mode=mode) * 2

    for n in (1, 2, 3, 5, 8):
        for m in (1, 4):
            x = np.arange(n * m, dtype=np.float32).reshape(n, m)
            assert_matches(f(x), np.pad(x, ((2, 5), (1, 3)), mode=mode) * np.float32(2))


def test_dynamic_concatenate_stack_take_over_extents():
    @pyasc.operator(dynamic_shape=True)
    def f(x, y, i):
        return np.concatenate([x, y], axis=0), np.stack([x, y + 1], -1), np.take(x, i, axis=0), x[[0, -1]]

    for n in (1, 2, 3, 6, 4):
        x = np.arange(n * 3, dtype=np.int32).reshape(n, 3)
        y = -x.astype(np.int64)
        i = np.array([n - 1, -n, 0], np.int64)
        want = (np.concatenate([x, y]), np.stack([x, y + 1], -1), np.take(x, i, axis=0), x[[0, -1]])
        for g, w in zip(f(x, y, i), want):
            assert_matches(g, w)


def test_dynamic_take_out_of_range_on_a_reused_trace_names_the_line():
    def f(x, i):
        return np.take(x, i, axis=0) + 1  # DYN-TAKE

    op = pyasc.operator(dynamic_shape=True)(f)
    assert_matches(op(np.ones((5, 2)), np.array([4])), np.full((1, 2), 2.0))
    for bad in (4, -4):
        with pytest.raises(pyasc.ShapeError) as ei:
            op(np.ones((3, 2)), np.array([bad]))
        src, start = inspect.getsourcelines(f)
        assert ei.value.lineno == start + next(k for k, line in enumerate(src) if "DYN-TAKE" in line)


def test_get_max_dim_outside_an_operator_is_an_error():
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.get_context().get_max_dim(0)
