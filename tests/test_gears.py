"""Gears never change a result: reductions over a padded dimension read the padding as their
identity (through a mask of the valid extents, run-time inputs), each gear compiles once, and
functions that move data across a padded dimension run unpadded. NumPy arrays, DeviceArrays
and keyword arguments alike."""

import numpy as np
import pyasc
import pytest


def _valid(got, n, axis=0):
    """The unpadded prefix of a geared result along ``axis``."""
    return np.take(np.asarray(got), np.arange(n), axis=axis)


REDUCTIONS = {
    "sum": lambda x: x.sum(axis=0),
    "max": lambda x: x.max(axis=0),
    "min": lambda x: np.min(x, axis=0),
    "mean": lambda x: x.mean(axis=0),
    "prod": lambda x: np.prod(x, axis=0),
    "argmax": lambda x: np.argmax(x, axis=0),
    "argmin": lambda x: np.argmin(x, axis=0),
    "all_axes_max": lambda x: x.max(),
    "exp_sum": lambda x: np.exp(x).sum(axis=0),
    "keepdims_mean_centered": lambda x: x - x.mean(axis=0, keepdims=True),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_over_the_geared_dimension_ignore_the_padding(name):
    fn = REDUCTIONS[name]
    op = pyasc.operator(dynamic_shape=True, gears={0: [4, 8, 16]})(fn)
    rng = np.random.default_rng(1)
    for n in (1, 3, 5, 7, 9):
        x = (rng.standard_normal((n, 3)) - 4.0).astype(np.float64)  # all negative: max(0-padding) would win
        got, want = op(x), fn(x)
        if np.ndim(want) and want.shape[0] == n:
            got = _valid(got, n)
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert op.cache_info().compiles == 3  # one per gear, whatever the valid extent


def test_integer_and_bool_reductions():
    def f(x):
        return x.max(axis=0), x.min(axis=0), x.sum(axis=0), (x > 0).all(axis=0), (x < -5).any(axis=0)

    op = pyasc.operator(dynamic_shape=True, gears={0: [8]})(f)
    x = -np.arange(1, 16, dtype=np.int32).reshape(5, 3)
    for got, want in zip(op(x), f(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_softmax_and_logsumexp_over_the_geared_dimension():
    def f(x):
        return pyasc.softmax(x, axis=0), pyasc.logsumexp(x, axis=0)

    op = pyasc.operator(dynamic_shape=True, gears="pow2")(f)
    x = np.random.default_rng(2).standard_normal((5, 4))
    s, lse = op(x)
    e = np.exp(x - x.max(axis=0))
    np.testing.assert_allclose(_valid(s, 5), e / e.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(lse, np.log(np.exp(x).sum(axis=0)), rtol=1e-12)


def test_matmul_contracting_and_keeping_the_geared_dimension():
    w = np.random.default_rng(3).standard_normal((3, 2))

    def f(x, w):
        return x.T @ x, x @ w

    op = pyasc.operator(dynamic_shape=True, gears={0: [8, 16]})(f)
    x = np.random.default_rng(4).standard_normal((6, 3))
    gram, proj = op(x, w)
    np.testing.assert_allclose(gram, x.T @ x, rtol=1e-12)
    assert proj.shape == (8, 2)
    np.testing.assert_allclose(_valid(proj, 6), x @ w, rtol=1e-12)


def test_two_geared_dimensions():
    op = pyasc.operator(dynamic_shape=True, gears={0: [4, 8], 1: [2, 4]})(lambda x: (x.min(), x.mean(axis=1)))
    x = np.random.default_rng(5).uniform(1, 2, (5, 3))
    lo, m = op(x)
    assert lo == x.min()
    np.testing.assert_allclose(_valid(m, 5), x.mean(axis=1), rtol=1e-12)


def test_moving_data_across_the_geared_dimension_runs_unpadded():
    def f(x):
        return x.reshape(-1).max() + x[1:].sum()

    op = pyasc.operator(dynamic_shape=True, gears={0: [8]})(f)
    x = -np.arange(1.0, 16.0).reshape(5, 3)
    assert op(x) == f(x)
    assert op(x[:4]) == f(x[:4])


def test_device_array_inputs_are_padded_on_the_device():
    op = pyasc.operator(dynamic_shape=True, gears={0: [8]})(lambda x: (x * 2, x.max(axis=0)))
    host = -np.arange(1.0, 16.0, dtype=np.float32).reshape(5, 3)
    d = pyasc.to_device(host)
    y, m = op(d)
    assert isinstance(y, pyasc.DeviceArray) and y.shape == (8, 3)
    np.testing.assert_array_equal(np.asarray(y), np.pad(host, ((0, 3), (0, 0))) * 2)
    np.testing.assert_array_equal(np.asarray(m), host.max(axis=0))
    np.testing.assert_array_equal(np.asarray(d), host)  # the input is not modified


def test_keyword_arguments():
    @pyasc.operator(dynamic_shape=True, gears={0: [8]})
    def f(x, bias, scale=2.0):
        return (x * scale + bias).sum(axis=0)

    x = np.ones((5, 3))
    b = np.arange(3.0)
    np.testing.assert_array_equal(f(x, bias=b), (x * 2.0 + b).sum(axis=0))
    np.testing.assert_array_equal(f(bias=b, x=x, scale=3.0), (x * 3.0 + b).sum(axis=0))
    with pytest.raises(pyasc.InvalidArgumentError):
        f(x, nope=1)


def test_geared_inputs_are_never_modified():
    x = np.arange(10.0).reshape(5, 2)
    before = x.copy()
    pyasc.operator(dynamic_shape=True, gears={0: [8]})(lambda t: t.sum(axis=0))(x)
    np.testing.assert_array_equal(x, before)
