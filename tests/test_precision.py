"""Precision policies (``precision_mode``) and ``pyasc.precision_scope``.

References are float64 NumPy evaluations of the same program on inputs rounded to the 16-bit
type where the policy stores them, so the checks are tight (float32 lane accuracy), and each
node's compute dtype is read from the compiled graph.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pyasc
import pytest

BF16 = ml_dtypes.bfloat16
LOW = {"fp16": np.float16, "bf16": BF16}
NODE = re.compile(r"^%(\d+) = ([\w<>\[\], .-]+?)\((.*?)\) : (\w+)\(")


def nodes(op, *args):
    """(id, op name, operand ids, dtype) per node of the compiled graph."""
    out = []
    for line in op.get_compiled_op(*args).graph_ir().splitlines():
        m = NODE.match(line)
        if m:
            ops = [int(x[1:]) for x in m.group(3).split(", ") if x]
            out.append((int(m.group(1)), m.group(2), ops, m.group(4)))
    return out


def rounded(x, low):
    """``x`` rounded to the 16-bit type ``low``, back in float64."""
    return x.astype(low).astype(np.float64)


def rel_err(got, ref):
    return float(np.max(np.abs(got.astype(np.float64) - ref)) / np.max(np.abs(ref)))


@pytest.fixture
def mats():
    rng = np.random.default_rng(7)
    return (rng.standard_normal((48, 96)).astype(np.float32), rng.standard_normal((96, 40)).astype(np.float32))


def program(mode):
    @pyasc.operator(precision_mode=mode)
    def f(a, b):
        return np.exp((a @ b) * 0.05) + 1.0

    return f


@pytest.mark.parametrize("low", ["fp16", "bf16"])
def test_mixed_rounds_only_the_matmul_operands(mats, low):
    a, b = mats
    got = program(f"mixed_{low}")(a, b)
    assert got.dtype == np.float32
    t = LOW[low]
    ref = np.exp((rounded(a, t) @ rounded(b, t)) * 0.05) + 1.0
    assert rel_err(got, ref) < 2e-6
    # ... and differs from the float32 program by the operand rounding.
    exact = np.exp((a.astype(np.float64) @ b) * 0.05) + 1.0
    assert rel_err(got, exact) > 1e-5
    g = nodes(program(f"mixed_{low}"), a, b)
    mm = [n for n in g if n[1] == "matmul"]
    assert len(mm) == 1 and mm[0][3] == "float32", "float32 accumulation"
    name = np.dtype(t).name
    # Each matmul operand is the float32 argument rounded through the 16-bit type.
    for operand in mm[0][2]:
        chain = []
        node = g[operand]
        while node[1].startswith("cast"):
            chain.append(node[1])
            node = g[node[2][0]]
        assert f"cast<{name}>" in chain and node[1].startswith("input"), chain
    # exp, mul and add stay float32 with float32 operands.
    for n in g:
        if n[1] in ("exp", "mul", "add"):
            assert n[3] == "float32" and all(g[o][3] == "float32" for o in n[2]), n


@pytest.mark.parametrize("low", ["fp16", "bf16"])
def test_force_stores_float32_values_in_16_bits_and_returns_float32(low):
    x = np.random.default_rng(1).standard_normal(10_001).astype(np.float32)

    @pyasc.operator(precision_mode=f"force_{low}")
    def f(x):
        return x * 3.0 + 1.0, (x * x).sum(), x > 0.1

    y, s, m = f(x)
    assert (y.dtype, s.dtype, m.dtype) == (np.float32, np.float32, np.bool_)
    xr = rounded(x, LOW[low])
    np.testing.assert_allclose(y, xr * 3.0 + 1.0, rtol=1e-6, atol=1e-6)
    # The sum accumulates in float32 over the rounded values.
    np.testing.assert_allclose(s, (xr * xr).sum(), rtol=1e-5)
    np.testing.assert_array_equal(m, xr > 0.1)
    # Different from fp32 where the rounding shows.
    assert not np.array_equal(y, x * np.float32(3) + np.float32(1))


def test_the_article_shorthand_is_force_fp16():
    x = np.random.default_rng(2).standard_normal(4096).astype(np.float32)

    @pyasc.operator(precision="fp16")
    def gelu_npu(x):
        return pyasc.fast_gelu(x)

    @pyasc.operator(precision_mode="force_fp16")
    def gelu_forced(x):
        return pyasc.fast_gelu(x)

    np.testing.assert_array_equal(gelu_npu(x), gelu_forced(x))
    assert gelu_npu.options["precision_mode"] == "force_fp16"
    # fast_gelu of the float16-rounded input, in float32 lanes.
    assert not np.array_equal(gelu_npu(x), pyasc.operator(lambda v: pyasc.fast_gelu(v))(x))


def test_float64_programs_ignore_the_policies():
    x = np.random.default_rng(3).standard_normal(1000)
    plain = pyasc.operator(lambda v: np.exp(v) * 2.0)(x)
    for mode in ("force_fp16", "force_bf16", "mixed_bf16"):
        got = pyasc.operator(precision_mode=mode)(lambda v: np.exp(v) * 2.0)(x)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, plain)


def test_ops_without_a_16_bit_form_stay_float32_under_force():
    x = np.random.default_rng(4).standard_normal((8, 300)).astype(np.float32)

    @pyasc.operator(precision_mode="force_bf16")
    def f(x):
        return np.cumsum(x * 2.0, axis=-1), np.sort(x, axis=-1)

    c, s = f(x)
    xr = rounded(x, BF16)
    np.testing.assert_allclose(c, np.cumsum(xr * 2.0, axis=-1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(s, np.sort(x, axis=-1))  # the sort reads the float32 input


def test_fp32_scope_keeps_the_first_layer_in_float32(mats):
    a, b = mats
    w = np.random.default_rng(5).standard_normal((40, 24)).astype(np.float32)

    @pyasc.operator(precision_mode="mixed_bf16")
    def net(a, b, w):
        with pyasc.precision_scope("fp32"):
            h = a @ b
        h = np.maximum(h, 0.0)
        return h @ w

    got = net(a, b, w)
    h = np.maximum(a.astype(np.float64) @ b, 0.0)
    ref = rounded(h, BF16) @ rounded(w, BF16)
    assert rel_err(got, ref) < 2e-6
    g = nodes(net, a, b, w)
    mms = [n for n in g if n[1] == "matmul"]
    assert len(mms) == 2
    first, second = mms
    assert all(g[o][1].startswith("input") for o in first[2]), "the scoped matmul reads float32 inputs"
    assert all(any(c[1] == "cast<bfloat16>" for c in g if c[0] <= o) for o in second[2])
    traced = net.get_compiled_op(a, b, w).graph_ir(traced=True)
    assert "[fp32 scope]" in [ln for ln in traced.splitlines() if "matmul" in ln][0]


def test_scopes_nest_innermost_first():
    x = np.random.default_rng(6).standard_normal(5000).astype(np.float32)

    @pyasc.operator
    def f(x):
        with pyasc.precision_scope("bf16"):
            a = x * 3.0
            with pyasc.precision_scope("fp16"):
                b = x * 5.0
            with pyasc.precision_scope("fp32"):
                c = x * 7.0
            d = x * 9.0
        return a, b, c, d

    a, b, c, d = f(x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(a, rounded(x, BF16) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(b, rounded(x, np.float16) * 5.0, rtol=1e-6)
    np.testing.assert_array_equal(c, x * np.float32(7.0))
    np.testing.assert_allclose(d, rounded(x, BF16) * 9.0, rtol=1e-6)
    assert not np.allclose(a, x64 * 3.0, rtol=1e-5)


def test_a_scope_applies_to_the_trace_it_encloses_only():
    x = np.random.default_rng(8).standard_normal(2048).astype(np.float32)
    op = pyasc.operator(lambda v: v * 3.0)
    with pyasc.precision_scope("bf16"):
        inside = op(x)  # traced here, but its body opens no scope
    np.testing.assert_array_equal(inside, x * np.float32(3.0))
    np.testing.assert_array_equal(op(x), inside)


def test_casts_that_cancel_are_removed():
    x = (np.random.default_rng(9).standard_normal(1000) * 100).astype(np.float16)

    @pyasc.operator
    def f(x):
        return x.astype(np.float32).astype(np.float16) * 2

    np.testing.assert_array_equal(f(x), x * np.float16(2))
    g = nodes(f, x)
    # Left: the widening load of x and the rounding store of the product, nothing between.
    assert [n[1] for n in g if n[1].startswith("cast")] == ["cast<float32>", "cast<float16>"]
    mul = [n for n in g if n[1] == "mul"][0]
    assert g[mul[2][0]][1] == "cast<float32>" and g[g[mul[2][0]][2][0]][1].startswith("input")

    @pyasc.operator
    def both(x):
        return x.astype(np.float32).astype(np.float16)

    np.testing.assert_array_equal(both(x), x)
    assert not [n for n in nodes(both, x) if n[1].startswith("cast")]


def test_bad_scopes_and_modes_are_typed_errors():
    with pytest.raises(pyasc.InvalidArgumentError, match="precision_scope takes"):
        with pyasc.precision_scope("fp8"):
            pass
    with pytest.raises(pyasc.InvalidArgumentError, match="precision_mode"):
        pyasc.operator(precision_mode="mixed_fp8")
    with pytest.raises(pyasc.InvalidArgumentError, match="no precision_scope is open"):
        pyasc.precision_scope("fp32").__exit__(None, None, None)
