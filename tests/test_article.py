"""The practitioner article's snippets that belong to the features built so far, as written."""

from __future__ import annotations

import logging
import math

import numpy as np
import pyasc
import pytest


def test_article_gelu_template():
    # 典型PyAsc算子开发模板
    @pyasc.operator(device_type="NPU")
    def custom_gelu(x):
        # 算子核心计算逻辑
        y = x * 0.5 * (1.0 + pyasc.erf(x / 1.41421))
        return y

    x = np.random.default_rng(0).standard_normal(10000).astype(np.float32)
    x64 = x.astype(np.float64)
    want = x64 * 0.5 * (1.0 + np.array([math.erf(v / 1.41421) for v in x64]))
    np.testing.assert_allclose(custom_gelu(x), want, rtol=1e-6, atol=1e-7)
    assert custom_gelu.get_compiled_op(x).kernels()[0]["fused_ops"] == 5


def test_article_debug_logging_and_normalize_memory_usage(capsys, caplog):
    caplog.set_level(logging.DEBUG, logger="pyasc")
    pyasc.set_log_level("DEBUG")  # 可看到算子编译/执行的详细过程
    try:
        @pyasc.operator(device_type="NPU", compute_type="vector")
        def normalize(x, scale, bias):
            return (x - bias) * scale

        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        np.testing.assert_array_equal(normalize(x, 0.5, 1.0), (x - 1.0) * 0.5)
        op = normalize.get_compiled_op()
        print(op.memory_usage())  # 显示各buffer内存占用
    finally:
        pyasc.set_log_level("WARNING")
    out = capsys.readouterr()
    assert "'role': 'output'" in out.out and "'bytes': 48" in out.out
    assert "launch normalize_k0" in caplog.text


def test_article_get_compiled_op_before_any_call_is_a_clear_error():
    @pyasc.operator
    def normalize(x, scale, bias):
        return (x - bias) * scale

    with pytest.raises(pyasc.InvalidArgumentError, match="not been compiled yet"):
        normalize.get_compiled_op()


def test_article_fast_gelu_with_precision_shorthand():
    @pyasc.operator(precision="fp16")
    def gelu_npu(x):
        # 使用NPU内置近似计算
        return pyasc.fast_gelu(x)

    x = np.linspace(-6, 6, 1001, dtype=np.float32)
    # float16 storage of the input, float32 lanes, float32 result (the fp32 program's dtype).
    x16 = x.astype(np.float16).astype(np.float64)
    got = gelu_npu(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, x16 / (1 + np.exp(-1.702 * x16)), rtol=1e-6, atol=1e-7)
    # float16 activations stay float16.
    h = gelu_npu(x.astype(np.float16))
    assert h.dtype == np.float16
    np.testing.assert_allclose(h.astype(np.float64), x16 / (1 + np.exp(-1.702 * x16)), rtol=1e-3, atol=1e-4)
    assert gelu_npu.options["precision_mode"] == "force_fp16"


def test_article_debug_false_release_operator():
    @pyasc.operator(debug=False)  # 发布时设为False
    def inference_op(x):
        return pyasc.relu(x) * 2

    x = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(inference_op(x), np.array([0.0, 0.0, 4.0]))


def test_article_graph_mode_fuses_three_operators():
    @pyasc.operator(device_type="NPU")
    def op1(x):
        return x * 2.0

    @pyasc.operator(device_type="NPU")
    def op2(x):
        return x + 1.0

    @pyasc.operator(device_type="NPU")
    def op3(x):
        return np.sqrt(np.abs(x))

    input = np.random.default_rng(5).standard_normal(10000).astype(np.float32)  # noqa: A001
    with pyasc.graph_mode() as g:  # 开启图模式
        x = op1(input)
        y = op2(x)  # 会融合成单个计算图
        z = op3(y)
    np.testing.assert_allclose(np.asarray(z), np.sqrt(np.abs(input.astype(np.float64) * 2 + 1)), rtol=1e-6)
    assert len(g.get_compiled_op().kernels()) == 1


def test_article_four_stage_pipeline():
    rng = np.random.default_rng(6)
    w = (rng.standard_normal((32, 32)) / 6).astype(np.float32)

    @pyasc.operator
    def preprocess(d):
        return (d - d.mean(axis=-1, keepdims=True)) / (d.std(axis=-1, keepdims=True) + 1e-5)

    @pyasc.operator
    def feature_extract(x):
        return x @ w

    @pyasc.operator
    def inference(x):
        return pyasc.gelu(x)

    @pyasc.operator
    def postprocess(x):
        return pyasc.softmax(x)

    data = rng.standard_normal((4096, 32)).astype(np.float32)
    with pyasc.pipeline(stages=4) as p:
        stage1 = preprocess(data)
        stage2 = feature_extract(stage1)
        stage3 = inference(stage2)
        stage4 = postprocess(stage3)
    np.testing.assert_array_equal(np.asarray(stage4), postprocess(inference(feature_extract(preprocess(data)))))
    assert p.last_schedule["runner"] == "workers"  # `w` is captured, and passed whole
    d = data.astype(np.float64)
    h = (d - d.mean(-1, keepdims=True)) / (d.std(-1, keepdims=True) + 1e-5) @ w
    from scipy.special import erf

    g = 0.5 * h * (1 + erf(h / np.sqrt(2)))
    e = np.exp(g - g.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(stage4), e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)


dim = 64  # the article's fused_attention reads `dim` as a global


def test_article_fused_attention_is_one_kernel():
    @pyasc.fused_operator
    def fused_attention(Q, K, V):
        scores = Q @ K.T / np.sqrt(dim)
        attn = pyasc.softmax(scores)
        return attn @ V

    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((300, dim)).astype(np.float32) for _ in range(3))
    got = fused_attention(q, k, v)
    assert len(fused_attention.get_compiled_op(q, k, v).kernels()) == 1
    s = q.astype(np.float64) @ k.T.astype(np.float64) / np.sqrt(dim)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(got, (p / p.sum(-1, keepdims=True)) @ v, rtol=2e-5, atol=2e-6)


def test_article_pde_stencil():
    # 5.3 科学计算：气象预测加速
    def solve_pde(u, dx, dy, dt):
        u_new = u.copy()
        u_new[1:-1, 1:-1] = (u[0:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, 0:-2] + u[1:-1, 2:]) * dt
        return u_new

    @pyasc.stencil_operator
    def pde_stencil(u, parameters):
        # 自动展开为并行计算
        return (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) * parameters[0]

    u = np.random.default_rng(11).random((2048, 2048)).astype(np.float32)
    parameters = np.array([0.25], np.float32)
    got = pde_stencil(u, parameters)
    want = solve_pde(u.astype(np.float64), 1.0, 1.0, 0.25)
    inner = (slice(1, -1), slice(1, -1))
    np.testing.assert_allclose(got[inner], want[inner], rtol=1e-6)
    assert (got[0] == 0).all() and (got[:, -1] == 0).all()  # numba.stencil's border: cval
    skip = pyasc.stencil_operator(boundary="skip")(pde_stencil.__wrapped__)
    np.testing.assert_allclose(skip(u, parameters), want, rtol=1e-6)
