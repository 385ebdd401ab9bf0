"""NumPy arrays an operator reads from outside itself (module globals, closures, attributes):
implicit inputs, read from the live array at every call."""

import numpy as np
import pyasc
import pytest

W = np.arange(6, dtype=np.float32)


@pyasc.operator
def scale_by_global(x):
    return x * W + 1.0


def test_global_array_is_read_at_every_call():
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    saved = W.copy()
    try:
        np.testing.assert_array_equal(scale_by_global(x), x * saved + np.float32(1))
        W[:] = 7.0
        np.testing.assert_array_equal(scale_by_global(x), x * np.float32(7) + np.float32(1))
        assert scale_by_global.cache_info().compiles == 1
    finally:
        W[:] = saved


def test_closure_array_and_helper_function_as_in_the_article():
    rng = np.random.default_rng(0)
    kernel = rng.standard_normal((5, 5)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)

    def conv1(x):
        return x @ kernel + bias

    @pyasc.operator
    def sr_inference(x):
        x = conv1(x)
        return pyasc.relu(x)

    x = rng.standard_normal((3, 5)).astype(np.float32)
    ref = np.maximum(x.astype(np.float64) @ kernel.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(sr_inference(x), ref, rtol=1e-5, atol=1e-5)
    kernel *= -1.0
    ref = np.maximum(x.astype(np.float64) @ kernel.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(sr_inference(x), ref, rtol=1e-5, atol=1e-5)
    assert sr_inference.cache_info().compiles == 1


def test_class_attribute_array_is_an_implicit_input():
    class Affine(pyasc.AscendOperatorBase):
        def __init__(self):
            super().__init__(device="NPU")
            self.scale = np.full(4, 2.0)

        def compute(self, inputs):
            (x,) = inputs
            return x * self.scale

    op = Affine()
    x = np.arange(4.0)
    np.testing.assert_array_equal(op(x), x * 2.0)
    op.scale[1] = -3.0
    np.testing.assert_array_equal(op(x), x * np.array([2.0, -3.0, 2.0, 2.0]))


def test_same_array_used_twice_is_one_input():
    v = np.array([1.0, 2.0, 3.0])

    @pyasc.operator
    def f(x):
        return x * v + v * v

    x = np.array([4.0, 5.0, 6.0])
    np.testing.assert_array_equal(f(x), x * v + v * v)
    kernels = f.get_compiled_op(x).kernels()
    assert len(kernels) == 1


def test_a_shape_change_in_place_retraces():
    table = np.ones(3)

    @pyasc.operator
    def f(x):
        return x.sum() + table

    np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0, 3.0])
    table.resize(5, refcheck=False)
    table[:] = 2.0
    np.testing.assert_array_equal(f(np.ones(2)), [4.0] * 5)
    assert f.cache_info().compiles == 2


def test_a_changed_shape_joins_the_signature_with_broadcast_errors_at_the_users_line():
    row = np.ones(4, dtype=np.float32)

    @pyasc.operator
    def f(x):
        return x + row

    f(np.zeros(4, np.float32))
    row.resize(3, refcheck=False)
    with pytest.raises(pyasc.ShapeError, match="test_captured.py"):
        f(np.zeros(4, np.float32))
    np.testing.assert_array_equal(f(np.zeros(3, np.float32)), np.ones(3, np.float32) * row)


def test_rebinding_is_seen_after_cache_clear():
    state = {"w": np.full(3, 2.0)}

    @pyasc.operator
    def f(x):
        return x * state["w"]

    x = np.ones(3)
    np.testing.assert_array_equal(f(x), [2.0, 2.0, 2.0])
    state["w"] = np.full(3, 5.0)
    f.cache_clear()
    np.testing.assert_array_equal(f(x), [5.0, 5.0, 5.0])


def test_strided_and_zero_d_captures():
    base = np.arange(12.0)
    every_other = base[::2]
    offset = np.array(1.5)

    @pyasc.operator
    def f(x):
        return x - every_other + offset

    x = np.ones(6)
    np.testing.assert_array_equal(f(x), x - base[::2] + 1.5)
    base[:] = -1.0
    offset[()] = 10.0
    np.testing.assert_array_equal(f(x), x + 1.0 + 10.0)


def test_returning_a_captured_array_returns_its_values():
    w = np.array([3, 1, 2], dtype=np.int64)

    @pyasc.operator
    def f(x):
        return x + 1, w

    a, b = f(np.zeros(3, np.int64))
    np.testing.assert_array_equal(a, [1, 1, 1])
    np.testing.assert_array_equal(b, w)
    assert b.dtype == np.int64


def test_arrays_made_inside_the_function_work():
    @pyasc.operator
    def f(x):
        return x * np.arange(4.0) + np.ones(4)

    np.testing.assert_array_equal(f(np.full(4, 2.0)), 2.0 * np.arange(4.0) + 1.0)
    np.testing.assert_array_equal(f(np.full(4, 3.0)), 3.0 * np.arange(4.0) + 1.0)


def test_device_array_call_snapshots_the_captured_array():
    w = np.full(4, 2.0, dtype=np.float32)

    @pyasc.operator
    def f(x):
        return x * w

    d = pyasc.DeviceArray((4,), dtype="float32")
    d.copy_from(np.ones(4, np.float32))
    out = f(d)
    w[:] = 100.0
    np.testing.assert_array_equal(np.asarray(out), np.full(4, 2.0, np.float32))
    np.testing.assert_array_equal(np.asarray(f(d)), np.full(4, 100.0, np.float32))


def test_unsupported_captures_are_typed_errors_at_the_users_line():
    c = np.ones(3, dtype=np.longdouble)
    m = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])

    @pyasc.operator
    def f(x):
        return x + c

    @pyasc.operator
    def g(x):
        return x + m

    with pytest.raises(pyasc.DTypeError, match="test_captured.py"):
        f(np.ones(3, np.float32))
    with pytest.raises(pyasc.InvalidArgumentError, match="masked"):
        g(np.ones(3))


def test_captured_inputs_are_never_modified():
    w = np.arange(5.0)
    before = w.copy()

    @pyasc.operator
    def f(x):
        return (x + w) * 2.0, w * 3.0

    f(np.ones(5))
    np.testing.assert_array_equal(w, before)
