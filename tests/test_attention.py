"""pyasc.scaled_dot_product_attention against a float64 NumPy reference, eager and traced; the
unfused formula rewritten into one kernel; masks, causality, 16-bit dtypes and errors."""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pyasc
import pytest
from conftest import line_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sdpa = pyasc.scaled_dot_product_attention


def reference(q, k, v, mask=None, causal=False, scale=None):
    """The definition in float64: softmax(q k^T * scale + mask) v, NaN for rows with no key."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + np.asarray(mask, np.float64)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v


@st.composite
def problems(draw):
    """Random batch/head dims (broadcasting), sequence lengths and widths, mask and dtype."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    lq, lk = draw(st.integers(1, 130)), draw(st.integers(1, 150))
    d, dv = draw(st.integers(1, 72)), draw(st.integers(1, 70))
    dtype = draw(st.sampled_from([np.float32, np.float64]))

    def bshape(last):
        # Each leading dim kept, or 1 (broadcast); sometimes fewer leading dims.
        keep = [b if rng.random() < 0.7 else 1 for b in batch]
        return tuple(keep[int(rng.integers(0, len(keep) + 1)):]) + last

    q = rng.standard_normal(bshape((lq, d))).astype(dtype)
    k = rng.standard_normal(bshape((lk, d))).astype(dtype)
    v = rng.standard_normal(bshape((lk, dv))).astype(dtype)
    kind = draw(st.sampled_from(["none", "bool", "additive"]))
    mshape = tuple(s if rng.random() < 0.6 else 1 for s in (lq, lk))
    mask = None
    if kind == "bool":
        mask = rng.random(mshape) < 0.8
    elif kind == "additive":
        mask = rng.standard_normal(mshape).astype(draw(st.sampled_from([np.float32, np.float64])))
    return q, k, v, mask, draw(st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_matches_the_float64_definition(problem):
    q, k, v, mask, causal = problem
    got = sdpa(q, k, v, mask=mask, is_causal=causal)
    want = reference(q, k, v, mask, causal)
    assert got.shape == want.shape
    assert got.dtype == np.result_type(q, k, v)
    tol = 1e-12 if got.dtype == np.float64 and (mask is None or mask.dtype != np.float32) else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("lq,lk", [(1, 1), (1, 200), (200, 1), (47, 49), (48, 64), (97, 129), (130, 65)])
@pytest.mark.parametrize("causal", [False, True])
def test_block_edges_and_length_one(lq, lk, causal):
    rng = np.random.default_rng(lq * 1000 + lk)
    q, k = rng.standard_normal((2, lq, 64)), rng.standard_normal((2, lk, 64))
    v = rng.standard_normal((2, lk, 32))
    x = [a.astype(np.float32) for a in (q, k, v)]
    np.testing.assert_allclose(sdpa(*x, is_causal=causal), reference(*x, causal=causal), rtol=2e-5, atol=2e-5)


def test_scale_and_strided_inputs_are_read_in_place_and_left_alone():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((3, 90, 40)).astype(np.float32)
    q = base[:, ::2, :16]
    k = np.swapaxes(rng.standard_normal((3, 16, 70)).astype(np.float32), -1, -2)
    v = rng.standard_normal((70, 3, 8)).astype(np.float32).transpose(1, 0, 2)
    before = [a.copy() for a in (q, k, v)]
    got = sdpa(q, k, v, scale=0.3)
    np.testing.assert_allclose(got, reference(q, k, v, scale=0.3), rtol=2e-5, atol=2e-5)
    for a, b in zip((q, k, v), before):
        np.testing.assert_array_equal(a, b)


def test_fully_masked_rows_are_nan_like_the_unfused_formula():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 60, 16)).astype(np.float32) for _ in range(3))
    mask = rng.random((60, 60)) < 0.5
    mask[[3, 50]] = False
    got = sdpa(q, k, v, mask=mask)

    @pyasc.operator(op_break_level=2)
    def unfused(q, k, v, m):
        s = q @ np.swapaxes(k, -1, -2) / np.float32(4.0)
        return pyasc.softmax(np.where(m, s, -np.inf)) @ v

    ref = unfused(q, k, v, mask)
    assert np.isnan(got[:, [3, 50]]).all() and np.isnan(ref[:, [3, 50]]).all()
    assert not np.isnan(np.delete(got, [3, 50], axis=1)).any()
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
    # An additive -inf over a whole row, and no keys at all.
    add = np.where(mask, 0.0, -np.inf).astype(np.float32)
    assert np.isnan(sdpa(q, k, v, mask=add)[:, 3]).all()
    empty = sdpa(q, k[:, :0], v[:, :0])
    np.testing.assert_array_equal(empty, np.zeros((2, 60, 16), np.float32))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_sixteen_bit_inputs_compute_in_float32_and_round_once(dtype, causal):
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 70, 32)).astype(dtype), rng.standard_normal((2, 90, 32)).astype(dtype)
    v = rng.standard_normal((2, 90, 24)).astype(dtype)
    mask = rng.random((70, 90)) < 0.9
    got = sdpa(q, k, v, mask=mask, is_causal=causal)
    assert got.dtype == np.dtype(dtype)
    want = reference(q, k, v, mask, causal)
    # float32 arithmetic (errors near 1e-6) then one rounding: within one 16-bit ulp of the
    # exactly rounded result; outputs are averages of values of magnitude about 1.
    eps = float(np.finfo(dtype).eps)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=eps, atol=eps)


