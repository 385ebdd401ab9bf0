"""A comparison read only by a select runs with it in one pass, giving NumPy's ``where`` exactly.

The fused pass computes the condition in a small buffer instead of a bool tile; every value
must still be the one ``np.where(cmp(a, b), t, f)`` gives, NaN included (it compares unequal).
"""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from pyasc.bench.vectorized import piecewise


def _program(op, *args) -> str:
    return op.get_compiled_op(*args).tile_program(0)


CASES = [
    (lambda x, y: np.where(x < y, x * y, x - y), "lt"),
    (lambda x, y: np.where(x >= 0.5, y, x), "ge"),
    (lambda x, y: np.where(x == y, 1.0, y), "eq"),
    (lambda x, y: np.where(x != y, x, 0.0), "ne"),
    (lambda x, y: np.where(x > y, x, y) + np.where(x <= y, x, y), "le"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_compare_select_is_one_pass_and_equals_numpy(dtype, case):
    fn, cmp = CASES[case]
    rng = np.random.default_rng(case)
    n = 5003  # not a multiple of the tile or of the condition's blocks
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    x[::17] = np.nan
    y[::23] = np.inf
    x[::29] = y[::29]  # equal values for eq / ne / le / ge
    y[::31] = -0.0
    x[::37] = 0.0
    saved = (x.copy(), y.copy())
    op = pyasc.operator(fn)
    got = op(x, y)
    with np.errstate(invalid="ignore"):
        want = fn(x, y)  # the same expression on NumPy arrays
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert f"select({cmp}(" in _program(op, x, y), _program(op, x, y)
    np.testing.assert_array_equal(x, saved[0])
    np.testing.assert_array_equal(y, saved[1])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_compare_select_is_fused_too(dtype):
    rng = np.random.default_rng(5)
    x = rng.integers(-50, 50, 3001).astype(dtype)
    y = rng.integers(-50, 50, 3001).astype(dtype)
    op = pyasc.operator(lambda a, b: np.where(a > b, a - b, b * 2))
    np.testing.assert_array_equal(op(x, y), np.where(x > y, x - y, y * 2))
    assert "select(gt(" in _program(op, x, y)


def test_a_condition_read_twice_stays_a_bool_tile_and_is_still_right():
    x = np.linspace(-3, 3, 4099, dtype=np.float32)
    op = pyasc.operator(lambda a: np.where(a < 0.5, a, -a) + np.where(a < 0.5, 1.0, 2.0).astype(np.float32))
    want = np.where(x < 0.5, x, -x) + np.where(x < 0.5, np.float32(1), np.float32(2))
    np.testing.assert_array_equal(op(x), want)


def test_vectorized_if_else_fuses_its_branch_conditions():
    x = np.random.default_rng(7).uniform(-4.0, 4.0, 10007).astype(np.float32)
    x[::101] = np.nan
    op = pyasc.vectorized_operator(piecewise)
    got = op(x)
    with np.errstate(invalid="ignore"):
        want = np.where(x < -1, -1 - 0.5 * (x + 1), np.where(x < 1, x * x * x, np.sqrt(x))).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert op.tile_program(x).count("select(lt(") == 2
