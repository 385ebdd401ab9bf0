"""Matrix parts and norms against NumPy: ``diagonal trace tril triu`` and ``np.linalg.norm``.

Random shapes (empty and size-1 axes), offsets past either edge, axis pairs in both orders,
strided and broadcast views; integer and bool results exactly, floats within a few ulp of
NumPy's float64 result scaled by the reduced magnitudes.
"""

from __future__ import annotations

import math

import numpy as np
import pyasc
import pytest
from conftest import assert_matches, line_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = __file__
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("int8", "int32", "int64", "uint8"):
        return rng.integers(0 if dtype == "uint8" else -50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@st.composite
def matrices(draw, min_rank=2, dtypes=("float32", "float64", "int32", "int8", "bool")):
    rank = draw(st.integers(min_rank, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(dtypes))
    x = _values(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dtype)
    view = draw(st.sampled_from(["plain", "transposed", "strided"]))
    if view == "transposed":
        x = x.T
    elif view == "strided":
        x = x[(slice(None, None, -1),) * x.ndim]
    return x


@SETTINGS
@given(matrices(), st.integers(-6, 6), st.data())
def test_diagonal_and_trace(x, offset, data):
    nd = x.ndim
    a1 = data.draw(st.integers(-nd, nd - 1))
    a2 = data.draw(st.integers(-nd, nd - 1).filter(lambda a: a % nd != a1 % nd))
    got = pyasc.operator(lambda v: np.diagonal(v, offset, a1, a2))(x)
    assert_matches(got, np.ascontiguousarray(np.diagonal(x, offset, a1, a2)))
    got = pyasc.operator(lambda v: v.diagonal(offset=offset, axis1=a1, axis2=a2))(x)
    assert_matches(got, np.ascontiguousarray(x.diagonal(offset=offset, axis1=a1, axis2=a2)))
    got = pyasc.operator(lambda v: np.trace(v, offset, a1, a2))(x)
    want = np.asarray(np.trace(x, offset, a1, a2))
    if want.dtype.kind == "f":
        ref = np.trace(x.astype(np.float64), offset, a1, a2)
        scale = np.trace(np.abs(x.astype(np.float64)), offset, a1, a2)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_less(np.abs(got - ref), 4 * np.finfo(want.dtype).eps * scale + 1e-300)
    else:
        assert_matches(got, want)
    got = pyasc.operator(lambda v: v.trace(offset, a1, a2, dtype=np.float64))(x)
    np.testing.assert_allclose(got, np.trace(x, offset, a1, a2, dtype=np.float64), rtol=1e-12, atol=1e-12)
    assert_matches(pyasc.diagonal(x, offset, a1, a2), np.ascontiguousarray(np.diagonal(x, offset, a1, a2)))


@SETTINGS
@given(matrices(min_rank=1), st.integers(-6, 6))
def test_tril_triu(x, k):
    assert_matches(pyasc.operator(lambda v: np.tril(v, k))(x), np.tril(x, k))
    assert_matches(pyasc.operator(lambda v: np.triu(v, k))(x), np.triu(x, k))
    assert_matches(pyasc.tril(x, k), np.tril(x, k))
    assert_matches(pyasc.triu(x, k=k), np.triu(x, k=k))


def test_diagonal_of_computed_values_fuses():
    x = np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32)
    got = pyasc.operator(lambda v: np.trace(np.exp(v)) + np.triu(v, 1).sum())(x)
    np.testing.assert_allclose(got, np.trace(np.exp(x)) + np.triu(x, 1).sum(), rtol=1e-5)


VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1, -2.5]
MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]


def _check_norm(got, x, **kw):
    want = np.asarray(np.linalg.norm(x, **kw))
    ref = np.asarray(np.linalg.norm(x.astype(np.float64), **kw))
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    n = max(x.size, 1)
    eps = np.finfo(want.dtype).eps
    # |x|**p and its p-th root each round: a few ulp of the result, more for fractional orders.
    np.testing.assert_allclose(got, ref, rtol=(8 + 2 * math.log2(n)) * eps, atol=0)


@SETTINGS
@given(matrices(min_rank=1, dtypes=("float32", "float64", "int32", "int8")), st.sampled_from(VECTOR_ORDS),
       st.booleans(), st.data())