@pytest.mark.parametrize("form", ["div_sqrt", "mul", "additive", "where", "batched"])
def test_the_traced_formula_compiles_to_one_kernel(form):
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 4, 75, 32)).astype(np.float32) for _ in range(3))
    bmask = rng.random((75, 75)) < 0.7
    amask = rng.standard_normal((75, 75)).astype(np.float32)

    def attend(q, k, v, bm, am):
        if form == "batched":
            s = np.float32(1 / np.sqrt(32)) * (q @ np.swapaxes(k, -1, -2))
            return pyasc.softmax(s) @ v
        kt = np.swapaxes(k, -1, -2)
        s = q @ kt / np.sqrt(q.shape[-1]) if form == "div_sqrt" else q @ kt * (1 / np.sqrt(32))
        if form == "additive":
            s = s + am
        elif form == "where":
            s = np.where(bm, s, -np.inf)
        return pyasc.softmax(s) @ v

    op = pyasc.operator(attend)
    got = op(q, k, v, bmask, amask)
    mask = {"additive": amask, "where": bmask}.get(form)
    np.testing.assert_allclose(got, reference(q, k, v, mask, scale=1 / np.sqrt(32)), rtol=2e-5, atol=2e-5)
    kernels = op.get_compiled_op(q, k, v, bmask, amask).kernels()
    assert len(kernels) == 1, kernels


def test_scores_used_elsewhere_stay_unfused_and_correct():
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((40, 16)).astype(np.float32) for _ in range(3))

    @pyasc.operator
    def both(q, k, v):
        s = q @ k.T * 0.25
        return pyasc.softmax(s) @ v, s

    out, s = both(q, k, v)
    np.testing.assert_allclose(out, reference(q, k, v, scale=0.25), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(s, q.astype(np.float64) @ k.T * 0.25, rtol=1e-5, atol=1e-5)
    assert len(both.get_compiled_op(q, k, v).kernels()) > 1


def test_inside_an_operator_with_a_captured_mask_and_an_epilogue():
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((3, 50, 8)) for _ in range(3))
    mask = rng.random((50, 50)) < 0.8
    mask[:, 0] = True

    @pyasc.operator
    def block(q, k, v):
        return np.tanh(sdpa(q, k, v, mask=mask, is_causal=True)) * 2.0

    got = block(q, k, v)
    np.testing.assert_allclose(got, np.tanh(reference(q, k, v, mask, True)) * 2.0, rtol=1e-12, atol=1e-12)
    assert len(block.get_compiled_op(q, k, v).kernels()) == 1


