"""Kernel-language errors: type, code and the user's line for each misuse, and nothing
written when a launch is refused."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from pyasc import lang as asc

HERE = __file__


def line_of(marker):
    """The line number of the line of this file ending in ``# <marker>``."""
    with open(HERE) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return i
    raise AssertionError(marker)


def check(exc_info, cls, marker):
    e = exc_info.value
    assert type(e) is cls, type(e)
    assert e.code == cls.code and e.code != 0
    assert e.filename == HERE and e.lineno == line_of(marker), (e.filename, e.lineno, str(e))


X = np.arange(256, dtype=np.float32)


def test_buffers_beyond_the_unified_buffer():
    @pyasc.kernel
    def k(x):
        pipe = asc.TPipe()
        q = asc.TQue(asc.QuePosition.VECIN, 2)
        pipe.init_buffer(q, 2, 100 * 1024)  # ub

    with pytest.raises(pyasc.OutOfMemoryError) as ei:
        k[1](X)
    check(ei, pyasc.OutOfMemoryError, "ub")
    assert "196608" in str(ei.value)


def test_unaligned_data_copy_at_trace_time_and_at_launch():
    @pyasc.kernel
    def k(x, y, n):
        pipe = asc.TPipe()
        b = asc.TBuf()
        pipe.init_buffer(b, 1024)
        t = b.get(np.float32)
        asc.data_copy(t, x, 3)  # static
        asc.data_copy(y, t, n)

    with pytest.raises(pyasc.AlignmentError) as ei:
        k[1](X, X.copy(), 8)
    check(ei, pyasc.AlignmentError, "static")
    assert ei.value.code == 100001

    @pyasc.kernel
    def k2(x, y, n):
        pipe = asc.TPipe()
        b = asc.TBuf()
        pipe.init_buffer(b, 1024)
        t = b.get(np.float32)
        asc.data_copy(t, x, 16)
        asc.data_copy(y, t, n)  # dynamic

    y = np.zeros_like(X)
    k2[1](X, y, 16)
    np.testing.assert_array_equal(y[:16], X[:16])
    y[:] = 0
    with pytest.raises(pyasc.AlignmentError) as ei:
        k2[1](X, y, 5)
    check(ei, pyasc.AlignmentError, "dynamic")
    assert not y.any(), "a refused launch writes nothing"


def test_queue_misuse():
    def make(mode):
        @pyasc.kernel
        def k(x):
            pipe = asc.TPipe()
            q = asc.TQue(asc.QuePosition.VECIN, 1)
            pipe.init_buffer(q, 1, 256)
            if mode == "deque":
                q.deque(np.float32)  # deque
            elif mode == "alloc":
                q.alloc_tensor(np.float32)
                q.alloc_tensor(np.float32)  # alloc
            elif mode == "free":
                t = q.alloc_tensor(np.float32)
                q.free_tensor(t)
                q.free_tensor(t)  # free
            else:
                for _i in range(4):  # loop
                    q.alloc_tensor(np.float32)

        return k

    for mode in ("deque", "alloc", "free", "loop"):
        with pytest.raises(pyasc.TraceError) as ei:
            make(mode)[1](X)
        check(ei, pyasc.TraceError, mode)


def test_out_of_bounds_global_slices_static_and_at_launch():
    @pyasc.kernel
    def k(x):
        v = x[0:300]  # static slice
        del v

    with pytest.raises(pyasc.InvalidArgumentError) as ei:
        k[1](X)
    check(ei, pyasc.InvalidArgumentError, "static slice")

    @pyasc.kernel
    def k2(x, y):
        pipe = asc.TPipe()
        b = asc.TBuf()
        pipe.init_buffer(b, 64 * 4)
        t = b.get(np.float32)
        asc.data_copy(t, x[asc.block_idx() * 64:], 64)  # launch bounds
        asc.data_copy(y[asc.block_idx() * 64:], t, 64)

    y = np.zeros_like(X)
    k2[4](X, y)
    np.testing.assert_array_equal(y, X)
    y[:] = 0
    with pytest.raises(pyasc.InvalidArgumentError) as ei:
        k2[5](X, y)
    check(ei, pyasc.InvalidArgumentError, "launch bounds")
    assert "block 4" in str(ei.value)
    assert not y.any(), "blocks 0-3 were in bounds, but nothing runs once any block is not"


