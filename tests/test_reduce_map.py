"""Row sums of arithmetic in one pass: the same bits as the product stored then summed."""

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def _fused_and_split(fn):
    """The operator as compiled, and with every primitive its own kernel (nothing fused)."""
    return pyasc.operator(fn), pyasc.operator(fn, op_break_level=0)


def _program(op, *args):
    op(*args)
    c = op.get_compiled_op()
    return "\n".join(c.tile_program(i) for i in range(len(c.kernels())))


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1, 700), dtype=st.sampled_from([np.float32, np.float64]),
       form=st.sampled_from(["square", "product", "sum", "difference", "scalar"]), seed=st.integers(0, 2**31))
def test_mapped_row_sums_match_the_unfused_plan_bit_for_bit(rows, cols, dtype, form, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 10).astype(dtype)
    y = rng.standard_normal((rows, cols)).astype(dtype)
    fn = {"square": lambda a, b: (a * a).sum(-1),
          "product": lambda a, b: (a * b).sum(-1),
          "sum": lambda a, b: (a + b).sum(-1, keepdims=True),
          "difference": lambda a, b: (a - b).mean(-1),
          "scalar": lambda a, b: (a * 1.5).sum(-1)}[form]
    fused, split = _fused_and_split(fn)
    got, want = fused(x, y), split(x, y)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    ref = fn(x.astype(np.float64), y.astype(np.float64))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    scale = fn(np.abs(x).astype(np.float64), np.abs(y).astype(np.float64))
    assert np.all(np.abs(got - ref) <= tol * (np.abs(scale) + 1))


def test_variance_sum_of_squares_is_one_instruction():
    x = np.random.default_rng(1).standard_normal((64, 256)).astype(np.float32)
    op = pyasc.operator(lambda v: pyasc.layer_norm(v))
    # Mapped first, then read from the values themselves (the deviation pass).
    assert "reduce_sum(square(sub(" in _program(op, x)
    c = op.get_compiled_op()
    assert any("row sum(s) of arithmetic in one pass" in n for r in c.pass_reports() for n in r.get("notes", []))
    mu = x.astype(np.float64).mean(-1, keepdims=True)
    ref = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(op(x), ref, rtol=1e-5, atol=1e-5)


def test_products_read_again_stay_stored():
    x = np.random.default_rng(2).standard_normal((8, 100)).astype(np.float32)
    op = pyasc.operator(lambda v: ((v * v).sum(-1), v * v))
    s, sq = op(x)
    assert "reduce_sum(mul(" not in _program(op, x)
    assert np.array_equal(sq, x * x)
    np.testing.assert_allclose(s, (x.astype(np.float64) ** 2).sum(-1), rtol=1e-6)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_long_rows_of_mapped_sums_in_chunks(threads, monkeypatch):
    monkeypatch.setenv("PYASC_NUM_THREADS", threads)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 70_001)).astype(np.float32)
    y = rng.standard_normal((3, 70_001)).astype(np.float32)
    fused, split = _fused_and_split(lambda a, b: (a * b).sum(-1))
    got = fused(x, y)
    assert np.array_equal(got, split(x, y))
    np.testing.assert_allclose(got, (x.astype(np.float64) * y).sum(-1), rtol=1e-5)


def test_nan_and_infinity_propagate_through_mapped_sums():
    x = np.array([[1.0, np.inf, 2.0], [1.0, np.nan, 0.0], [np.inf, -np.inf, 1.0]], np.float32)
    op = pyasc.operator(lambda v: (v * v).sum(-1))
    np.testing.assert_array_equal(op(x), np.array([np.inf, np.nan, np.inf], np.float32))
