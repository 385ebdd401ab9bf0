"""DeviceArray: allocation, alignment, views, copies, host access, DLPack, the memory pool."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyasc
import pytest


def test_construction_properties_and_alignment():
    d = pyasc.DeviceArray((4, 6), dtype=np.float64, alignment=4096)
    assert d.shape == (4, 6) and d.dtype == np.float64 and d.ndim == 2 and d.size == 24
    assert d.strides == (48, 8) and d.nbytes == 192 and d.itemsize == 8
    assert d.alignment == 4096 and d.data_ptr_int % 4096 == 0
    assert pyasc.DeviceArray(3).shape == (3,) and pyasc.DeviceArray(3).dtype == np.float32
    assert pyasc.DeviceArray((5,)).data_ptr_int % 128 == 0
    for bad in (3, 0, -128, 100):
        with pytest.raises(pyasc.AlignmentError) as e:
            pyasc.DeviceArray((4,), alignment=bad)
        assert e.value.code == 100001
    with pytest.raises(pyasc.ShapeError):
        pyasc.DeviceArray("big")
    with pytest.raises(pyasc.DTypeError):
        pyasc.DeviceArray((2,), dtype=np.complex64)


def test_copy_from_copy_to_numpy_and_array_protocol():
    src = np.arange(24, dtype=np.float32).reshape(4, 6)
    d = pyasc.DeviceArray((4, 6), dtype=np.float32)
    d.copy_from(src)
    src[0, 0] = 99  # the device copy is independent of the source
    host = d.numpy()
    assert host[0, 0] == 0 and np.array_equal(host[1:], src[1:])
    out = np.empty((4, 6), np.float32)
    d.copy_to(out)
    np.testing.assert_array_equal(out, host)
    np.testing.assert_array_equal(np.asarray(d), host)
    view = np.asarray(d, copy=False) if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else None
    view[0, 1] = -5.0  # a zero-copy view writes device memory
    assert d.numpy()[0, 1] == -5.0
    # Casting and broadcasting as NumPy's copyto does.
    d.copy_from(np.arange(6))
    np.testing.assert_array_equal(d.numpy(), np.broadcast_to(np.arange(6, dtype=np.float32), (4, 6)))
    with pytest.raises(pyasc.ShapeError):
        d.copy_from(np.ones(5))


def test_views_by_slicing_share_memory():
    base = np.arange(60, dtype=np.int64).reshape(3, 4, 5)
    d = pyasc.to_device(base)
    keys = [(1,), (slice(None, None, -1),), (Ellipsis, 2), (0, slice(1, 3), slice(None, None, 2)),
            (None, 1, Ellipsis, None), (-1, -1, -1), (slice(5, 9),), (slice(None), 3, slice(4, 0, -2))]
    for k in keys:
        v = d[k]
        assert isinstance(v, pyasc.DeviceArray)
        np.testing.assert_array_equal(v.numpy(), base[k])
        assert v.shape == base[k].shape
    v = d[1]
    v.copy_from(np.zeros((4, 5), np.int64))
    assert (d.numpy()[1] == 0).all() and (d.numpy()[0] == base[0]).all()
    with pytest.raises(IndexError):
        d[3]
    with pytest.raises(IndexError):
        d[0, 0, 0, 0]
    assert "DeviceArray(shape=[2], dtype=int64" in repr(d[0, 0, :2])


def test_to_device_empty_zeros_and_dtypes():
    for dt in (np.bool_, np.int32, np.int64, np.float32, np.float64):
        a = (np.arange(10) % 3).astype(dt)
        np.testing.assert_array_equal(pyasc.to_device(a).numpy(), a)
        assert pyasc.zeros((3, 2), dtype=dt).numpy().tolist() == np.zeros((3, 2), dt).tolist()
    assert pyasc.empty((2, 3), np.int32).shape == (2, 3)
    assert pyasc.to_device([1.5, 2.5], dtype=np.float32).numpy().dtype == np.float32
    z = pyasc.zeros(0)
    assert z.numpy().shape == (0,)


def test_dlpack_export_is_zero_copy():
    d = pyasc.to_device(np.arange(12, dtype=np.float64).reshape(3, 4))
    a = np.from_dlpack(d)
    assert a.__array_interface__["data"][0] == d.data_ptr_int
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4))
    t = d[:, ::-2]
    b = np.from_dlpack(t)
    np.testing.assert_array_equal(b, np.arange(12).reshape(3, 4)[:, ::-2])
    assert d.__dlpack_device__() == (1, 0)


def test_from_dlpack_imports_without_copying():
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    d = pyasc.from_dlpack(a)
    assert d.data_ptr_int == a.__array_interface__["data"][0]
    a[0, 0] = 42.0
    assert d.numpy()[0, 0] == 42.0
    r = pyasc.from_dlpack(a[::-1, 1:])
    np.testing.assert_array_equal(r.numpy(), a[::-1, 1:])


def test_jax_arrays_in_give_jax_arrays_out_zero_copy():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4)
    d = pyasc.from_dlpack(x)
    assert d.data_ptr_int == x.unsafe_buffer_pointer()

    @pyasc.operator
    def f(v):
        return v * 2.0 + 1.0

    before = pyasc.memory_stats()["bytes_in_use"]
    y = f(x)
    assert type(y) is type(x)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x) * 2 + 1)
    # The result aliases pyasc's pool memory: freeing it returns the block.
    assert pyasc.memory_stats()["bytes_in_use"] > before
    del y
    assert pyasc.memory_stats()["bytes_in_use"] == before


def test_memory_stats_and_empty_cache():
    pyasc.synchronize()
    s0 = pyasc.memory_stats()
    for key in ("bytes_in_use", "bytes_cached", "bytes_reserved", "peak_bytes_in_use", "allocations", "reuses"):
        assert key in s0
    d = pyasc.DeviceArray((1 << 20,), dtype=np.float32)
    s1 = pyasc.memory_stats()
    assert s1["bytes_in_use"] >= s0["bytes_in_use"] + 4 * (1 << 20)
    assert s1["allocations"] == s0["allocations"] + 1
    del d
    s2 = pyasc.memory_stats()
    assert s2["bytes_in_use"] == s0["bytes_in_use"] and s2["bytes_cached"] >= 4 * (1 << 20)
    pyasc.empty_cache()
    assert pyasc.memory_stats()["bytes_cached"] == 0


def test_memory_limit_gives_out_of_memory_error_not_abort():
    code = (
        "import numpy as np, pyasc\n"
        "a = pyasc.DeviceArray((4 << 20,), dtype=np.float32)\n"
        "try:\n"
        "    b = pyasc.DeviceArray((8 << 20,), dtype=np.float32)\n"
        "except pyasc.OutOfMemoryError as e:\n"
        "    print('OOM', e.code)\n"
        "c = pyasc.DeviceArray((1 << 20,), dtype=np.float32)\n"
        "print('still works', c.shape)\n"
    )
    env = dict(os.environ, PYASC_MEMORY_LIMIT="40M")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "OOM 200001" in out.stdout and "still works (1048576,)" in out.stdout


def test_masked_arrays_are_refused_not_unmasked():
    m = np.ma.masked_array(np.arange(3.0), mask=[0, 1, 0])
    with pytest.raises(pyasc.InvalidArgumentError, match="masked"):
        pyasc.operator(lambda t: t * 2)(m)
    with pytest.raises(pyasc.InvalidArgumentError, match="masked"):
        pyasc.to_device(m)
    with pytest.raises(pyasc.InvalidArgumentError, match="masked"):
        pyasc.to_device(np.zeros(3)).copy_from(m)
    # Their data, passed explicitly, is fine.
    np.testing.assert_array_equal(pyasc.operator(lambda t: t * 2)(m.filled(0.0)), [0.0, 0.0, 4.0])


def test_overlapping_copy_from_matches_copyto():
    a = pyasc.to_device(np.arange(10, dtype=np.float32))
    a[2:8].copy_from(a[0:6])
    want = np.arange(10, dtype=np.float32)
    np.copyto(want[2:8], want[0:6])
    np.testing.assert_array_equal(a.numpy(), want)
    b = pyasc.to_device(np.arange(10, dtype=np.float32))
    b[0:6].copy_from(b[2:8])
    want = np.arange(10, dtype=np.float32)
    np.copyto(want[0:6], want[2:8])
    np.testing.assert_array_equal(b.numpy(), want)