def test_block_dim_above_the_npu_core_count():
    @pyasc.kernel(device_type="npu")
    def k(x):
        pass

    k[48](X)
    with pytest.raises(pyasc.InvalidArgumentError) as ei:
        k[49](X)  # cores
    check(ei, pyasc.InvalidArgumentError, "cores")


def test_branch_on_a_launch_value_and_bad_launches():
    @pyasc.kernel
    def k(x, n):
        if n > 3:  # branch
            pass

    with pytest.raises(pyasc.TraceError) as ei:
        k[1](X, 5)
    check(ei, pyasc.TraceError, "branch")
    with pytest.raises(pyasc.InvalidArgumentError) as ei:
        k(X, 5)  # no block_dim
    check(ei, pyasc.InvalidArgumentError, "no block_dim")
    with pytest.raises(pyasc.InvalidArgumentError):
        k[0](X, 5)
    with pytest.raises(pyasc.InvalidArgumentError):
        k[1](X[::2], 5)


def test_estimate_uses_the_npu_cost_model():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "kernels" / "add.py"
    spec = importlib.util.spec_from_file_location("kernel_example_add_npu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = mod.make_add(device_type="npu")
    n = 48 * 8 * 4096
    x = np.zeros(n, np.float32)
    est = k.estimate(x, x, x, n, block_dim=48)
    serial = k.estimate(x, x, x, n, block_dim=48, double_buffer=False)
    model = pyasc.device.npu_twin.NPU_910B
    # 3 x 4 bytes per element over the HBM shared by 48 cores: the memory floor.
    floor = 12 * n / model.hbm_bytes_per_s
    assert floor <= est.total_s <= serial.total_s <= 1.5 * floor
    assert est.kernels[0].depth == 2 and serial.kernels[0].depth == 1
    assert est.bound in ("mte2", "mte3")
    with pytest.raises(pyasc.InvalidArgumentError):
        mod.add_custom.estimate(x, x, x, n, block_dim=8)


def test_integer_arguments_beyond_64_bits():
    @pyasc.kernel
    def k(x, n):
        asc.block_idx()

    for n in (1 << 63, -(1 << 63) - 1, 1 << 80):
        with pytest.raises(pyasc.InvalidArgumentError, match="64 bits") as ei:
            k[1](X, n)  # too wide
        check(ei, pyasc.InvalidArgumentError, "too wide")
    k[1](X, (1 << 63) - 1)  # the widest that fits runs


def test_a_launch_repeating_a_checked_shape_still_fails_on_any_new_one():
    @pyasc.kernel
    def scale(x, y, n):
        pipe = asc.TPipe()
        b = asc.TBuf()
        pipe.init_buffer(b, 2 * 32 * 4)
        t = b.get(np.float32)
        u = t[32:]
        for i in range(n // 32):
            asc.data_copy(t, x[i * 32:], 32)  # repeated copy in
            asc.muls(u, t, 2.0, 32)
            asc.data_copy(y[i * 32:], u, 32)

    x = np.arange(256, dtype=np.float32)
    for _ in range(3):
        y = np.zeros_like(x)
        scale[1](x, y, 256)
        np.testing.assert_array_equal(y, 2 * x)
    y = np.zeros_like(x)
    with pytest.raises(pyasc.InvalidArgumentError) as ei:
        scale[1](x, y, 288)
    check(ei, pyasc.InvalidArgumentError, "repeated copy in")
    assert not y.any()
    short, ys = x[:224].copy(), np.zeros(224, np.float32)
    with pytest.raises(pyasc.InvalidArgumentError) as ei:
        scale[1](short, ys, 256)
    check(ei, pyasc.InvalidArgumentError, "repeated copy in")
    assert not ys.any()
    y = np.zeros_like(x)
    scale[1](x, y, 256)
    np.testing.assert_array_equal(y, 2 * x)
