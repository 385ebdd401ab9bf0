"""Scans fused with their elementwise producers and consumers.

A scan along the last axis of rows of up to 16384 elements is an instruction of a row kernel:
``np.cumsum(x * 2 + 1, -1) / n`` is one kernel with no intermediate buffer (checked through
``get_compiled_op``). Values are checked against NumPy: floats against a float64 evaluation,
integers and maxima/minima exactly, for every scan kind, several dtypes, axes (other axes and
longer rows run the library kernel), empty and one-element rows and non-contiguous inputs.
"""

from __future__ import annotations

import numpy as np
import pyasc
import pytest

N = 1000


def _kernels(op, *args):
    """Return (kernel count, intermediate buffers, tile programs) of ``op``'s plan for ``args``."""
    c = op.get_compiled_op(*args)
    kernels = c.kernels()
    inter = [b for b in c.memory_usage() if b["role"] == "intermediate"]
    return len(kernels), inter, [c.tile_program(i) for i in range(len(kernels))]


FUSED = {
    "producer and consumer": lambda x: np.cumsum(x * 2 + 1, axis=-1) / N,
    "consumer": lambda x: np.cumsum(x, axis=-1) * 2 + 1,
    "exp consumer": lambda x: np.exp(np.cumsum(x, axis=-1) / N),
    "producer": lambda x: np.cumsum(np.abs(x - 0.5), axis=1),
    "cumprod": lambda x: np.cumprod(x * 0.02 + 0.99, axis=-1) * 2,
    "cummax": lambda x: np.maximum.accumulate(x * 3, axis=-1) + x,
    "cummin": lambda x: np.minimum.accumulate(-x, axis=-1) * 0.5,
    "logcumsumexp": lambda x: np.exp(x - np.logaddexp.accumulate(x * 2, axis=-1)),
    "two scans": lambda x: np.cumsum(x, axis=-1) - np.maximum.accumulate(x, axis=-1),
    "with a reduction": lambda x: np.cumsum(x, axis=-1) / x.sum(axis=-1, keepdims=True),
    "scan then reduction": lambda x: np.cumsum(x * x, axis=-1).max(axis=-1),
    "scan of a scan": lambda x: np.cumsum(np.cumsum(x, axis=-1) * 0.5, axis=-1),
    "row value spread": lambda x: np.cumsum(x.max(axis=-1, keepdims=True) + np.zeros_like(x), axis=-1),
    "comparison producer": lambda x: np.cumsum(x > 0.5, axis=-1) * 2,
    "where consumer": lambda x: np.where(x > 0.5, np.cumsum(x, axis=-1), np.maximum.accumulate(x, axis=-1)),
    "two results": lambda x: (lambda s: (s * s, s - 1))(np.cumsum(x, axis=-1)),
    "broadcast row operand": lambda x: np.cumsum(x + x[0], axis=-1),
    "nancumsum": lambda x: np.nancumsum(np.where(x > 0.9, np.nan, x), axis=-1),
}


@pytest.mark.parametrize("name", list(FUSED))
def test_row_scans_are_one_kernel_without_intermediates(name):
    f = FUSED[name]
    x = np.random.default_rng(1).random((64, N)).astype(np.float32)
    op = pyasc.operator(f)
    got = op(x)
    count, inter, programs = _kernels(op, x)
    assert count == 1, programs
    assert inter == [], inter
    assert "scan_" in programs[0] and "calls" not in programs[0], programs[0]
    want = f(x.astype(np.float64))
    # float32 products round at every step (as NumPy's); everything else at most a few times.
    np.testing.assert_allclose(got, want, rtol=2e-4 if name == "cumprod" else 2e-5, atol=1e-6)


def test_other_axes_and_long_rows_run_the_library_kernel():
    x = np.random.default_rng(2).random((40, 20000)).astype(np.float32)
    for f, arg in ((lambda a: np.cumsum(a * 2 + 1, axis=0) / N, x[:, :300]),
                   (lambda a: np.cumsum(a * 2 + 1, axis=-1) / N, x)):
        op = pyasc.operator(f)
        got = op(arg)
        count, _, programs = _kernels(op, arg)
        assert count == 2 and "calls cumsum" in programs[1], programs
        np.testing.assert_allclose(got, f(arg.astype(np.float64)), rtol=1e-6)