def test_lower_isas_give_the_same_results():
    code = (
        "import sys, numpy as np, pyasc\n"
        "r = np.random.default_rng(7)\n"
        "q, k, v = (r.standard_normal((2, 77, 40)).astype(np.float32) for _ in range(3))\n"
        "m = r.random((77, 77)) < 0.8\n"
        "out = pyasc.scaled_dot_product_attention(q, k, v, mask=m, is_causal=True)\n"
        "sys.stdout.buffer.write(out.astype(np.float64).tobytes())\n"
    )
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 77, 40)).astype(np.float32) for _ in range(3))
    m = rng.random((77, 77)) < 0.8
    want = reference(q, k, v, m, True)
    for isa in ("avx2", "scalar"):
        env = dict(os.environ, PYASC_ISA=isa)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True).stdout
        got = np.frombuffer(out, np.float64).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=isa)


def _raises(cls, fn, text):
    with pytest.raises(cls) as e:
        fn()
    assert e.value.lineno == line_of(fn, text), (e.value.lineno, str(e.value))
    return str(e.value)


def test_bad_input_is_a_typed_error_naming_the_line():
    q, k, v = np.ones((2, 5, 8)), np.ones((2, 7, 8)), np.ones((2, 7, 4))

    def width():
        return sdpa(q, np.ones((2, 7, 6)), v)  # width

    def keys():
        return sdpa(q, k, np.ones((2, 6, 4)))  # keys

    def mask_shape():
        return sdpa(q, k, v, mask=np.ones((5, 6), bool))  # mask_shape

    def heads():
        return sdpa(q, np.ones((3, 7, 8)), np.ones((3, 7, 4)))  # heads

    def traced():
        return pyasc.operator(lambda t: sdpa(t, np.ones((2, 7, 3)), v))(q)  # traced

    assert "last dimension (8)" in _raises(pyasc.ShapeError, width, "# width")
    assert "7 positions" in _raises(pyasc.ShapeError, keys, "# keys")
    assert "mask" in _raises(pyasc.ShapeError, mask_shape, "# mask_shape")
    assert "broadcast" in _raises(pyasc.ShapeError, heads, "# heads")
    assert "last dimension" in _raises(pyasc.ShapeError, traced, "# traced")
    with pytest.raises(pyasc.DTypeError, match="float"):
        sdpa(q.astype(np.int32), k, v)
    with pytest.raises(pyasc.DTypeError, match="mask"):
        sdpa(q, k, v, mask=np.ones((5, 7), np.int32))
    with pytest.raises(pyasc.ShapeError, match="rank 2"):
        sdpa(np.ones(8), k, v)
    with pytest.raises(pyasc.InvalidArgumentError, match="scale"):
        sdpa(q, k, v, scale="big")
    with pytest.raises(pyasc.InvalidArgumentError, match="is_causal"):
        sdpa(q, k, v, is_causal=1)


def test_masks_with_batch_dimensions_broadcast_and_may_widen_the_batch():
    rng = np.random.default_rng(8)
    q, k = rng.standard_normal((2, 3, 20, 8)), rng.standard_normal((3, 30, 8))
    v = rng.standard_normal((3, 30, 5))
    per_image = rng.random((2, 1, 20, 30)) < 0.7
    np.testing.assert_allclose(sdpa(q, k, v, mask=per_image), reference(q, k, v, per_image), rtol=1e-12, atol=1e-12)
    # A mask with more leading dims than the operands gives the result those dims.
    wide = rng.standard_normal((4, 1, 1, 30))
    got = sdpa(q[0, 0], k[0], v[0], mask=wide)
    assert got.shape == (4, 1, 20, 5)
    np.testing.assert_allclose(got, reference(q[0, 0], k[0], v[0], wide), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_the_traced_formula_in_sixteen_bits_is_one_kernel(dtype):
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((3, 40, 16)).astype(dtype) for _ in range(3))

    @pyasc.operator
    def attend(q, k, v):
        return pyasc.softmax(q @ np.swapaxes(k, -1, -2) * 0.25) @ v

    got = attend(q, k, v)
    assert got.dtype == np.dtype(dtype)
    eps = float(np.finfo(dtype).eps)
    # The unfused formula rounds the scores and the weights to 16 bits; the fused kernel does not.
    np.testing.assert_allclose(got.astype(np.float64), reference(q, k, v, scale=0.25), rtol=4 * eps, atol=4 * eps)
    assert len(attend.get_compiled_op(q, k, v).kernels()) == 1
