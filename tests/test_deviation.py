"""Deviations from a row value read where they are used (a layer norm's ``x - mean``).

The fused kernel computes ``x - mean`` inside the sum of squares and inside the epilogue
instead of storing it, with every operation rounded on its own: its bits must equal the plan
with every primitive its own kernel, and the values NumPy's float64 layer norm.
"""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from isa_support import run_under_isa


def _program(op, *args) -> str:
    op(*args)
    c = op.get_compiled_op()
    return "\n".join(c.tile_program(i) for i in range(len(c.kernels())))


def _reference(x, w=None, b=None, eps=1e-5):
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    y = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


FORMS = {
    "weight and bias": (lambda v, w, b: pyasc.layer_norm(v, w, b), True, True),
    "weight": (lambda v, w, b: pyasc.layer_norm(v, w), True, False),
    "plain": (lambda v, w, b: pyasc.layer_norm(v), False, False),
    # np.var's compensated form also sums the deviations themselves: they stay stored.
    "by hand": (lambda v, w, b: (v - v.mean(-1, keepdims=True)) * (1 / np.sqrt(v.var(-1, keepdims=True) + 1e-5))
                * w + b, True, True),
    "variance": (lambda v, w, b: v.var(-1), False, False),
    "std": (lambda v, w, b: v.std(-1, keepdims=True), False, False),
}


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1, 1500), dtype=st.sampled_from([np.float32, np.float64]),
       form=st.sampled_from(sorted(FORMS)), seed=st.integers(0, 2**31), offset=st.sampled_from([0.0, 1e3]))
def test_fused_deviations_match_the_unfused_plan_bit_for_bit(rows, cols, dtype, form, seed, offset):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 3 + offset).astype(dtype)
    w = rng.standard_normal(cols).astype(dtype)
    b = rng.standard_normal(cols).astype(dtype)
    saved = x.copy()
    fn, _, _ = FORMS[form]
    fused, split = pyasc.operator(fn), pyasc.operator(fn, op_break_level=0)
    got, want = fused(x, w, b), split(x, w, b)
    assert got.dtype == want.dtype == dtype
    assert np.array_equal(got, want, equal_nan=True)
    np.testing.assert_array_equal(x, saved)


@pytest.mark.parametrize("form", ["weight and bias", "weight", "plain", "by hand"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norms_read_their_values_where_used_and_match_float64(form, dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((300, 1024)) * 2 + 5).astype(dtype)
    w = rng.standard_normal(1024).astype(dtype)
    b = rng.standard_normal(1024).astype(dtype)
    fn, has_w, has_b = FORMS[form]
    op = pyasc.operator(fn)
    prog = _program(op, x, w, b)
    fused = form != "by hand"
    assert ("reduce_sum(square(sub(" in prog) == fused, prog
    assert ("= sub(" not in prog) == fused, prog
    if has_w:
        assert ("add(mul(mul(sub(" in prog) == fused, prog
    got = op(x, w, b)
    ref = _reference(x, w if has_w else None, b if has_b else None)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 10)
    notes = [n for r in op.get_compiled_op().pass_reports() for n in r.get("notes", [])]
    assert any("deviation(s) computed where read" in n for n in notes) == fused, notes


def test_non_finite_values_propagate_as_in_numpy():
    x = np.random.default_rng(6).standard_normal((4, 64)).astype(np.float32)
    x[1, 3] = np.nan
    x[2, 5] = np.inf
    op = pyasc.operator(lambda v: pyasc.layer_norm(v))
    got = op(x)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
    np.testing.assert_allclose(got[[0, 3]], _reference(x[[0, 3]]), rtol=2e-5, atol=2e-5)


def test_deviations_read_by_something_else_stay_stored():
    x = np.random.default_rng(7).standard_normal((16, 128)).astype(np.float32)
    op = pyasc.operator(lambda v: ((v - v.mean(-1, keepdims=True)) ** 2).sum(-1)
                        + np.exp(v - v.mean(-1, keepdims=True)).sum(-1))
    prog = _program(op, x)
    assert "= sub(" in prog, prog
    x64 = x.astype(np.float64)
    d = x64 - x64.mean(-1, keepdims=True)
    np.testing.assert_allclose(op(x), (d**2).sum(-1) + np.exp(d).sum(-1), rtol=1e-5)


def test_a_broadcast_input_row_is_normalised_like_any_other():
    # Every element of a row the same: zero variance, the result is the bias.
    x = np.broadcast_to(np.float32(3.5), (8, 256))
    w = np.full(256, 2.0, np.float32)
    b = np.linspace(-1, 1, 256, dtype=np.float32)
    got = pyasc.operator(lambda v, w, b: pyasc.layer_norm(v, w, b))(x, w, b)
    np.testing.assert_array_equal(got, np.broadcast_to(b, (8, 256)))


@pytest.mark.parametrize("shape", [(4000, 1024), (300, 70)])
def test_sums_of_squared_deviations_down_columns(shape):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(shape) * 3 + 7).astype(np.float32)

    def f(v):
        d = v - v.mean(0, keepdims=True)
        return (d * d).sum(0)

    op = pyasc.operator(f)
    assert "reduce_sum(square(sub(" in _program(op, x)
    got = op(x)
    assert np.array_equal(got, pyasc.operator(f, op_break_level=0)(x))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got, ((x64 - x64.mean(0)) ** 2).sum(0), rtol=1e-5)


@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("shape", [(37, 1000), (2000, 300)])
def test_a_constant_centre_along_rows_and_columns(shape, axis):
    x = (np.random.default_rng(10).standard_normal(shape) * 3 + 1).astype(np.float32)

    def f(v):
        return ((v - 1.5) * (v - 1.5)).sum(axis)

    op = pyasc.operator(f)
    assert "reduce_sum(square(sub(" in _program(op, x)
    got = op(x)
    assert np.array_equal(got, pyasc.operator(f, op_break_level=0)(x))
    np.testing.assert_allclose(got, ((x.astype(np.float64) - 1.5) ** 2).sum(axis), rtol=1e-5)


@pytest.mark.parametrize("isa", ["avx2", "sse2", "scalar"])
def test_every_isa_gives_the_same_bits(isa):
    script = (
        "import sys, numpy as np, pyasc\n"
        "rng = np.random.default_rng(8)\n"
        "x = (rng.standard_normal((33, 1000)) * 4 + 2).astype(np.float32)\n"
        "w, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)\n"
        "fn = lambda v, w, b: pyasc.layer_norm(v, w, b)\n"
        "a, s = pyasc.operator(fn)(x, w, b), pyasc.operator(fn, op_break_level=0)(x, w, b)\n"
        "sys.stdout.write(str(np.array_equal(a, s)) + ' ' + a.tobytes().hex()[:64])\n"
    )
    ok, head = run_under_isa(script, isa).split()
    assert ok == "True"
    here = run_under_isa(script, "auto").split()
    assert here == ["True", head]
