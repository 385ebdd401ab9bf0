"""DLPack export: capsules over NumPy memory consumed by NumPy and JAX without copies."""

from __future__ import annotations

import ctypes
import gc
import weakref

import numpy as np
import pyasc
import pytest
from pyasc import _pyasc

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]


def _sample(dtype, shape=(3, 4)) -> np.ndarray:
    rng = np.random.default_rng(7)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 100).astype(dtype)


def _views(dtype):
    base = _sample(dtype, (4, 6))
    return {
        "contiguous": base,
        "transposed": base.T,
        "reversed": base[::-1, ::-1],
        "sliced": base[1:, ::2],
        "zero-d": np.array(base[2, 3]),
        "empty": base[:0],
    }


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ["contiguous", "transposed", "reversed", "sliced", "zero-d", "empty"])
def test_numpy_consumes_without_copy(dtype, kind):
    a = _views(dtype)[kind]
    b = np.from_dlpack(_pyasc._dlpack_selftest(a))
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(b, a)
    if a.size:
        assert np.shares_memory(a, b)
        assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0]
        assert b.strides == a.strides


def test_writes_are_visible_through_the_consumer():
    a = np.zeros(5, dtype=np.float64)
    b = np.from_dlpack(_pyasc._dlpack_selftest(a))
    a[2] = 42.0
    assert b[2] == 42.0


def test_consumer_keeps_the_owner_alive():
    a = np.arange(1000, dtype=np.int64)
    ref = weakref.ref(a)
    b = np.from_dlpack(_pyasc._dlpack_selftest(a))
    del a
    gc.collect()
    assert ref() is not None
    np.testing.assert_array_equal(b, np.arange(1000, dtype=np.int64))
    del b
    gc.collect()
    assert ref() is None


def test_unconsumed_capsule_releases_the_owner():
    a = np.arange(10, dtype=np.float32)
    ref = weakref.ref(a)
    cap = _pyasc._dlpack_selftest(a).__dlpack__()
    del a
    gc.collect()
    assert ref() is not None
    del cap
    gc.collect()
    assert ref() is None


def test_capsule_is_a_legacy_dltensor():
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.restype = ctypes.c_int
    is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    view = _pyasc._dlpack_selftest(np.ones(3))
    cap = view.__dlpack__()
    assert is_valid(cap, b"dltensor") == 1
    assert view.__dlpack_device__() == (1, 0)


def test_copy_true_is_refused():
    with pytest.raises(Exception, match="copy=True"):
        _pyasc._dlpack_selftest(np.ones(3)).__dlpack__(copy=True)


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_dropped_capsules_do_not_leak():
    # Each capsule owns a fresh 64 KiB array: a leak of owners would grow RSS by ~640 MB.
    def churn(n):
        for _ in range(n):
            cap = _pyasc._dlpack_selftest(np.ones(8192)).__dlpack__()
            del cap

    churn(500)
    gc.collect()
    before = _rss_bytes()
    churn(10_000)
    gc.collect()
    grown = _rss_bytes() - before
    assert grown < 8 << 20, f"RSS grew by {grown / 2**20:.1f} MiB over 10k dropped capsules"


def test_consumed_capsules_do_not_leak():
    def churn(n):
        for _ in range(n):
            b = np.from_dlpack(_pyasc._dlpack_selftest(np.ones(8192)))
            del b

    churn(500)
    gc.collect()
    before = _rss_bytes()
    churn(10_000)
    gc.collect()
    grown = _rss_bytes() - before
    assert grown < 8 << 20, f"RSS grew by {grown / 2**20:.1f} MiB over 10k consumed capsules"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ["contiguous", "transposed", "zero-d"])
def test_jax_consumes(dtype, kind):
    jnp = pytest.importorskip("jax.numpy", reason="jax is not installed")
    a = _views(dtype)[kind]
    got = np.asarray(jnp.from_dlpack(_pyasc._dlpack_selftest(a)))
    assert got.shape == a.shape
    # Without jax_enable_x64, JAX holds 64-bit values in 32 bits: compare in JAX's dtype.
    np.testing.assert_array_equal(got, a.astype(got.dtype))


def test_read_only_imports_are_never_written():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    d = pyasc.from_dlpack(a)
    with pytest.raises(pyasc.InvalidArgumentError, match="read-only"):
        d.copy_from(np.zeros(4, np.float32))
    view = np.asarray(d, copy=False)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 5
    np.testing.assert_array_equal(a, np.arange(4, dtype=np.float32))
    # Reading it is fine, and so is writing a writable import.
    np.testing.assert_array_equal(pyasc.operator(lambda t: t * 2)(d).numpy(), np.arange(4, dtype=np.float32) * 2)
    w = np.arange(3.0)
    pyasc.from_dlpack(w).copy_from(np.ones(3))
    np.testing.assert_array_equal(w, np.ones(3))


def test_jax_imports_are_read_only():
    import jax.numpy as jnp

    j = jnp.arange(3.0, dtype=jnp.float32)
    d = pyasc.from_dlpack(j)
    with pytest.raises(pyasc.InvalidArgumentError):
        d.copy_from(np.zeros(3, np.float32))
    np.testing.assert_array_equal(np.asarray(j), np.arange(3.0, dtype=np.float32))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_16_bit_jax_arrays_go_in_and_come_out_as_jax_arrays(name):
    import jax.numpy as jnp

    j = jnp.linspace(-3, 3, 101, dtype=getattr(jnp, name))
    out = pyasc.operator(lambda t: t * 2 + 1)(j)
    assert type(out) is type(j) and out.dtype == j.dtype
    want = np.asarray(j).astype(np.float64) * 2 + 1
    np.testing.assert_array_equal(np.asarray(out), want.astype(np.asarray(j).dtype))
    # A DeviceArray of 16-bit floats exports through DLPack too.
    d = pyasc.from_dlpack(j)
    assert d.dtype == np.asarray(j).dtype
    np.testing.assert_array_equal(d.numpy(), np.asarray(j))


def test_consumer_array_alive_at_interpreter_exit_is_freed_cleanly():
    # A NumPy view of a DeviceArray that lives until the modules are torn down: its owner is
    # released while the interpreter shuts down, which must neither abort nor print a panic.
    import subprocess
    import sys

    code = ("import numpy as np, pyasc\n"
            "d = pyasc.from_dlpack(np.arange(12, dtype=np.float32))\n"
            "view = np.from_dlpack(d)\n"
            "del d\n"
            "print(float(view.sum()))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "66.0"
    assert "panicked" not in r.stderr


def test_host_empty_arrays_are_writable_c_contiguous_and_reused_from_the_pool():
    shape, dtype = (1024, 1024), np.float32  # past the pool's size threshold
    a = _pyasc._host_empty(list(shape), dtype)
    assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % 128 == 0
    a[...] = 3.0
    assert float(a.sum(dtype=np.float64)) == 3.0 * a.size
    addr = a.ctypes.data
    del a
    gc.collect()
    b = _pyasc._host_empty(list(shape), dtype)
    assert b.ctypes.data == addr  # the freed block came back warm
    small = _pyasc._host_empty([3], np.int64)
    assert small.shape == (3,) and small.dtype == np.int64
