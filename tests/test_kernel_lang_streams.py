"""Kernel-language launches on streams and with DeviceArray arguments, against NumPy.

A held stream (``_pyasc._hold_stream``) keeps everything queued behind it from running until
the test releases it, so each check of ordering or asynchrony does not depend on timing.
"""

from __future__ import annotations

import gc
import importlib.util
import pathlib
import sys
import weakref

import numpy as np
import pyasc
import pytest
from pyasc import _pyasc
from pyasc import lang as asc

KERNELS = pathlib.Path(__file__).resolve().parent.parent / "examples" / "kernels"


def load(name):
    spec = importlib.util.spec_from_file_location(f"kernel_stream_example_{name}", KERNELS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ADD, GELU = load("add"), load("gelu")
add, gelu = ADD.add_custom, GELU.gelu


def inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)


def gelu_ref(v):
    return GELU.reference(v)


def test_a_stream_launch_returns_at_once_and_runs_after_the_work_queued_before_it():
    n = 100_003
    x, y = inputs(n)
    z = np.zeros(n, np.float32)
    s = pyasc.Stream()
    hold = _pyasc._hold_stream(s)
    add[8, s](x, y, z, n)
    done = s.record_event()
    # The launch returned while the stream cannot have run it.
    assert not s.query() and not done.query()
    assert not z.any()
    hold.release()
    s.synchronize()
    assert done.query()
    np.testing.assert_array_equal(z, x + y)


def test_a_launch_of_numpy_arrays_without_a_stream_runs_now_even_inside_a_stream_block():
    n = 5000
    x, y = inputs(n, 1)
    z = np.zeros(n, np.float32)
    s = pyasc.Stream()
    hold = _pyasc._hold_stream(s)
    with pyasc.stream(s):
        add[4](x, y, z, n)
    # Ran on the caller's thread although the current stream was held, as operators on NumPy do.
    np.testing.assert_array_equal(z, x + y)
    hold.release()
    s.synchronize()