# -- values against NumPy ------------------------------------------------------------------

def _positions(shape, axis):
    """1-based position of every element along ``axis`` (for tolerances growing with it)."""
    n = shape[axis]
    k = np.arange(1, n + 1).reshape([n if d == axis % len(shape) else 1 for d in range(len(shape))])
    return np.broadcast_to(k, shape)


# name -> (producer, scan, consumer); producers keep values positive (no cancellation), so a
# relative bound holds everywhere.
FLOAT_CASES = {
    "cumsum": (lambda x: x * 2 + 1, np.cumsum, lambda s: s / N),
    "cumsum exp": (lambda x: x / N, np.cumsum, np.exp),
    "cumprod": (lambda x: x * 0.2 + 0.9, np.cumprod, lambda s: s * 2 + 1),
    "cummax": (lambda x: x * 3 + 1, np.maximum.accumulate, lambda s: s * 2),
    "cummin": (lambda x: 4 - x, np.minimum.accumulate, lambda s: s + 1),
    "logcumsumexp": (lambda x: x * 2 - 1, np.logaddexp.accumulate, lambda s: s * 0.5 + 8),
}


def _layouts(x):
    """``x`` as C-contiguous, Fortran-ordered, strided, reversed and broadcast arrays."""
    wide = np.repeat(x, 2, axis=-1)
    return {
        "contiguous": x,
        "fortran": np.asfortranarray(x),
        "strided": wide[..., ::2],
        "negative strides": x[::-1, ::-1],
        "broadcast": np.broadcast_to(x[:1], x.shape),
    }


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(FLOAT_CASES))
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_float_scans_with_producers_and_consumers_match_float64(case, dtype, axis):
    pro, scan, con = FLOAT_CASES[case]
    base = np.random.default_rng(3).random((37, 301)).astype(dtype)
    op = pyasc.operator(lambda a: con(scan(pro(a), axis=axis)))
    eps = np.finfo(dtype).eps
    for layout, x in _layouts(base).items():
        got = op(x)
        assert got.dtype == np.dtype(dtype) and got.shape == x.shape
        want = con(scan(pro(x.astype(np.float64)), axis=axis))
        pos = _positions(x.shape, axis)
        rtol = (4 * pos + 8) * eps if scan is np.cumprod else 8 * eps + 4 * pos * np.finfo(np.float64).eps
        err = np.abs(got - want)
        bad = err > rtol * np.abs(want)
        assert not bad.any(), (case, dtype, axis, layout, np.argwhere(bad)[:3].tolist(), got[bad][:3], want[bad][:3])


@pytest.mark.parametrize("case", ["cummax", "cummin"])
def test_maxima_and_minima_equal_numpys_in_the_same_dtype(case):
    pro, scan, con = FLOAT_CASES[case]
    x = np.random.default_rng(4).standard_normal((50, 777)).astype(np.float32)
    x[3, 100] = np.nan
    x[7, 5] = np.inf
    got = pyasc.operator(lambda a: con(scan(pro(a), axis=-1)))(x)
    np.testing.assert_array_equal(got, con(scan(pro(x), axis=-1)))


