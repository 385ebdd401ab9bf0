"""Python ints computed from arguments inside operators: exact, as Python computes them."""

import operator as _op

import numpy as np
import pyasc
import pytest

EXPRS = {
    "s*s": lambda s: s * s,
    "s//2": lambda s: s // 2,
    "(s*3)//4": lambda s: (s * 3) // 4,
    "-s//3": lambda s: (-s) // 3,
    "s%7-3": lambda s: s % 7 - 3,
    "s*s-s*s+5": lambda s: s * s - s * s + 5,
    "s**2//s": lambda s: s**2 // (s | 1),
    "abs(-s)>>3": lambda s: abs(-s) >> 3,
    "(s<<20)//(1<<20)": lambda s: (s << 20) // (1 << 20),
    "((s^5)|1)+~s*2": lambda s: ((s ^ 5) | 1) + ~s * 2,
}
SQUARES = {"s*s", "s*s-s*s+5", "s**2//s"}
VALUES = [0, 1, -1, 7, -(2**31), 2**40, -(2**40) - 3, 2**62 + 1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1]


def _reference(x, s, name):
    # Python computes the int exactly; NumPy then meets it with the array.
    return x + EXPRS[name](s)


@pytest.mark.parametrize("name", sorted(EXPRS))
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.uint64, np.int32], ids=lambda d: d.__name__)
def test_computed_python_ints_meet_arrays_as_in_numpy(name, dt):
    expr = EXPRS[name]
    op = pyasc.operator(lambda x, s: x + expr(s))
    x = np.arange(5).astype(dt)
    for s in VALUES:
        if name in SQUARES and s * s >= 2**127:
            # The host computes Python ints in 128 bits.
            with pytest.raises(pyasc.IntegerOverflowError, match="beyond 128 bits"):
                op(x, s)
            continue
        try:
            want = _reference(x, s, name)
        except OverflowError:
            with pytest.raises(OverflowError):
                op(x, s)
            continue
        got = op(x, s)
        assert got.dtype == want.dtype, (name, s)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} with s={s}")
    # Values never recompile: one plan per signature kind (int64-range and uint64-range ints).
    assert op.cache_info().compiles <= 2


def test_the_value_is_read_at_every_call_and_on_streams():
    op = pyasc.operator(lambda x, s, t: x * (s * t) + (s // t))
    x = np.linspace(-1, 1, 1000)
    stream = pyasc.Stream()
    outs = []
    with stream:
        for s, t in [(2**40, 2**30), (3, 7), (-(2**50), 2**20)]:
            outs.append((op(x, s, t), s, t))
    stream.synchronize()
    for got, s, t in outs:
        np.testing.assert_array_equal(np.asarray(got), x * float(s * t) + float(s // t))


def test_beyond_128_bits_and_out_of_dtype_are_overflow_errors():
    op = pyasc.operator(lambda x, s: x + s * s * s * s)
    np.testing.assert_array_equal(op(np.zeros(2), 2**31), np.zeros(2) + float(2**124))
    with pytest.raises(pyasc.IntegerOverflowError, match="beyond 128 bits"):
        op(np.zeros(2), 2**40)
    small = pyasc.operator(lambda x, s: x + s * s)
    with pytest.raises(OverflowError):
        np.zeros(2, np.int32) + 2**40 * 2**40
    with pytest.raises(pyasc.IntegerOverflowError, match=r"int32 \(at .*test_python_ints.py:\d+"):
        small(np.zeros(2, np.int32), 2**40)
    np.testing.assert_array_equal(small(np.zeros(2, np.int32), 3), np.full(2, 9, np.int32))


@pytest.mark.parametrize("cmp", [_op.lt, _op.le, _op.eq, _op.ne, _op.gt, _op.ge], ids=lambda f: f.__name__)
def test_comparisons_with_computed_ints_are_exact_within_int64(cmp):
    op = pyasc.operator(lambda x, s: cmp(x, s * 2 - 1))
    x = np.array([-(2**62), -3, 0, 5, 2**62], np.int64)
    for s in (-(2**61), -1, 0, 3, 2**61):
        np.testing.assert_array_equal(op(x, s), cmp(x, s * 2 - 1))
