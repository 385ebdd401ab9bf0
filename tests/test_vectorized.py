"""@pyasc.vectorized_operator: scalar functions with control flow applied elementwise, checked
against calling the same Python function on every element (NumPy scalars, as a scalar call
sees them), with NaN, infinities, loops that never run, argument-bound loops, early returns,
and/or masks, integer and float dtypes and broadcasting; typed errors with the user's line."""

from __future__ import annotations

import math

import numpy as np
import pyasc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyasc.errors import DTypeError, InvalidArgumentError, ShapeError, TraceError

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -7.25, 1e30, -1e-30]


def per_element(fn, *args):
    """The reference: ``fn`` called on every element of the broadcast arguments."""
    arrays = [np.asarray(a) if not isinstance(a, (bool, int, float)) else a for a in args]
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    bcast = [np.broadcast_to(a, shape) if isinstance(a, np.ndarray) else a for a in arrays]
    out = np.empty(shape, dtype=object)
    with np.errstate(all="ignore"):
        for idx in np.ndindex(*shape):
            out[idx] = fn(*[a[idx] if isinstance(a, np.ndarray) else a for a in bcast])
    return out


def check(op, fn, *args, rtol=1e-6):
    """Compare ``op(*args)`` against the per-element reference (cast to ``op``'s dtype)."""
    saved = [np.array(a, copy=True) for a in args]
    with np.errstate(all="ignore"):
        got = op(*args)
    for a, s in zip(args, saved):
        np.testing.assert_array_equal(np.asarray(a), s)  # inputs never modified
    want = per_element(fn, *args)
    got_arr = np.asarray(got)
    with np.errstate(all="ignore"):
        want_arr = want.astype(got_arr.dtype) if want.size else np.empty(want.shape, got_arr.dtype)
    assert got_arr.shape == want_arr.shape
    if got_arr.dtype.kind == "f":
        np.testing.assert_allclose(got_arr, want_arr, rtol=rtol, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(got_arr, want_arr)
    return got


def floats(dtype, n):
    return st.lists(st.one_of(st.sampled_from(SPECIAL), st.floats(-1e3, 1e3, width=32)), min_size=n,
                    max_size=n).map(lambda v: np.array(v, dtype=dtype))


def clip_relu(v, hi):
    if v < 0.0:
        return 0.0
    return v if v < hi else hi


def piecewise(v):
    if v < -1.0:
        return -1.0 - 0.5 * (v + 1.0)
    elif v < 1.0:
        return v * v * v
    else:
        return math.sqrt(v)


def nested_returns(a, b):
    if a > 0:
        if b > 0:
            return a + b
        elif b < -10:
            return a
        a = a * 2
    elif a != a:  # NaN
        return -1
    return a - b


def short_circuit(x):
    # Masked evaluation must never raise: 1 / x runs on every lane, x == 0 included.
    if x != 0 and 1 / x > 2:
        return 1
    if not (x > -1 or x < -5):
        return 2
    return 3


def halvings(x, limit):
    n = 0
    while x > limit:
        x = x * 0.5
        n += 1
    return n


def power_sum(x, k):
    s = 0.0
    for i in range(k):
        s += x ** i
    return s


def countdown(n):
    total = 0
    for i in range(n, 0, -2):
        total += i
    return total


def mandel(cx, cy, maxiter):
    x = 0.0
    y = 0.0
    n = 0
    while x * x + y * y <= 4.0 and n < maxiter:
        x, y = x * x - y * y + cx, 2.0 * x * y + cy
        n += 1
    return n


def first_over(x, limit):
    i = 0
    while True:
        if x * i > limit:
            return i
        if i >= 50:
            return -1
        i += 1


def bool_values(a, b):
    c = a or b
    return (a and b) + c * 0.5


def int_math(a, b):
    q = a // (b if b != 0 else 1)
    r = a % 7
    return max(q, r) - min(a, b) + abs(b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_branches_match_a_per_element_call(dtype, data):
    x = data.draw(floats(dtype, 40))
    check(pyasc.vectorized_operator(clip_relu), clip_relu, x, 1.5)
    # Exact: float32 arithmetic as NumPy scalars do it, math.sqrt rounded once to float32.
    check(pyasc.vectorized_operator(piecewise), piecewise, x, rtol=0)
    check(pyasc.vectorized_operator(short_circuit), short_circuit, x)
    y = data.draw(floats(dtype, 40))
    check(pyasc.vectorized_operator(nested_returns), nested_returns, x, y)


@settings(max_examples=25, deadline=None)
@given(x=floats(np.float64, 64), limit=st.sampled_from([1.0, 0.0, np.inf, 1e6]))
def test_while_loops_stop_per_lane(x, limit):
    # +inf halves to +inf forever in Python too: only a limit of +inf stops it.
    if limit != np.inf:
        x = np.where(x == np.inf, 3.0, x)
    check(pyasc.vectorized_operator(halvings), halvings, x, limit)


@settings(max_examples=20, deadline=None)
@given(k=st.lists(st.integers(-3, 12), min_size=30, max_size=30), x=floats(np.float64, 30))
def test_for_loops_with_argument_bounds(k, x):
    k = np.array(k, dtype=np.int64)
    check(pyasc.vectorized_operator(power_sum), power_sum, x, k)
    check(pyasc.vectorized_operator(power_sum), power_sum, x, 0)  # a loop that never runs
    check(pyasc.vectorized_operator(countdown), countdown, k)


@settings(max_examples=20, deadline=None)
@given(a=st.lists(st.integers(-100, 100), min_size=50, max_size=50),
       b=st.lists(st.integers(-100, 100), min_size=50, max_size=50),
       dtype=st.sampled_from([np.int32, np.int64, np.int16]))
def test_integer_dtypes(a, b, dtype):
    a, b = np.array(a, dtype=dtype), np.array(b, dtype=dtype)
    got = check(pyasc.vectorized_operator(int_math), int_math, a, b)
    assert got.dtype == dtype
    check(pyasc.vectorized_operator(first_over), first_over, a.astype(np.float64), 30.0)


def test_mandelbrot_and_broadcasting():
    cx = np.linspace(-2, 1, 33)[None, :]
    cy = np.linspace(-1.5, 1.5, 17)[:, None]
    got = check(pyasc.vectorized_operator(mandel), mandel, cx, cy, 60)
    assert got.shape == (17, 33) and got.dtype == np.int64
    assert got.max() == 60 and got.min() >= 1
    # A larger grid over many tiles and both cores.
    cx = np.linspace(-2, 1, 300)[None, :]
    cy = np.linspace(-1.5, 1.5, 200)[:, None]
    ref = per_element(mandel, cx, cy, 40).astype(np.int64)
    np.testing.assert_array_equal(pyasc.vectorized_operator(mandel)(cx, cy, 40), ref)
    # Extents that are multiples of 16 run in square blocks of the grid (strided loads).
    cx = np.linspace(-2, 1, 160)[None, :]
    cy = np.linspace(-1.5, 1.5, 128)
    full_cy = np.repeat(cy[:, None], 160, axis=1)[:, ::-1]  # a reversed (negative-stride) view
    ref = per_element(mandel, cx, full_cy, 30).astype(np.int64)
    np.testing.assert_array_equal(pyasc.vectorized_operator(mandel)(cx, full_cy, 30), ref)
    # Whole C-contiguous grids: each row of a block moves with one copy.
    gx, gy = np.meshgrid(np.linspace(-2, 1, 160), np.linspace(-1.5, 1.5, 112))
    ref = per_element(mandel, gx, gy, 25).astype(np.int64)
    np.testing.assert_array_equal(pyasc.vectorized_operator(mandel)(gx, gy, 25), ref)
    np.testing.assert_array_equal(pyasc.vectorized_operator(mandel)(gx[None], gy, 25), ref[None])


def collatz_steps(n, cap):
    steps = 0
    while n != 1 and steps < cap:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def grow_until(x, scale, limit):
    v = x
    i = 0
    while i < 300:
        v = v * scale + 0.25
        if v > limit:
            return i + v * 0.0
        i += 1
    return -1.0


@pytest.mark.parametrize("n", [700, 5_003])
def test_loops_whose_lanes_finish_far_apart(n):
    # Iteration counts from 0 to a few hundred within one tile: the VM packs the lanes still
    # looping together as others finish; every lane must still get its own result.
    rng = np.random.default_rng(n)
    start = rng.integers(1, 3000, n).astype(np.int64)
    start[::97] = 1  # lanes that never loop
    check(pyasc.vectorized_operator(collatz_steps), collatz_steps, start, 150)
    check(pyasc.vectorized_operator(collatz_steps), collatz_steps, start.reshape(1, n), np.int64(40))
    x = rng.uniform(-1, 2, n).astype(np.float32)
    scale = rng.uniform(0.5, 1.2, n).astype(np.float32)  # below 1: some lanes never reach the limit
    check(pyasc.vectorized_operator(grow_until), grow_until, x, scale, np.float32(90.0), rtol=0)
    # 2-D grids walked in square blocks, with lanes leaving at every iteration count.
    gx, gy = np.meshgrid(np.linspace(-2, 1, 96), np.linspace(-1.5, 1.5, 80))
    check(pyasc.vectorized_operator(mandel), mandel, gx, gy, 200)


def test_result_dtypes_follow_numpy():
    op = pyasc.vectorized_operator(clip_relu)
    assert op(np.ones(3, np.float32), 2.0).dtype == np.float32  # Python floats are weak
    assert op(np.ones(3, np.float32), np.float64(2.0)).dtype == np.float64
    assert op(np.ones(3, np.int32), 2).dtype == np.float64  # return 0.0 with int32 v -> float64
    b = pyasc.vectorized_operator(bool_values)
    check(b, bool_values, np.array([True, False, True, False]), np.array([True, True, False, False]))
    r = pyasc.vectorized_operator(halvings)(5.0, 1.0)  # scalars in, a scalar out
    assert np.ndim(r) == 0 and r == halvings(5.0, 1.0)
    r = op(np.float32(2.0), 1.0)
    assert np.ndim(r) == 0 and r.dtype == np.float32 and r == 1.0
    assert pyasc.vectorized_operator(uses_late_global)(np.array([0.5, 2.0])).tolist() == [-0.5, 2.0]
    e = pyasc.vectorized_operator(halvings)(np.zeros((0, 3)), 1.0)
    assert e.shape == (0, 3)


def test_modes_and_whole_array_fallback():
    assert pyasc.vectorized_operator(piecewise).mode(np.ones(4)) == "fused"
    assert pyasc.vectorized_operator(halvings).mode(np.ones(4), 1.0) == "loop"
    text = pyasc.vectorized_operator(halvings).tile_program(np.ones(4), 1.0)
    assert "while any" in text
    # The loop state that is read after the loop is frozen by a select; the float64 sqrt of a
    # float32 value stored as float32 is computed in float32.
    text = pyasc.vectorized_operator(mandel).tile_program(np.ones(4), np.ones(4), 10)
    assert "select(" in text and "mul(mul(" in text
    text = pyasc.vectorized_operator(piecewise).tile_program(np.ones(4, np.float32))
    assert "sqrt" in text and "float64" not in text

    def pairwise_close(points):
        return np.abs(points[:, None] - points[None, :]) < 0.5

    @pyasc.vectorized_operator
    def close_count(points):
        close = pairwise_close(points)
        return close.sum(axis=1)

    pts = np.array([0.0, 0.2, 1.0, 3.0, 3.1])
    assert close_count.mode(pts) == "whole"
    np.testing.assert_array_equal(close_count(pts), [2, 2, 1, 2, 2])


def test_device_arrays_and_options():
    op = pyasc.vectorized_operator(device_type="npu", kernel_name="clipper")(clip_relu)
    x = np.linspace(-2, 2, 9).astype(np.float32)
    d = pyasc.to_device(x)
    out = op(d, 1.0)
    assert isinstance(out, pyasc.DeviceArray)
    np.testing.assert_array_equal(np.asarray(out), op(x, 1.0))
    loop = pyasc.vectorized_operator(device_type="NPU")(halvings)
    out = loop(pyasc.to_device(np.array([8.0, 0.5])), 1.0)
    assert isinstance(out, pyasc.DeviceArray)
    np.testing.assert_array_equal(np.asarray(out), [3, 0])
    with pytest.raises(InvalidArgumentError):
        pyasc.vectorized_operator(device_type="gpu")(clip_relu)
    with pytest.raises(InvalidArgumentError):
        pyasc.vectorized_operator(gears="pow2")(clip_relu)
    with pytest.raises(ShapeError):
        op(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(InvalidArgumentError):
        op(np.ones(3))


def uses_late_global(v):
    if v > LATE_LIMIT:  # defined below: globals are read when a signature compiles
        return v
    return -v


LATE_LIMIT = 1.0


def _line_of(fn, text):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def unknown_call(v):
    if v > 0:
        return sorted([v])[0]
    return v


def uses_try(v):
    try:
        return v
    except ValueError:
        return 0.0


def builds_list(v):
    out = [v]
    return out


def recursive(v):
    if v > 1:
        return recursive(v - 1)
    return v


def uses_break(v):
    while v > 0:
        v -= 1
        if v < 3:
            break
    return v


def no_return_on_some_path(v):
    if v > 0:
        return v


@pytest.mark.parametrize("fn, text", [
    (unknown_call, "sorted("),
    (uses_try, "try:"),
    (builds_list, "out = [v]"),
    (recursive, "return recursive"),
    (uses_break, " break"),
    (no_return_on_some_path, "if v > 0"),
])
def test_unsupported_constructs_name_the_line(fn, text):
    op = pyasc.vectorized_operator(fn)
    with pytest.raises(TraceError) as e:
        op(np.ones(4))
    line = _line_of(fn, text)
    assert e.value.lineno == line and e.value.filename == __file__
    assert f"{__file__}:{line}" in str(e.value)


def test_unsupported_dtypes_are_typed_errors():
    op = pyasc.vectorized_operator(clip_relu)
    with pytest.raises(DTypeError):
        op(np.ones(3, np.float16), 1.0)
    with pytest.raises(DTypeError):
        op(np.ones(3, np.complex64), 1.0)


def escape_state(cx, cy, maxiter):
    x = 0.0
    y = 0.0
    n = 0
    while x * x + y * y <= 4.0 and n < maxiter:
        x, y = x * x - y * y + cx, 2.0 * x * y + cy
        n += 1
    return x - y + 1000.0 * n


def test_loop_carried_values_reach_their_lanes_when_lanes_leave_at_different_times():
    # A count carried through `select` then a copy (which the VM runs as a swap of register
    # buffers) and two coordinates carried directly; lanes leave over 0..60 iterations, so the
    # VM packs the running lanes several times. Every lane's final state must be its own.
    rng = np.random.default_rng(5)
    cx = rng.uniform(-2.0, 0.6, 3_001)
    cy = rng.uniform(-1.2, 1.2, 3_001)
    cx[::13] = 5.0  # lanes that never loop
    op = pyasc.vectorized_operator(escape_state)
    assert "copy" in op.tile_program(cx, cy, 60)
    got = op(cx, cy, 60)
    want = per_element(escape_state, cx, cy, 60).astype(np.float64)
    np.testing.assert_array_equal(got, want)


def newton_root(v):
    """Square root by Newton steps until the square is close (float32 or float64 lanes)."""
    if v <= 0.0:
        return 0.0
    x = v
    i = 0
    while abs(x * x - v) > 1e-5 * v and i < 60:
        x = 0.5 * (x + v / x)
        i += 1
    return -x if i % 2 == 1 else x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 63, 127, 128, 129, 1_000])
def test_loops_run_strip_by_strip_match_per_element_calls(dtype, n):
    # Bodies of arithmetic, abs, division, comparisons and selects run 128 lanes at a time until
    # each strip's lanes are done; strips of every length, NaN and infinities included.
    rng = np.random.default_rng(n)
    v = rng.uniform(0.0, 1e4, n).astype(dtype)
    v[::7] = np.resize(np.array(SPECIAL, dtype), len(v[::7]))
    v[1::11] = np.inf
    v[2::13] = np.nan
    check(pyasc.vectorized_operator(newton_root), newton_root, v, rtol=0)