def test_vector_norms(x, ord, keepdims, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    if ord in (np.inf, -np.inf) and x.shape[axis] == 0 or (ord is not None and ord < 0 and x.shape[axis] == 0):
        return
    if ord is not None and ord < 0 and not np.all(x):
        x = np.where(x == 0, 1, x).astype(x.dtype)  # 0 ** negative is inf in both, but keeps the test simple
    got = pyasc.operator(lambda v: np.linalg.norm(v, ord, axis, keepdims))(x)
    _check_norm(got, x, ord=ord, axis=axis, keepdims=keepdims)


@SETTINGS
@given(matrices(dtypes=("float32", "float64", "int32")), st.sampled_from(MATRIX_ORDS), st.booleans(), st.data())
def test_matrix_norms(x, ord, keepdims, data):
    nd = x.ndim
    r = data.draw(st.integers(-nd, nd - 1))
    c = data.draw(st.integers(-nd, nd - 1).filter(lambda a: a % nd != r % nd))
    if ord is not None and ord != "fro" and (x.shape[r] == 0 or x.shape[c] == 0):
        return
    got = pyasc.operator(lambda v: np.linalg.norm(v, ord, (r, c), keepdims))(x)
    _check_norm(got, x, ord=ord, axis=(r, c), keepdims=keepdims)


def test_norm_defaults_and_eager():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    _check_norm(pyasc.operator(lambda v: np.linalg.norm(v))(x), x)
    _check_norm(pyasc.operator(lambda v: np.linalg.norm(v, keepdims=True))(x), x, keepdims=True)
    _check_norm(pyasc.operator(lambda v: np.linalg.norm(v[0], 1))(x), x[0], ord=1)
    _check_norm(pyasc.operator(lambda v: np.linalg.norm(v[0, 0], np.inf))(x), x[0, 0], ord=np.inf)
    _check_norm(pyasc.linalg.norm(x, axis=1), x, axis=1)
    _check_norm(pyasc.norm(x[0], "fro"), x[0], ord="fro")
    got = pyasc.operator(lambda v: np.linalg.vector_norm(v, ord=3))(x)
    np.testing.assert_allclose(got, np.linalg.vector_norm(x.astype(np.float64), ord=3), rtol=1e-5)
    got = pyasc.operator(lambda v: np.linalg.matrix_norm(v, ord=np.inf))(x)
    np.testing.assert_allclose(got, np.linalg.matrix_norm(x.astype(np.float64), ord=np.inf), rtol=1e-5)


def test_norm_errors_name_the_user_line():
    x = np.ones((3, 4), np.float32)

    def svd(v):
        return np.linalg.norm(v, 2)  # needs an SVD

    def nuc(v):
        return np.linalg.norm(v, "nuc", axis=(0, 1))  # nuclear

    def bad_ord(v):
        return np.linalg.norm(v[0], "fro")  # vector with 'fro'

    def bad_mat(v):
        return np.linalg.norm(v, 3)  # matrix order 3

    def bad_rank(v):
        return np.linalg.norm(v.reshape(1, 3, 4), 1)  # 3-d with an order

    def bad_axis(v):
        return np.linalg.norm(v, axis=(0, 0))  # duplicate axes

    def bad_diag(v):
        return np.diagonal(v, 0, 1, -1)  # same axis twice

    for fn, cls, text in [(svd, pyasc.UnsupportedError, "needs an SVD"),
                          (nuc, pyasc.UnsupportedError, "nuclear"),
                          (bad_ord, pyasc.InvalidArgumentError, "vector with"),
                          (bad_mat, pyasc.InvalidArgumentError, "matrix order 3"),
                          (bad_rank, pyasc.ShapeError, "3-d with"),
                          (bad_axis, pyasc.ShapeError, "duplicate axes"),
                          (bad_diag, pyasc.ShapeError, "same axis twice")]:
        with pytest.raises(cls) as e:
            pyasc.operator(fn)(x)
        assert e.value.lineno == line_of(fn, text), fn.__name__
        assert e.value.filename == HERE
    with pytest.raises(pyasc.UnsupportedError, match="singular value"):
        pyasc.linalg.norm(x, -2)
