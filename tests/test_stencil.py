"""@pyasc.stencil_operator against NumPy slicing references in float64."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

MODES = ("fill", "constant", "nearest", "reflect", "wrap", "skip", "valid")
NP_PAD = {"constant": "constant", "nearest": "edge", "reflect": "symmetric", "wrap": "wrap"}


def reference(fields, terms, mode, cval=0.0, lo=None, hi=None, dtype=None):
    """sum(w * field[k] shifted by d) for terms (k, d, w), computed by np.pad and slicing in float64."""
    u = fields[0]
    nd = u.ndim
    lo = lo or tuple(max([0] + [-d[a] for _, d, _ in terms]) for a in range(nd))
    hi = hi or tuple(max([0] + [d[a] for _, d, _ in terms]) for a in range(nd))
    f64 = [np.asarray(f, np.float64) for f in fields]
    if mode in NP_PAD:
        kw = {"constant_values": cval} if mode == "constant" else {}
        src = [np.pad(f, list(zip(lo, hi)), mode=NP_PAD[mode], **kw) for f in f64]
        out_shape = u.shape
    else:
        src = f64
        out_shape = tuple(max(0, n - a - b) for n, a, b in zip(u.shape, lo, hi))
    inner = np.zeros(out_shape)
    if all(out_shape):
        for k, d, w in terms:
            s = src[k]
            idx = tuple(slice(a + dd, a + dd + m) for a, dd, m in zip(lo, d, out_shape))
            inner = inner + w * s[idx]
    if mode in NP_PAD or mode == "valid":
        return inner
    full = np.full(u.shape, cval, np.float64) if mode == "fill" else f64[0].copy()
    if all(out_shape):
        full[tuple(slice(a, a + m) for a, m in zip(lo, out_shape))] = inner
    return full


def weighted(terms, nfields=1):
    """A stencil body summing w * field[d] over terms (k, d, w)."""
    def body(*args):
        total = 0
        for k, d, w in terms:
            total = total + args[k][d] * w
        return total
    return body


def tol(dtype):
    return {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}.get(
        np.dtype(dtype).name, dict(rtol=0, atol=0))


def test_article_jacobi_in_every_mode():
    rng = np.random.default_rng(0)
    u = rng.random((33, 47)).astype(np.float32)
    p = np.array([0.25], np.float32)
    terms = [(0, (-1, 0), 0.25), (0, (1, 0), 0.25), (0, (0, -1), 0.25), (0, (0, 1), 0.25)]
    for mode in MODES:
        @pyasc.stencil_operator(boundary=mode, cval=1.5)
        def pde(u, parameters):
            return (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) * parameters[0]

        got = pde(u, p)
        want = reference([u], terms, mode, cval=1.5)
        assert got.dtype == np.float32 and got.shape == want.shape, mode
        np.testing.assert_allclose(got, want, **tol(np.float32), err_msg=mode)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_stencils_match_numpy(data):
    nd = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 9 if nd < 3 else 6), min_size=nd, max_size=nd)))
    dtype = data.draw(st.sampled_from(["float32", "float64", "int32", "int64"]))
    mode = data.draw(st.sampled_from(MODES))
    nfields = data.draw(st.integers(1, 2))
    offs = st.tuples(*[st.integers(-2, 2)] * nd)
    weights = st.integers(-3, 3) if dtype.startswith("int") else st.sampled_from([0.5, -1.25, 2.0, 0.1])
    terms = data.draw(st.lists(st.tuples(st.integers(0, nfields - 1), offs, weights), min_size=1, max_size=5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    fields = [(rng.integers(-9, 9, shape) if dtype.startswith("int") else rng.standard_normal(shape)).astype(dtype)
              for _ in range(nfields)]
    cval = 2 if dtype.startswith("int") else 0.75
    copies = [f.copy() for f in fields]
    op = pyasc.stencil_operator(weighted(terms), boundary=mode, cval=cval)
    got = op(*fields)
    want = reference(fields, terms, mode, cval=cval)
    assert got.shape == want.shape
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want, **tol(got.dtype))
    for f, c in zip(fields, copies):
        np.testing.assert_array_equal(f, c)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "valid"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(301, 67), (45, 300)])  # short rows: trapezoids; long rows: wavefront
def test_iterations_are_bit_identical_to_single_steps(mode, dtype, shape):
    rng = np.random.default_rng(3)
    u = rng.standard_normal(shape).astype(dtype)

    @pyasc.stencil_operator(boundary=mode, cval=0.5)
    def heat(u, k):
        return u[0, 0] + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4.0 * u[0, 0])

    one = u
    for _ in range(23):
        one = heat(one, 0.2)
    many = heat(u, 0.2, iterations=23)
    assert many.dtype == u.dtype
    assert np.array_equal(many, one)
    want = u.astype(np.float64)
    terms = [(0, (0, 0), 1.0 - 0.8), (0, (-1, 0), 0.2), (0, (1, 0), 0.2), (0, (0, -1), 0.2), (0, (0, 1), 0.2)]
    for _ in range(23):
        want = reference([want], terms, mode, cval=0.5)
    np.testing.assert_allclose(many, want, rtol=1e-3, atol=1e-4)


def test_iterations_in_3d_and_general_bodies():
    rng = np.random.default_rng(4)
    u = rng.random((12, 9, 10)).astype(np.float32)

    @pyasc.stencil_operator(boundary="constant", cval=0.1, iterations=5)
    def heat3(u):
        return (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]) / 6.0

    for grid in (u, rng.random((10, 20, 21)).astype(np.float32)):  # planes of 90 and of 420 cells
        one = grid
        for _ in range(5):
            one = heat3(one, iterations=1)
        out = np.empty_like(grid)
        assert heat3(grid, out=out) is out and np.array_equal(out, one)

    @pyasc.stencil_operator(boundary="wrap")
    def clipped(u):  # np.where and exp: the general path
        return np.where(u[0, 0, 1] > 0.5, np.exp(u[0, 0, 0]), u[0, -1, 0] * 0.5).astype(np.float32)

    one = u
    for _ in range(3):
        one = clipped(one)
    assert np.array_equal(clipped(u, iterations=3), one)
    v = u.astype(np.float64)
    for _ in range(3):
        p = np.pad(v, 1, mode="wrap")
        v = np.where(p[1:-1, 1:-1, 2:] > 0.5, np.exp(p[1:-1, 1:-1, 1:-1]), p[1:-1, :-2, 1:-1] * 0.5)
    np.testing.assert_allclose(one, v, rtol=1e-5)


def test_moving_average_loop_standard_indexing_and_wide_neighborhood():
    rng = np.random.default_rng(5)
    a = rng.standard_normal(200)
    w = np.array([0.1, 0.2, 0.4, 0.2, 0.1])

    @pyasc.stencil_operator(standard_indexing=("weights",), neighborhood=((-3, 3),))
    def smooth(a, weights):
        total = 0.0
        for i in range(-2, 3):
            total = total + a[i] * weights[i + 2]
        return total

    got = smooth(a, w)
    want = np.zeros_like(a)
    want[3:-3] = sum(w[i + 2] * a[3 + i:197 + i] for i in range(-2, 3))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_two_fields_out_and_small_grids():
    rng = np.random.default_rng(6)
    u, v = rng.random((20, 30)), rng.random((20, 30))

    @pyasc.stencil_operator(boundary="nearest")
    def advect(u, v):
        return u[0, 0] - 0.5 * v[0, 0] * (u[0, 1] - u[0, -1])

    out = np.empty_like(u)
    assert advect(u, v, out=out) is out
    terms = [(0, (0, 0), 1.0)]
    pu = np.pad(u, 1, mode="edge")
    np.testing.assert_allclose(out, u - 0.5 * v * (pu[1:-1, 2:] - pu[1:-1, :-2]), rtol=1e-12)
    np.testing.assert_allclose(advect(u[:1, :1], v[:1, :1]), reference([u[:1, :1]], terms, "nearest"))

    @pyasc.stencil_operator
    def lap(u):
        return u[-1, 0] + u[1, 0] - 2 * u[0, 0]

    small = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(lap(small), np.zeros((2, 3)))  # fill: everything is border


def _line_of(fn):
    return fn.__code__.co_firstlineno


def test_bad_inputs_raise_typed_errors_at_the_users_line():
    u = np.ones((8, 8), np.float32)

    @pyasc.stencil_operator
    def floaty(u):
        return u[0.5, 0]

    with pytest.raises(pyasc.TraceError, match="constant integers") as e:
        floaty(u)
    assert e.value.lineno == _line_of(floaty.__wrapped__) + 2

    @pyasc.stencil_operator
    def sliced(u):
        return u[0:2, 0]

    with pytest.raises(pyasc.TraceError, match="constant integers"):
        sliced(u)

    @pyasc.stencil_operator(neighborhood=((-1, 1), (-1, 1)))
    def too_far(u):
        return u[0, 2]

    with pytest.raises(pyasc.InvalidArgumentError, match="outside the neighborhood") as e:
        too_far(u)
    assert e.value.lineno == _line_of(too_far.__wrapped__) + 2

    with pytest.raises(pyasc.InvalidArgumentError, match="boundary"):
        pyasc.stencil_operator(boundary="mirror")

    @pyasc.stencil_operator
    def two(u, v):
        return u[0, 1] + v[0, 0]

    with pytest.raises(pyasc.ShapeError, match="standard_indexing"):
        two(u, np.ones((8, 9), np.float32))

    @pyasc.stencil_operator(boundary="valid")
    def shrink(u):
        return u[0, 1]

    with pytest.raises(pyasc.InvalidArgumentError, match="valid"):
        shrink(u, iterations=2)

    @pyasc.stencil_operator
    def widen(u):
        return u[0, 1] * 0.5

    with pytest.raises(pyasc.DTypeError, match="iterations"):
        widen(np.ones((5, 5), np.int32), iterations=2)
    with pytest.raises(pyasc.ShapeError):
        widen(u, out=np.empty((3, 3), np.float32))
    with pytest.raises(pyasc.InvalidArgumentError):
        widen(u, iterations=0)


def test_inputs_are_never_modified():
    rng = np.random.default_rng(8)
    u = rng.random((40, 50)).astype(np.float32)
    keep = u.copy()
    for mode in MODES:
        op = pyasc.stencil_operator(lambda u: u[0, 1] + u[-1, 0], boundary=mode)
        op(u)
        if mode != "valid":
            op(u, iterations=3)
    np.testing.assert_array_equal(u, keep)
