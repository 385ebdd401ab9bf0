"""DeviceArrays and operators on the opaque test device, whose memory the host cannot address.

The private switch ``_pyasc._use_opaque_test_device`` places new DeviceArrays and CPU operators
on it; every host access must then copy through the device, never view its memory.
"""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from pyasc import _pyasc


@pytest.fixture
def opaque():
    previous = _pyasc._use_opaque_test_device(True)
    try:
        yield
    finally:
        pyasc.synchronize()
        _pyasc._use_opaque_test_device(previous)


def test_arrays_live_on_the_opaque_device_and_copy_out(opaque):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    d = pyasc.to_device(x)
    assert d.device == "opaque-test"
    for host in (np.asarray(d), d.numpy(), d.__array__(), np.array(d)):
        np.testing.assert_array_equal(host, x)
        host[0, 0] = -1.0  # a copy: the device array is unchanged
    assert d.numpy()[0, 0] == 0.0
    np.testing.assert_array_equal(np.asarray(d, dtype=np.float64), x.astype(np.float64))
    # Strided views are read through a copy of the bytes they span.
    np.testing.assert_array_equal(np.asarray(d[1:, ::-2]), x[1:, ::-2])
    np.testing.assert_array_equal(d[:, 3].numpy(), x[:, 3])
    out = np.zeros((3, 3), np.float32)
    d[1:, ::2].copy_to(out)
    np.testing.assert_array_equal(out, x[1:, ::2])
    assert "DeviceArray(shape=[4, 6]" in repr(d) and "23." in repr(d)


def test_zero_copy_host_views_are_refused(opaque):
    d = pyasc.to_device(np.ones(5, np.float32))
    with pytest.raises(ValueError, match="without a copy"):
        d.__array__(copy=False)
    with pytest.raises(pyasc.InvalidArgumentError):
        d.__array__(copy=False)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        with pytest.raises(ValueError):
            np.asarray(d, copy=False)


def test_copy_from_goes_through_the_device(opaque):
    expect = np.zeros((4, 6), np.float64)
    d = pyasc.zeros((4, 6), np.float64)
    assert d.device == "opaque-test"
    np.testing.assert_array_equal(d.numpy(), expect)
    src = np.random.default_rng(0).standard_normal((4, 6))
    d.copy_from(src)
    expect[...] = src
    np.testing.assert_array_equal(d.numpy(), expect)
    d.copy_from(np.arange(6, dtype=np.int32))  # cast and broadcast
    expect[...] = np.arange(6)
    np.testing.assert_array_equal(d.numpy(), expect)
    d[:, 1].copy_from(np.array([7.0, 8.0, 9.0, 10.0]))  # a strided view: the bytes between stay
    expect[:, 1] = [7.0, 8.0, 9.0, 10.0]
    np.testing.assert_array_equal(d.numpy(), expect)
    # Between DeviceArrays: a device copy, and a layout change through the host.
    e = pyasc.empty((4, 6), np.float64)
    e.copy_from(d)
    np.testing.assert_array_equal(e.numpy(), expect)
    t = pyasc.empty((6, 4), np.float64)
    t.copy_from(np.asarray(d).T)
    f = pyasc.empty((4, 6), np.float32)
    f.copy_from(d)
    np.testing.assert_array_equal(f.numpy(), expect.astype(np.float32))
    np.testing.assert_array_equal(t.numpy(), expect.T)


def test_operators_launch_on_device_buffers(opaque):
    @pyasc.operator
    def f(x, y, s):
        return np.sqrt(x) * y + s

    assert f.device == "opaque-test"
    rng = np.random.default_rng(1)
    x = rng.random(10_000, dtype=np.float32)
    y = rng.random(10_000, dtype=np.float32)
    want = np.sqrt(x.astype(np.float64)) * y + 1.5
    dx = pyasc.to_device(x)
    r = f(dx, y, 1.5)  # a DeviceArray, a host array staged to the device, a Python float
    assert isinstance(r, pyasc.DeviceArray) and r.device == "opaque-test"
    np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
    r2 = f(r, pyasc.to_device(y), 0.0)  # chained on the device
    np.testing.assert_allclose(r2.numpy(), np.sqrt(want) * y, rtol=1e-5)
    # NumPy arguments run now, as on the CPU.
    np.testing.assert_allclose(f(x, y, 1.5), want, rtol=1e-6)


def test_dlpack_export_is_refused_and_import_copies(opaque):
    d = pyasc.to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(BufferError, match="DLPack"):
        d.__dlpack__()
    with pytest.raises(BufferError):
        d.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        d.__dlpack_device__()
    with pytest.raises(BufferError):
        np.from_dlpack(d)
    src = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::-1]
    imported = pyasc.from_dlpack(src)
    assert imported.device == "opaque-test"
    src_before = src.copy()
    src[...] = -1.0  # the import is a copy of the source
    np.testing.assert_array_equal(imported.numpy(), src_before)
    imported.copy_from(np.zeros((3, 4)))  # writable, and the source is left alone
    assert (src == -1.0).all()


def test_arrays_of_one_device_are_not_read_by_another(opaque):
    d = pyasc.to_device(np.ones(8, np.float32))
    _pyasc._use_opaque_test_device(False)
    c = pyasc.to_device(np.arange(8, dtype=np.float32))
    assert c.device == "cpu"

    @pyasc.operator
    def g(x):
        return x * 2.0

    @pyasc.operator(device_type="npu")
    def h(x):
        return x * 2.0

    for op in (g, h):
        with pytest.raises(pyasc.DeviceError, match="opaque-test"):
            op(d)
    # Copies between the devices go through the host.
    c.copy_from(d)
    np.testing.assert_array_equal(c.numpy(), np.ones(8, np.float32))
    d.copy_from(pyasc.to_device(np.full(8, 3.0, np.float32)))
    np.testing.assert_array_equal(d.numpy(), np.full(8, 3.0, np.float32))
    np.testing.assert_array_equal(g(c).numpy(), np.full(8, 2.0, np.float32))


def test_geared_device_array_inputs_are_padded_on_the_opaque_device(opaque):
    op = pyasc.operator(dynamic_shape=True, gears={0: [8]})(lambda x: (x * 2, x.max(axis=0)))
    host = -np.arange(1.0, 16.0, dtype=np.float32).reshape(5, 3)
    d = pyasc.to_device(host)
    y, m = op(d)
    assert isinstance(y, pyasc.DeviceArray) and y.device == "opaque-test" and y.shape == (8, 3)
    np.testing.assert_array_equal(np.asarray(y), np.pad(host, ((0, 3), (0, 0))) * 2)
    np.testing.assert_array_equal(np.asarray(m), host.max(axis=0))
    np.testing.assert_array_equal(np.asarray(d), host)