# dtype -> (producer, consumer): NumPy's integer rules (wrapping) in the producer's dtype,
# the scan's dtype after it.
INT_CASES = {
    "int32": (lambda x: x * 3 - 7, lambda s: s * 2 + 1),
    "int16": (lambda x: x - 5, lambda s: s - 1),
    "uint8": (lambda x: x + 200, lambda s: s + 1),
    "int64": (lambda x: x * 1_000_003, lambda s: s // 3),
    "bool": (np.logical_not, lambda s: s),
}


@pytest.mark.parametrize("dtype", list(INT_CASES))
@pytest.mark.parametrize("scan", [np.cumsum, np.cumprod, np.maximum.accumulate, np.minimum.accumulate])
@pytest.mark.parametrize("axis", [-1, 0])
def test_integer_scans_with_producers_and_consumers_are_exact(dtype, scan, axis):
    pro, con = INT_CASES[dtype]
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2, (23, 130)) if dtype == "bool" else rng.integers(-9, 10, (23, 130))
    base = base.astype(dtype)
    op = pyasc.operator(lambda a: con(scan(pro(a), axis=axis)))
    for layout, x in _layouts(base).items():
        got = op(x)
        with np.errstate(over="ignore"):
            want = con(scan(pro(x), axis=axis))
        assert got.dtype == want.dtype, (dtype, layout, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{dtype} {scan} axis={axis} {layout}")


@pytest.mark.parametrize("shape", [(5, 0), (0, 7), (5, 1), (1, 1), (1, 2), (2, 3, 1), (3, 2, 2), (6,), (2,)])
def test_empty_and_short_rows(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) * 0.5 + 1
    for _name, (pro, scan, con) in FLOAT_CASES.items():
        got = pyasc.operator(lambda a, pro=pro, scan=scan, con=con: con(scan(pro(a), axis=-1)))(x)
        want = con(scan(pro(x.astype(np.float64)), axis=-1))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    xi = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    got = pyasc.operator(lambda a: np.cumsum(a * 3, axis=-1) + 1)(xi)
    np.testing.assert_array_equal(got, np.cumsum(xi * 3, axis=-1) + 1)


def test_views_inside_the_operator_and_rows_of_3d_tensors():
    x = np.random.default_rng(6).random((4, 30, 50)).astype(np.float32)

    @pyasc.operator
    def f(a):
        t = np.swapaxes(a, 1, 2)          # rows of 30 along the last axis of a transposed view
        return np.cumsum(t * 2, axis=-1) + np.cumsum(a[:, ::-1, :], axis=1).transpose(0, 2, 1)

    got = f(x)
    x64 = x.astype(np.float64)
    want = np.cumsum(np.swapaxes(x64, 1, 2) * 2, -1) + np.cumsum(x64[:, ::-1, :], 1).transpose(0, 2, 1)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_nan_and_infinities_through_fused_scans():
    x = np.array([[1.0, np.nan, 3.0, -np.inf, 2.0], [np.inf, -np.inf, 1.0, 0.0, -0.0]], dtype=np.float32)
    for scan in (np.cumsum, np.cumprod, np.maximum.accumulate, np.minimum.accumulate, np.logaddexp.accumulate):
        with np.errstate(all="ignore"):
            want = scan(x.astype(np.float64) * 2, axis=-1) + 1
        got = pyasc.operator(lambda a, scan=scan: scan(a * 2, axis=-1) + 1)(x)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=str(scan))


def test_float32_sums_round_once_inside_fused_kernels():
    # The running sums of the float32 producer are exact float64 prefixes rounded once: more
    # accurate than NumPy's float32 loop.
    x = (np.random.default_rng(7).random((64, 16000)) + 0.1).astype(np.float32)
    op = pyasc.operator(lambda a: np.cumsum(a * 2, axis=-1))
    assert _kernels(op, x)[0] == 1
    ref = np.cumsum(x.astype(np.float64) * 2, axis=-1)
    ours = np.abs(op(x) - ref)
    assert (ours <= np.spacing(ref.astype(np.float32))).all()
    assert ours.max() <= np.abs(np.cumsum(x * 2, axis=-1) - ref).max()


def test_inputs_are_not_modified_and_results_do_not_alias_them():
    x = np.random.default_rng(8).random((16, 100)).astype(np.float32)
    keep = x.copy()
    got = pyasc.operator(lambda a: np.cumsum(a, axis=-1))(x)
    np.testing.assert_array_equal(x, keep)
    assert not np.shares_memory(got, x)


def test_dynamic_shapes_across_the_row_length_limit():
    # Each new shape is planned again: rows of up to 16384 fuse, longer, single and empty rows
    # run the routine, with the same results.
    op = pyasc.operator(lambda a: np.cumsum(a * 2 + 1, axis=-1) / 3, dynamic_shape=True)
    for shape, kernels in [((4, 100), 1), ((2, 16385), 2), ((7, 16384), 1), ((4, 1), 2), ((4, 0), 2),
                           ((3, 5, 7), 1)]:
        x = np.random.default_rng(9).random(shape).astype(np.float32)
        got = op(x)
        np.testing.assert_allclose(got, np.cumsum(x.astype(np.float64) * 2 + 1, axis=-1) / 3, rtol=1e-6)
        assert _kernels(op, x)[0] == kernels, shape
