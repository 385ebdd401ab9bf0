"""``nonzero``, ``argwhere``, ``flatnonzero`` and ``compress`` with a static size (JAX's rule),
checked against NumPy's results truncated or padded to that size."""

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def padded(r, size, fill):
    out = np.full((size,) + r.shape[1:], fill, dtype=r.dtype)
    n = min(size, r.shape[0])
    out[:n] = r[:n]
    return out


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), size=st.integers(0, 12),
       fill=st.integers(-3, 3), seed=st.integers(0, 2**16))
def test_nonzero_family_matches_numpy_padded(shape, size, fill, seed):
    x = np.random.default_rng(seed).integers(-2, 3, size=shape).astype(np.float32)

    @pyasc.operator
    def f(x):
        return (pyasc.flatnonzero(x, size=size, fill_value=fill), pyasc.argwhere(x > 0, size=size, fill_value=fill),
                *pyasc.nonzero(x, size=size, fill_value=fill))

    flat, arg, *per_axis = f(x)
    np.testing.assert_array_equal(flat, padded(np.flatnonzero(x), size, fill))
    np.testing.assert_array_equal(arg, padded(np.argwhere(x > 0), size, fill))
    for got, want in zip(per_axis, np.nonzero(x)):
        np.testing.assert_array_equal(got, padded(want, size, fill))
        assert got.dtype == np.int64


def test_nonzero_of_a_computed_mask_with_per_axis_fill():
    x = np.array([[0.0, 1.5], [-2.0, 0.0], [3.0, 4.0]])
    rows, cols = pyasc.operator(lambda x: pyasc.nonzero(x * 2 > 1, size=4, fill_value=(-1, 9)))(x)
    np.testing.assert_array_equal(rows, [0, 2, 2, -1])
    np.testing.assert_array_equal(cols, [1, 0, 1, 9])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_with_a_traced_condition(axis):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    cond = np.array([True, False, True])
    length = a.size if axis is None else a.shape[axis]
    cond = np.resize(cond, length)

    @pyasc.operator
    def f(c, a):
        return pyasc.compress(c, a, axis=axis, size=5, fill_value=-7)

    want = np.compress(cond, a, axis=axis)
    ax = 0 if axis is None else axis
    want = np.moveaxis(padded(np.moveaxis(want, ax, 0), 5, -7), 0, ax)
    np.testing.assert_array_equal(f(cond, a), want)


def test_static_condition_np_compress_works_and_data_dependent_ones_raise():
    a = np.arange(6.0)
    np.testing.assert_array_equal(pyasc.operator(lambda a: np.compress([True, False, True], a))(a),
                                  np.compress([True, False, True], a))
    for fn in (np.nonzero, np.flatnonzero, np.argwhere):
        with pytest.raises(pyasc.TraceError, match="size="):
            pyasc.operator(lambda a, fn=fn: fn(a > 2))(a)
    with pytest.raises(pyasc.TraceError, match="size="):
        pyasc.operator(lambda a: pyasc.nonzero(a))(a)


def test_outside_operators_they_run_on_numpy():
    x = np.array([0, 3, 0, 5])
    np.testing.assert_array_equal(pyasc.flatnonzero(x, size=3, fill_value=-1), [1, 3, -1])
    np.testing.assert_array_equal(pyasc.nonzero(x)[0], [1, 3])