def test_kernel_between_operators_on_one_stream_sees_and_feeds_their_results():
    @pyasc.operator
    def heavy(v):
        for _ in range(6):
            v = pyasc.sin(v) * 1.5 + pyasc.cos(v)
        return v

    @pyasc.operator
    def after(v):
        return v * 2.0 + 1.0

    n = 1 << 21
    x, y = inputs(n, 2)
    ref = x.astype(np.float64)
    for _ in range(6):
        ref = np.sin(ref) * 1.5 + np.cos(ref)
    ref = ((ref + y) * 2.0 + 1.0)
    heavy(pyasc.to_device(x[:1024])).numpy()  # compile outside the timed order
    s = pyasc.Stream()
    xd = pyasc.to_device(x)
    z = pyasc.zeros(n, np.float32)
    hold = _pyasc._hold_stream(s)
    with pyasc.stream(s):
        a = heavy(xd)
    add[8, s](a, y, z, n)  # DeviceArray and NumPy arguments mixed
    with pyasc.stream(s):
        w = after(z)
    assert not s.query()
    hold.release()
    np.testing.assert_allclose(w.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_device_arrays_without_a_stream_queue_on_the_current_stream():
    n = 70_001
    x, y = inputs(n, 3)
    xd, yd = pyasc.to_device(x), pyasc.to_device(y)
    zd, gd = pyasc.zeros(n, np.float32), pyasc.zeros(n, np.float32)
    s = pyasc.Stream()
    hold = _pyasc._hold_stream(s)
    with pyasc.stream(s):
        add[8](xd, yd, zd, n)
        gelu[8](zd, gd, n)
    assert not s.query()
    hold.release()
    np.testing.assert_array_equal(zd.numpy(), x + y)
    np.testing.assert_allclose(gd.numpy(), gelu_ref(x + y), rtol=0, atol=1e-5)
    # On the default stream, read back without any explicit synchronisation.
    out = pyasc.empty(n, np.float32)
    add[3](xd, y, out, n)
    np.testing.assert_array_equal(out.numpy(), x + y)


def test_copy_from_on_a_stream_feeds_the_kernel_and_numpy_waits_for_it():
    n = 4099
    x, y = inputs(n, 4)
    xd, zd = pyasc.empty(n, np.float32), pyasc.zeros(n, np.float32)
    s = pyasc.Stream()
    hold = _pyasc._hold_stream(s)
    with pyasc.stream(s):
        xd.copy_from(x)
    add[2, s](xd, y, zd, n)
    hold.release()
    np.testing.assert_array_equal(zd.numpy(), x + y)


@pyasc.kernel
def window(x, y, off):
    """Copy the 64 values at ``off`` of ``x`` to ``y`` (out of bounds for a large ``off``)."""
    pipe = asc.TPipe()
    q = asc.TQue(asc.QuePosition.VECIN, 1)
    pipe.init_buffer(q, 1, 64 * 4)
    t = q.alloc_tensor(np.float32)
    asc.data_copy(t, x[off:off + 64], 64)
    asc.data_copy(y[off:], t, 64)
    q.free_tensor(t)


def test_errors_surface_at_the_next_synchronize_with_the_kernel_name_and_launch_line():
    x = np.arange(256, dtype=np.float32)
    y = np.zeros_like(x)
    s = pyasc.Stream()
    hold = _pyasc._hold_stream(s)
    line = sys._getframe().f_lineno + 1
    window[1, s](x, y, 300)  # out of bounds: found when the kernel runs, not at the launch
    hold.release()
    with pytest.raises(pyasc.InvalidArgumentError) as err:
        s.synchronize()
    msg = str(err.value)
    assert "'window'" in msg and f"{__file__}:{line}" in msg and "out of bounds" in msg, msg
    assert not y.any(), "nothing is written by a launch whose accesses fail the check"
    # Reported once; the stream keeps working.
    s.synchronize()
    window[1, s](x, y, 128)
    s.synchronize()
    np.testing.assert_array_equal(y[128:192], x[128:192])


def test_a_failed_kernel_poisons_the_device_arrays_it_writes():
    xd = pyasc.to_device(np.arange(256, dtype=np.float32))
    yd = pyasc.zeros(256, np.float32)
    line = sys._getframe().f_lineno + 1
    window[1](xd, yd, 250)
    with pytest.raises(pyasc.InvalidArgumentError) as err:
        yd.numpy()
    assert "'window'" in str(err.value) and f"{__file__}:{line}" in str(err.value)
    with pytest.raises(pyasc.InvalidArgumentError):
        yd.numpy()  # the contents stay invalid


def test_two_streams_ordered_by_events_with_numpy_arrays():
    n = 200_003
    x, y = inputs(n, 5)
    z = np.zeros(n, np.float32)
    g = np.zeros(n, np.float32)
    s1, s2 = pyasc.Stream(), pyasc.Stream()
    hold = _pyasc._hold_stream(s1)
    start = s1.record_event()
    add[8, s1](x, y, z, n)
    end = s1.record_event()
    s2.wait_event(end)
    gelu[8, s2](z, g, n)
    finished = s2.record_event()
    assert not s2.query() and not finished.query()
    hold.release()
    finished.synchronize()
    np.testing.assert_array_equal(z, x + y)
    np.testing.assert_allclose(g, gelu_ref(x + y), rtol=0, atol=1e-5)
    assert start.elapsed_time(end) >= 0.0
    # pyasc.synchronize() waits for kernels on every stream.
    h = pyasc.Stream()
    hold = _pyasc._hold_stream(h)
    w = np.zeros(n, np.float32)
    add[4, h](z, z, w, n)
    hold.release()
    pyasc.synchronize()
    np.testing.assert_array_equal(w, 2 * (x + y))


def test_device_arrays_are_ordered_across_streams_without_events():
    n = 50_000
    x, y = inputs(n, 6)
    zd, gd = pyasc.zeros(n, np.float32), pyasc.zeros(n, np.float32)
    s1, s2 = pyasc.Stream(), pyasc.Stream()
    hold = _pyasc._hold_stream(s1)
    add[8, s1](pyasc.to_device(x), pyasc.to_device(y), zd, n)
    gelu[8, s2](zd, gd, n)  # reads what s1 writes: waits for it
    assert not s2.query()
    hold.release()
    np.testing.assert_allclose(gd.numpy(), gelu_ref(x + y), rtol=0, atol=1e-5)


def test_arguments_dropped_right_after_the_launch_stay_alive_until_it_ran():
    n = 30_011
    x, y = inputs(n, 7)
    want = x + y
    s = pyasc.Stream()
    z = np.zeros(n, np.float32)
    zd = pyasc.zeros(n, np.float32)
    hold = _pyasc._hold_stream(s)
    xa, ya = x.copy(), y.copy()
    alive = weakref.ref(xa)
    add[8, s](xa, ya, z, n)
    add[8, s](pyasc.to_device(x), pyasc.to_device(y), zd, n)
    del xa, ya, x, y
    gc.collect()
    assert alive() is not None, "the queued launch holds its arguments"
    hold.release()
    s.synchronize()
    np.testing.assert_array_equal(z, want)
    np.testing.assert_array_equal(zd.numpy(), want)
    s.synchronize()
    gc.collect()
    assert alive() is None, "the launch let its arguments go once it ran"


def test_launch_argument_errors_are_raised_by_the_launch_at_the_users_line():
    n = 1024
    x, y = inputs(n, 8)
    s = pyasc.Stream()
    zd = pyasc.zeros(n, np.float32)
    # A DeviceArray over read-only memory cannot be written.
    ro = np.zeros(n, np.float32)
    ro.flags.writeable = False
    line = sys._getframe().f_lineno + 2
    with pytest.raises(pyasc.InvalidArgumentError, match="read-only") as err:
        add[2, s](x, y, pyasc.from_dlpack(ro), n)
    assert err.value.lineno == line
    # Not C-contiguous.
    wide = pyasc.zeros(2 * n, np.float32)
    with pytest.raises(pyasc.InvalidArgumentError, match="C-contiguous"):
        add[2, s](wide[::2], y, zd, n)
    # On the NPU twin, global memory starts on 32-byte boundaries.
    add_npu = ADD.make_add(device_type="npu")
    xn = pyasc.to_device(np.concatenate([[0], x]).astype(np.float32), device="npu")
    with pytest.raises(pyasc.AlignmentError, match="100001") as err:
        add_npu[2](xn[1:], y, zd, n)
    assert err.value.code == 100001
    # A device whose memory the host cannot address.
    old = _pyasc._use_opaque_test_device(True)
    try:
        opaque = pyasc.zeros(n, np.float32)
    finally:
        _pyasc._use_opaque_test_device(old)
    with pytest.raises(pyasc.DeviceError, match="np.asarray"):
        add[2](x, y, opaque, n)
    s.synchronize()
    assert not zd.numpy().any(), "no rejected launch ran"


def test_npu_kernels_take_aligned_npu_device_arrays():
    n = 10_000
    x, y = inputs(n, 9)
    add_npu = ADD.make_add(device_type="npu")
    xn, yn = pyasc.to_device(x, device="npu"), pyasc.to_device(y, device="npu")
    zn = pyasc.zeros(n, np.float32, device="npu")
    s = pyasc.Stream()
    add_npu[8, s](xn, yn, zn, n)
    np.testing.assert_array_equal(zn.numpy(), x + y)
