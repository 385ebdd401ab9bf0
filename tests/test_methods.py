"""NumPy ndarray methods on traced tensors: sorting, in-place updates, rounding, take, sizes.

The reference runs the same function on NumPy arrays (in-place methods on a copy).
"""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from conftest import line_of

X = np.array([[3, 1, 2, 9, 1], [0, -1, 5, 4, 5], [7, 7, -2, 0, 3]], np.float32)


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g, w)
        np.testing.assert_array_equal(g, w, err_msg=str(i))


CASES = {
    "argsort": lambda t: (t.argsort(kind="stable"), t.argsort(axis=0, kind="stable"), t.argsort(None, stable=True)),
    "argpartition": lambda t: np.take_along_axis(t, t.argpartition(1), -1)[:, 1],
    "searchsorted": lambda t: (np.sort(t[0]).searchsorted(2.5), np.sort(t[1]).searchsorted(t[2], side="right")),
    "sort": lambda t: _sorted(t),
    "partition": lambda t: _partitioned(t),
    "fill": lambda t: _filled(t),
    "put": lambda t: _put(t),
    "round": lambda t: ((t / 3).round(2), t.round(-1)),
    "take": lambda t: (t.take([1, 3], axis=1), t.take([[0], [4]]), t.take([-1, 17], mode="wrap"),
                       t.take([-3, 7], axis=1, mode="clip")),
    "sizes": lambda t: (t.itemsize, t.nbytes, t[:, :2].nbytes),
    "mT": lambda t: (t.mT, (t[None] * 2).mT),
}


def _sorted(t):
    y = t * 1
    y.sort()
    z = t + 0
    z.sort(axis=0)
    return y, z


def _partitioned(t):
    y = t.copy()
    y.partition(2)
    return y[:, 2], (y[:, :2] <= y[:, 2:3]).all(), (y[:, 3:] >= y[:, 2:3]).all()


def _filled(t):
    y = np.zeros_like(t)
    y.fill(3.5)
    v = y[1]
    v.fill(-1)  # a view of a body array: the write reaches y
    return y


def _put(t):
    y = np.zeros_like(t)
    y.put([0, 7, 14], t[0, :3])
    y.put([[1], [2]], [9.0])  # values repeat over the indices
    return y


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64])
def test_methods_follow_numpy(name, dt):
    x = X.astype(dt)
    fn = CASES[name]
    _same(pyasc.operator(fn)(x), fn(x.copy()))
    v = np.concatenate([x, x], axis=1)[::-1, ::2]  # a strided view of the same shape
    _same(pyasc.operator(fn)(v), fn(v.copy()))


def test_in_place_methods_never_write_arguments():
    x = X.copy()

    def sort_arg(t):
        t.sort()
        return t

    def fill_view(t):
        t.T[0].fill(1)
        return t

    for fn, text in ((sort_arg, "t.sort()"), (fill_view, "t.T[0].fill(1)")):
        with pytest.raises(pyasc.TraceError) as e:
            pyasc.operator(fn)(x)
        assert e.value.lineno == line_of(fn, text)
    np.testing.assert_array_equal(x, X)


def test_nonzero_method_is_data_dependent():
    with pytest.raises(pyasc.TraceError, match="size="):
        pyasc.operator(lambda t: t.nonzero())(X)
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.operator(lambda t: t.take([0], mode="nearest"))(X)
