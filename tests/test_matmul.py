"""Matmul (``@``, ``pyasc.matmul``, ``np.matmul``) against NumPy: 1-D, 2-D, batched and broadcast
operands, empty and size-1 dims, strided views (transposed, reversed, stepped) read in place, dtype
promotion, fused producers and consumers, attention; shape and dtype errors. Float results are
compared with a float64 reference within a bound on the dot-product rounding error,
``(k + 2) * eps * (|a| @ |b|)``."""

from __future__ import annotations

import math

import numpy as np
import pyasc
import pytest
from conftest import line_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = __file__
DTYPES = ["bool", "int32", "int64", "float32", "float64"]



def assert_matmul_close(got, a, b, want_dtype, want_shape):
    """`got` has NumPy's dtype and shape and is within the dot-product error bound of float64 a @ b."""
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want_dtype and got.shape == want_shape, (got.dtype, got.shape, want_dtype, want_shape)
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    ref = np.matmul(a64, b64)
    k = a64.shape[-1]
    bound = (k + 2) * np.finfo(got.dtype).eps * np.matmul(np.abs(a64), np.abs(b64)) + 1e-300
    err = np.abs(got.astype(np.float64) - ref)
    worst = np.unravel_index(np.argmax(err - bound), err.shape) if err.size else ()
    assert np.all(err <= bound), f"at {worst}: got {got[worst]!r}, want {ref[worst]!r}, bound {bound[worst]!r}"


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


def _make(draw, rng, shape, dtype):
    """An array of `shape`, possibly a transposed (last two axes), reversed or stepped view."""
    view = draw(st.sampled_from(["plain", "T", "rev", "step"])) if shape else "plain"
    if view == "T" and len(shape) >= 2:
        return np.swapaxes(_values(rng, shape[:-2] + (shape[-1], shape[-2]), dtype), -1, -2)
    if view == "rev":
        return _values(rng, shape, dtype)[..., ::-1]
    if view == "step":
        return _values(rng, (2 * shape[0],) + shape[1:], dtype)[::2]
    return _values(rng, shape, dtype)


@st.composite
def operands(draw, max_dim=5, dtypes=("float32", "float64")):
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    m, k, n = (draw(st.integers(0, max_dim)) for _ in range(3))

    def batch_of():
        keep = draw(st.integers(0, len(batch)))
        return tuple(1 if draw(st.booleans()) else d for d in batch[len(batch) - keep:])

    a_shape = (k,) if draw(st.integers(0, 4)) == 0 else batch_of() + (m, k)
    b_shape = (k,) if draw(st.integers(0, 4)) == 0 else batch_of() + (k, n)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = _make(draw, rng, a_shape, draw(st.sampled_from(dtypes)))
    b = _make(draw, rng, b_shape, draw(st.sampled_from(dtypes)))
    return a, b


FORMS = {
    "@": lambda x, y: x @ y,
    "pyasc": lambda x, y: pyasc.matmul(x, y),
    "np": lambda x, y: np.matmul(x, y),
}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operands(dtypes=DTYPES), st.sampled_from(sorted(FORMS) + ["eager"]))
def test_matmul_matches_numpy(ab, form):
    a, b = ab
    want = np.matmul(a, b)
    if form == "eager":
        run = lambda: pyasc.matmul(a, b)  # noqa: E731
    else:
        run = lambda: pyasc.operator(FORMS[form])(a, b)  # noqa: E731
    if want.dtype.kind != "f":
        with pytest.raises(pyasc.DTypeError):
            run()
        return
    assert_matmul_close(np.asarray(run()), a, b, want.dtype, want.shape)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operands(max_dim=70))
def test_larger_matmuls_cross_micro_kernel_tiles(ab):
    a, b = ab
    want = np.matmul(a, b)
    assert_matmul_close(pyasc.operator(lambda x, y: x @ y)(a, b), a, b, want.dtype, want.shape)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from(["float32", "float64"]),
       st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9)))
def test_matmul_fused_with_views_and_elementwise(seed, dtype, mkn):
    """Transposed and sliced operands, elementwise producers and consumers around the matmul."""
    m, k, n = mkn
    rng = np.random.default_rng(seed)
    a = _values(rng, (m, k), dtype)
    b = _values(rng, (n, 2 * k), dtype)
    c = _values(rng, (n,), dtype)
    op = pyasc.operator(lambda x, y, z: (x * 2.0) @ y[:, ::2].T + z)
    got = op(a, b, c)
    ref = (a.astype(np.float64) * 2.0) @ b[:, ::2].T.astype(np.float64) + c
    eps = np.finfo(dtype).eps
    bound = (k + 3) * eps * ((np.abs(a) * 2.0) @ np.abs(b[:, ::2].T) + np.abs(c))
    assert got.dtype == dtype and got.shape == (m, n)
    assert np.all(np.abs(got - ref) <= bound)
    got = pyasc.operator(lambda x: x.T @ x)(a)
    assert_matmul_close(got, a.T, a, np.dtype(dtype), (k, k))
    got = pyasc.operator(lambda x, y: np.tanh(x @ y[:, ::-2].T).sum(axis=-1))(a, b)
    ref = np.tanh(a.astype(np.float64) @ b[:, ::-2].T.astype(np.float64)).sum(axis=-1)
    np.testing.assert_allclose(got, ref, rtol=(k + 2) * n * eps * 8, atol=(k + 2) * n * eps * 8)


