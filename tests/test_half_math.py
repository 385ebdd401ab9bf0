"""Ops whose float32 value is rounded to 16 bits at once compute to the 16-bit accuracy only."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pyasc
import pytest


def _fast_gelu64(x):
    """Ascend FastGelu in float64: x / (1 + e^(-1.702|x|)), times e^(1.702 x) for x < 0."""
    x = x.astype(np.float64)
    e = np.exp(-1.702 * np.abs(x))
    return np.where(x < 0, x * e, x) / (1.0 + e)


def _ulps16(a, b, dtype):
    """Distance in ulps between two arrays of one 16-bit dtype (NaN matches NaN)."""
    ia = a.view(np.uint16).astype(np.int32)
    ib = b.view(np.uint16).astype(np.int32)
    oa = np.where(ia & 0x8000, -(ia & 0x7FFF), ia)
    ob = np.where(ib & 0x8000, -(ib & 0x7FFF), ib)
    d = np.abs(oa - ob)
    nan_a, nan_b = np.isnan(a.astype(np.float32)), np.isnan(b.astype(np.float32))
    return np.where(nan_a & nan_b, 0, np.where(nan_a | nan_b, 1 << 20, d))


@pytest.mark.parametrize("dtype,mode", [(np.float16, "fp16"), (ml_dtypes.bfloat16, "bf16")])
def test_fp16_fast_gelu_layer_is_within_one_ulp_for_every_input(dtype, mode):
    @pyasc.operator(precision=mode)
    def gelu_npu(x):
        return pyasc.fast_gelu(x)

    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    got = gelu_npu(x)
    assert got.dtype == dtype
    assert "fast_gelu_half" in gelu_npu.get_compiled_op(x).tile_program(0)
    with np.errstate(all="ignore"):
        want = _fast_gelu64(x).astype(dtype)
    d = _ulps16(got, want, dtype)
    assert d.max() <= 1, x[np.argmax(d)]
    assert (d == 1).mean() < 0.005


def test_float32_results_keep_the_float32_kernel():
    @pyasc.operator
    def gelu32(x):
        return pyasc.fast_gelu(x)

    @pyasc.operator
    def gelu_then_more(x):
        y = pyasc.fast_gelu(x)
        return y.astype(np.float16), y  # the float32 value is also a result

    x = np.linspace(-9, 9, 4001, dtype=np.float32)
    assert "fast_gelu_half" not in gelu32.get_compiled_op(x).tile_program(0)
    assert "fast_gelu_half" not in gelu_then_more.get_compiled_op(x).tile_program(0)
    np.testing.assert_allclose(gelu32(x), _fast_gelu64(x), rtol=4e-7, atol=1e-30)
