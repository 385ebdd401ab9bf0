"""``@pyasc.fused_operator``: one kernel, or a FusionError naming the line that breaks it."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pyasc.fused_operator
def gelu(x):
    return x * 0.5 * (1.0 + pyasc.erf(x / 1.41421))


@pyasc.fused_operator(device_type="NPU")
def layer_norm(x):
    m = x.mean(axis=-1, keepdims=True)
    d = x - m
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)


@pyasc.fused_operator
def matmul_relu(a, b):
    return np.maximum(a @ b, 0.0)


@pyasc.fused_operator
def two_matmuls(a, b, c):
    t = a @ b
    return t @ c


def test_fusable_functions_are_one_kernel_and_correct():
    x = rand(64, 48)
    x64 = x.astype(np.float64)
    from scipy.special import erf

    np.testing.assert_allclose(gelu(x), x64 * 0.5 * (1 + erf(x64 / 1.41421)), rtol=2e-6, atol=1e-6)
    m = x64.mean(-1, keepdims=True)
    np.testing.assert_allclose(layer_norm(x), (x64 - m) / np.sqrt(((x64 - m) ** 2).mean(-1, keepdims=True) + 1e-5),
                               rtol=1e-5, atol=1e-5)
    w = rand(48, 32, seed=1)
    np.testing.assert_allclose(matmul_relu(x, w), np.maximum(x64 @ w, 0), rtol=1e-4, atol=1e-4)
    for op, args in ((gelu, (x,)), (layer_norm, (x,)), (matmul_relu, (x, w))):
        assert len(op.get_compiled_op(*args).kernels()) == 1


def test_a_second_kernel_raises_fusion_error_at_its_line():
    a, b, c = rand(8, 8), rand(8, 8, seed=1), rand(8, 8, seed=2)
    with pytest.raises(pyasc.FusionError) as info:
        two_matmuls(a, b, c)
    err = info.value
    assert err.filename == __file__
    assert err.lineno == two_matmuls.__wrapped__.__code__.co_firstlineno + 3
    assert "2 kernels" in str(err) and "matmul" in str(err)
    assert err.code == pyasc.FusionError.code != 0


def test_fused_operator_rejects_options_that_split_kernels():
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.fused_operator(lambda x: x, debug=True)
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.fused_operator(lambda x: x, op_break_level=1)