def _attention64(q, k, v):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from(["float32", "float64"]),
       st.lists(st.integers(1, 3), max_size=2), st.integers(1, 17), st.integers(1, 17), st.integers(1, 16),
       st.integers(1, 9))
def test_attention_matches_float64(seed, dtype, batch, s, t, d, dv):
    rng = np.random.default_rng(seed)
    batch = tuple(batch)
    q = _values(rng, batch + (s, d), dtype)
    k = _values(rng, batch + (t, d), dtype)
    v = _values(rng, batch + (t, dv), dtype)

    def attention(Q, K, V):
        scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])  # a weak Python float
        return pyasc.softmax(scores) @ V

    got = pyasc.operator(attention)(q, k, v)
    assert got.dtype == dtype and got.shape == batch + (s, dv)
    tol = (d + t + 8) * np.finfo(dtype).eps * 8
    np.testing.assert_allclose(got, _attention64(q, k, v), rtol=tol, atol=tol * np.abs(v).max())


def test_attention_with_dot_T_on_matrices():
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((n, 32)).astype(np.float32) for n in (24, 40, 40))
    op = pyasc.operator(lambda Q, K, V: pyasc.softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V)
    got = op(q, k, v)
    # np.sqrt(32) is a strongly typed float64 scalar (NEP 50): NumPy computes the rest in float64.
    assert got.dtype == (q @ k.T / np.sqrt(32)).dtype == np.float64
    np.testing.assert_allclose(got, _attention64(q, k, v), rtol=2e-5, atol=2e-6)


def test_matmul_reads_strided_operands_in_place_without_modifying_them():
    rng = np.random.default_rng(8)
    base = rng.standard_normal((6, 8, 10))
    before = base.copy()
    a = base[::-1, 1:7, ::2]          # (6, 6, 5)
    b = base[:, ::-1, 3].T            # (8, 6)
    want = a @ b[:5]
    got = pyasc.operator(lambda x, y: x @ y[:5])(a, b)
    assert_matmul_close(got, a, b[:5], want.dtype, want.shape)
    np.testing.assert_array_equal(base, before)


def test_matmul_promotes_like_numpy():
    a32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    a64 = a32.astype(np.float64)
    i32 = np.arange(6, dtype=np.int32).reshape(3, 2)
    for x, y in ((a32, a64.T), (a64, a32.T), (a32, i32), (i32.T, a32.T)):
        want = np.matmul(x, y)
        assert_matmul_close(pyasc.operator(lambda p, q: p @ q)(x, y), x, y, want.dtype, want.shape)


@pytest.mark.parametrize("dtypes", [("int32", "int32"), ("int64", "int32"), ("bool", "bool"), ("int64", "bool")])
def test_integer_matmul_is_a_dtype_error_with_line(dtypes):
    def f(x, y):
        return x @ y  # integer matmul

    x, y = np.ones((2, 3), dtypes[0]), np.ones((3, 4), dtypes[1])
    with pytest.raises(pyasc.DTypeError) as e:
        pyasc.operator(f)(x, y)
    assert e.value.lineno == line_of(f, "integer matmul")
    assert e.value.filename == HERE


@pytest.mark.parametrize("shapes", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (2,)), ((4,), (3, 4)),
                                    ((2, 2, 3), (3, 3, 4)), ((2, 1, 3, 4), (3, 5, 4, 2))])
def test_mismatched_shapes_are_a_shape_error_with_line(shapes):
    def f(x, y):
        t = x * 1.0
        return t @ y  # mismatched

    x, y = np.ones(shapes[0]), np.ones(shapes[1])
    with pytest.raises(ValueError):
        np.matmul(x, y)
    with pytest.raises(pyasc.ShapeError) as e:
        pyasc.operator(f)(x, y)
    assert e.value.lineno == line_of(f, "mismatched")
    assert e.value.filename == HERE
    assert f"{HERE}:{e.value.lineno}" in str(e.value)


def test_scalar_operands_are_a_shape_error():
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda x, y: x @ y)(np.ones((2, 3)), np.float64(2.0))
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda x: np.matmul(x, 2.0))(np.ones(3))


def test_large_products_run_in_pieces_with_the_same_values():
    # Above about 2e10 flops a product runs in blocks of rows and columns (a cancellation check
    # between them); transposed operands and a broadcast batch take the same path.
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 2208, 2240)).astype(np.float32)
    b = rng.standard_normal((2240, 2304)).astype(np.float32).T.copy().T  # column-major view
    got = pyasc.operator(lambda x, y: x @ y)(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    at = a[0].T  # strided left operand
    got = pyasc.operator(lambda x, y: x @ y)(at, a[1])
    np.testing.assert_allclose(got, at.astype(np.float64) @ a[1], rtol=2e-3, atol=2e-3)


def test_epilogues_of_products_with_large_outputs():
    # Outputs large enough that a plain elementwise kernel would stream them: the epilogue must
    # still read the product the GEMM wrote.
    rng = np.random.default_rng(21)
    a = rng.standard_normal((8192, 256)).astype(np.float32)
    b = rng.standard_normal((256, 1024)).astype(np.float32)
    got = pyasc.operator(lambda x, y: np.maximum(x @ y, 0.0) * 2.0)(a, b)
    want = np.maximum(a.astype(np.float64) @ b, 0.0) * 2.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
