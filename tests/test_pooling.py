"""pyasc.max_pool2d, avg_pool2d and pixel_shuffle against NumPy references (torch semantics)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pyasc
import pytest
from conftest import line_of


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def pool_reference(x, kind, kernel_size, stride=None, padding=0):
    """Windows gathered with NumPy's sliding_window_view in float64."""
    k = _pair(kernel_size)
    s = k if stride is None else _pair(stride)
    p = _pair(padding)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(np.asarray(x, np.float64), [(0, 0)] * (x.ndim - 2) + [(p[0], p[0]), (p[1], p[1])],
                constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(-2, -1))[..., ::s[0], ::s[1], :, :]
    return win.max(axis=(-2, -1)) if kind == "max" else win.sum(axis=(-2, -1)) / (k[0] * k[1])


CASES = [
    ((2, 3, 8, 8), 2, None, 0),
    ((1, 2, 9, 7), 3, 2, 1),
    ((2, 4, 10, 11), (3, 2), (1, 2), (1, 1)),
    ((3, 7, 7), 3, 1, 1),
    ((1, 1, 5, 5), 5, None, 2),
    ((2, 3, 6, 9), (2, 3), None, 0),
]


@pytest.mark.parametrize("shape,k,s,p", CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_matches_numpy(shape, k, s, p, kind):
    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    x = rng.standard_normal(shape)
    fn = pyasc.max_pool2d if kind == "max" else pyasc.avg_pool2d
    want = pool_reference(x, kind, k, s, p)
    got = fn(x, k, s, p)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    got32 = fn(x.astype(np.float32), k, s, p)
    np.testing.assert_allclose(got32, pool_reference(x.astype(np.float32), kind, k, s, p), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_sixteen_bit_pooling_rounds_once(dtype):
    x = np.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype(dtype)
    for kind, fn in (("max", pyasc.max_pool2d), ("avg", pyasc.avg_pool2d)):
        got = fn(x, 3, 2, 1)
        assert got.dtype == np.dtype(dtype)
        want = pool_reference(x.astype(np.float32), kind, 3, 2, 1).astype(np.float32).astype(dtype)
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_pooling_inside_an_operator_on_a_view():
    base = np.random.default_rng(6).standard_normal((2, 4, 20, 20)).astype(np.float32)
    x = base[:, :, ::2, 1::2]

    @pyasc.operator
    def f(t):
        return pyasc.avg_pool2d(pyasc.max_pool2d(t, 2), 3, 1, 1) + 1.0

    want = pool_reference(pool_reference(x, "max", 2), "avg", 3, 1, 1) + 1.0
    np.testing.assert_allclose(f(x), want, rtol=1e-6, atol=1e-6)


def test_pooling_errors():
    x = np.ones((1, 2, 4, 4))

    def half():
        return pyasc.max_pool2d(x, 2, padding=2)  # half

    def rank():
        return pyasc.avg_pool2d(np.ones((4, 4)), 2)  # rank

    def larger():
        return pyasc.max_pool2d(x, (7, 2), padding=1)  # larger

    def ints():
        return pyasc.avg_pool2d(x.astype(np.int32), 2)  # ints

    for cls, fn, text, words in ((pyasc.InvalidArgumentError, half, "# half", "half"),
                                 (pyasc.ShapeError, rank, "# rank", "rank"),
                                 (pyasc.ShapeError, larger, "# larger", "larger"),
                                 (pyasc.DTypeError, ints, "# ints", "float")):
        with pytest.raises(cls, match=words) as e:
            fn()
        assert e.value.lineno == line_of(fn, text)


def shuffle_reference(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    y = y.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


@pytest.mark.parametrize("shape,r", [((1, 8, 3, 5), 2), ((2, 9, 4, 4), 3), ((18, 2, 3), 3), ((2, 2, 4, 3, 3), 2)])
def test_pixel_shuffle_matches_numpy(shape, r):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(pyasc.pixel_shuffle(x, r), shuffle_reference(x, r))
    op = pyasc.operator(lambda t: pyasc.pixel_shuffle(t * 2.0, r))
    np.testing.assert_array_equal(op(x), shuffle_reference(x * 2.0, r))


def test_pixel_shuffle_errors():
    with pytest.raises(pyasc.ShapeError, match="divisible"):
        pyasc.pixel_shuffle(np.ones((1, 6, 2, 2)), 2)
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.pixel_shuffle(np.ones((1, 4, 2, 2)), 0)


def test_integer_max_pooling_is_exact():
    x = np.random.default_rng(7).integers(-2**31, 2**31 - 1, (2, 3, 9, 8), dtype=np.int64).astype(np.int32)
    got = pyasc.max_pool2d(x, 3, 2, 1)
    assert got.dtype == np.int32
    win = np.lib.stride_tricks.sliding_window_view(
        np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=np.iinfo(np.int32).min), (3, 3), axis=(-2, -1))
    np.testing.assert_array_equal(got, win[..., ::2, ::2, :, :].max(axis=(-2, -1)))


def test_pooling_takes_elementwise_epilogues_in_its_kernel():
    x = np.random.default_rng(8).standard_normal((2, 3, 12, 12)).astype(np.float32)
    op = pyasc.operator(lambda t: np.maximum(pyasc.avg_pool2d(t, 3, 2, 1) * 2.0, 0.5))
    np.testing.assert_allclose(op(x), np.maximum(pool_reference(x, "avg", 3, 2, 1) * 2.0, 0.5), rtol=1e-6, atol=1e-6)
    kernels = op.get_compiled_op(x).kernels()
    assert len(kernels) == 1 and kernels[0]["fused_ops"] >= 3, kernels


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.int64, np.bool_])
def test_pixel_shuffle_keeps_every_dtype_and_reads_views(dtype):
    base = np.random.default_rng(9).standard_normal((2, 8, 6, 10))
    x = (base > 0 if dtype is np.bool_ else (base * 100).astype(dtype))[:, ::-1, :, ::2]
    got = pyasc.pixel_shuffle(x, 2)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, shuffle_reference(x, 2))
    op = pyasc.operator(lambda t: pyasc.pixel_shuffle(t, 2))
    assert len(op.get_compiled_op(x).kernels()) >= 1
    np.testing.assert_array_equal(op(x), shuffle_reference(x, 2))


def test_pixel_shuffle_of_complex_values_and_its_epilogue():
    z = (np.arange(72) + 1j * np.arange(72)[::-1]).reshape(2, 4, 3, 3)
    np.testing.assert_array_equal(pyasc.pixel_shuffle(z, 2), shuffle_reference(z, 2))
    x = np.random.default_rng(10).standard_normal((1, 8, 5, 7)).astype(np.float32)
    op = pyasc.operator(lambda t: pyasc.pixel_shuffle(t, 2) * 2.0 + 1.0)
    np.testing.assert_array_equal(op(x), shuffle_reference(x, 2) * 2.0 + 1.0)
    kernels = op.get_compiled_op(x).kernels()
    assert len(kernels) == 1 and kernels[0]["fused_ops"] == 3, kernels
