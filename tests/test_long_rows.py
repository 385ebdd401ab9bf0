"""Reductions over rows longer than a tile run in chunks: scratch stays a chunk (a broadcast
row of 2^28 elements needs no row-sized memory), results match float64 references, NaN and
ties follow NumPy across chunk boundaries, and the bytes do not depend on the thread count."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyasc
import pytest

N = 5 * (1 << 14) + 123  # several chunks and a partial one


def _ulps(got, want):
    got = np.asarray(got, np.float64)
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.max(np.abs(got - want) / spacing)


def test_sums_of_long_rows_are_within_one_ulp_of_float64():
    x = np.random.default_rng(0).standard_normal((3, N)).astype(np.float32)
    op = pyasc.operator(lambda x: ((x * 2).sum(axis=-1), np.exp(x).sum(axis=-1), x.mean(axis=-1)))
    s, e, m = op(x)
    x64 = x.astype(np.float64)
    assert s.dtype == np.float32 and _ulps(s, (x64 * 2).sum(axis=-1)) <= 1
    assert _ulps(e, np.exp(x64).sum(axis=-1)) <= 1
    assert _ulps(m, x64.mean(axis=-1)) <= 1


def test_extremes_nan_and_ties_across_chunks_follow_numpy():
    x = np.random.default_rng(1).standard_normal((4, N))
    x[0, 3 * (1 << 14) + 5] = 50.0
    x[0, (1 << 14) + 7] = 50.0  # an equal maximum in an earlier chunk: its index wins
    x[1, 2 * (1 << 14)] = np.nan  # NaN propagates, and argmax/argmin point at it
    x[1, 4 * (1 << 14)] = np.nan
    x[2, N - 1] = -70.0  # the minimum in the last, partial chunk

    def f(x):
        return x.max(axis=-1), x.min(axis=-1), np.argmax(x, axis=-1), np.argmin(x, axis=-1)

    for got, want in zip(pyasc.operator(f)(x), f(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_integer_and_bool_reductions_of_long_rows():
    x = np.random.default_rng(2).integers(-(2**40), 2**40, (2, N), dtype=np.int64)
    x[1, -1] = 2**62  # the sum wraps as NumPy's does

    def f(x):
        return x.sum(axis=-1), x.max(axis=-1), (x > 2**39).any(axis=-1), (x > -(2**41)).all(axis=-1), x.prod(axis=-1)

    with np.errstate(over="ignore"):
        for got, want in zip(pyasc.operator(f)(x), f(x)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_element_outputs_beside_a_long_row_reduction():
    x = np.arange(2 * N, dtype=np.float64).reshape(2, N)
    y, s = pyasc.operator(lambda x: (x * 3, (x * 3).sum(axis=-1)))(x)
    np.testing.assert_array_equal(y, x * 3)
    np.testing.assert_array_equal(s, (x * 3).sum(axis=-1))


def _run(code, env=None):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_broadcast_row_of_2_pow_28_needs_no_row_sized_scratch():
    code = """
        import resource, numpy as np, pyasc
        x = np.broadcast_to(np.float32(1.5), (2, 2**28))
        f = pyasc.operator(lambda x: ((x * 2).sum(axis=-1), np.exp(x).max(axis=-1)))
        f(x[:, :2**17])  # warm up: pools and code paths
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        s, m = f(x)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(float(s[0]), float(m[1]), grown)
    """
    s, m, grown_kib = _run(code).split()
    assert float(s) == np.float32(3.0 * 2**28)
    assert float(m) == pytest.approx(np.exp(np.float32(1.5)), rel=1e-7)
    assert int(grown_kib) < 64 * 1024  # a row of scratch would be 1 GiB


def test_long_row_results_do_not_depend_on_the_thread_count():
    code = """
        import numpy as np, pyasc
        x = np.random.default_rng(3).standard_normal((3, 7 * 2**14 + 9)).astype(np.float32)
        s, a = pyasc.operator(lambda x: (np.exp(x).sum(axis=-1), x.argmax(axis=-1)))(x)
        print(s.tobytes().hex(), a.tobytes().hex())
    """
    outs = {_run(code, {"PYASC_NUM_THREADS": str(n)}) for n in (1, 2, 3)}
    assert len(outs) == 1


def test_per_row_broadcast_operands_beside_varying_ones():
    x = np.random.default_rng(4).standard_normal((3, N))
    b = np.array([[1.0], [-2.0], [0.5]])
    col = np.broadcast_to(b, (3, N))
    s, y = pyasc.operator(lambda x, c: ((x * c).sum(axis=-1), (c * 3).sum(axis=-1)))(x, col)
    np.testing.assert_allclose(s, (x * b).sum(axis=-1), rtol=1e-12)
    np.testing.assert_array_equal(y, (col * 3).sum(axis=-1))
    z, t = pyasc.operator(lambda c: (c * 2, (c * 2).sum(axis=-1)))(col)  # an element output too
    np.testing.assert_array_equal(z, col * 2)
    np.testing.assert_array_equal(t, (col * 2).sum(axis=-1))
