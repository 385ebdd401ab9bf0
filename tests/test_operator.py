"""The operator decorator: forms, options, the cache, arguments and outputs."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from conftest import assert_matches


def test_bare_and_called_decorator_forms():
    @pyasc.operator
    def a(x):
        return x + 1

    @pyasc.operator(device_type="NPU", compute_type="vector", kernel_name="b_kernel")
    def b(x):
        return x + 1

    x = np.arange(5, dtype=np.float32)
    assert_matches(a(x), x + 1)
    assert_matches(b(x), x + 1)
    assert a.__name__ == "a" and b.__name__ == "b_kernel"
    assert b.device == "npu-twin" and a.device == "cpu"
    assert a.__wrapped__(3) == 4


@pytest.mark.parametrize(
    "options",
    [
        {"device_type": "gpu"},
        {"compute_type": "matrix"},
        {"precision_mode": "fp8"},
        {"op_break_level": 4},
        {"op_break_level": True},
        {"atomic_flag": 1},
        {"dynamic_shape": "yes"},
        {"debug": None},
        {"kernel_name": ""},
        {"gears": "pow2"},
        {"dynamic_shape": True, "gears": {0: []}},
        {"unroll": 4},
    ],
)
def test_bad_options_are_typed_errors(options):
    with pytest.raises(pyasc.InvalidArgumentError) as e:
        pyasc.operator(**options)
    assert e.value.code == 100000


def test_options_are_recorded_normalised():
    op = pyasc.operator(lambda x: x, device_type="Npu", precision_mode="force_fp16", atomic_flag=False,
                        dynamic_shape=True, gears="pow2", debug=True)
    opts = op.options
    assert opts["device_type"] == "npu" and opts["precision_mode"] == "force_fp16"
    assert opts["atomic_flag"] is False and opts["dynamic_shape"] is True and opts["gears"] == "pow2"
    assert set(pyasc.OPTION_STATUS) >= set(opts)
    # The article's shorthand.
    assert pyasc.operator(lambda x: x, precision="fp16").options["precision_mode"] == "force_fp16"


def test_cache_is_keyed_by_signature_and_scalars_never_recompile():
    @pyasc.operator
    def scale(x, s):
        return x * s

    x32 = np.ones(4, np.float32)
    for s in (1.0, 2.5, -3.0):
        assert_matches(scale(x32, s), x32 * s)
    assert scale.cache_info() == pyasc.CacheInfo(hits=2, misses=1, compiles=1, currsize=1)
    assert_matches(scale(np.ones(5, np.float32), 2.0), np.full(5, 2.0, np.float32))
    assert_matches(scale(x32, 2), x32 * 2)
    assert_matches(scale(np.ones(4, np.int32), 3), np.full(4, 3, np.int32))
    assert_matches(scale(np.ones(4, np.int32), 0.5), np.full(4, 0.5))
    info = scale.cache_info()
    assert (info.misses, info.compiles, info.currsize) == (5, 5, 5)
    scale.cache_clear()
    assert scale.cache_info().currsize == 0


def test_keyword_arguments_and_defaults():
    @pyasc.operator
    def affine(x, a=2.0, b=1.0):
        return x * a + b

    x = np.linspace(-1, 1, 7)
    assert_matches(affine(x), x * 2.0 + 1.0)
    assert_matches(affine(x, b=-1.0), x * 2.0 - 1.0)
    assert_matches(affine(x=x, a=3.0), x * 3.0 + 1.0)
    with pytest.raises(pyasc.InvalidArgumentError):
        affine(x, c=1.0)


def test_numpy_scalars_and_0d_arrays_are_strongly_typed():
    @pyasc.operator
    def add(x, y):
        return x + y

    x = np.ones(3, np.float32)
    assert_matches(add(x, np.float64(1.0)), x + np.float64(1.0))
    assert_matches(add(x, np.array(2.0)), x + np.array(2.0))
    assert_matches(add(np.int32(3), np.int64(4)), np.int32(3) + np.array(np.int64(4)))


def test_output_kinds_shapes_and_dtypes():
    @pyasc.operator
    def many(x, y):
        return x + y, x > y, 3, x

    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    y = np.array([1, 2, 3], dtype=np.int32)
    s, gt, three, same = many(x, y)
    assert_matches(s, x + y)
    assert_matches(gt, x > y)
    assert_matches(three, np.array(3))
    assert_matches(same, x)
    assert same is not x and not np.shares_memory(same, x)


def test_zero_d_and_empty_arrays():
    @pyasc.operator
    def f(x):
        return pyasc.exp(x) * 2

    assert_matches(f(np.float64(0.5)), np.asarray(np.exp(0.5) * 2))
    for shape in [(0,), (3, 0), (0, 2, 5)]:
        e = np.zeros(shape, np.float32)
        assert_matches(f(e), np.exp(e) * 2)


def test_inputs_are_read_in_place_and_never_modified():
    @pyasc.operator
    def f(a, b):
        return a * 2 - b

    base = np.random.default_rng(0).standard_normal((40, 30))
    views = [base.T, base[::-1, ::2], base[:, 3], base[5], np.broadcast_to(base[:, :1], (40, 30))]
    before = base.copy()
    for v in views:
        got = f(v, 1.5)
        assert_matches(got, v * 2 - 1.5)
        assert got.flags.c_contiguous
    np.testing.assert_array_equal(base, before)
    assert f(base.T, base.T).shape == (30, 40)


def test_large_inputs_run_on_all_cores():
    @pyasc.operator
    def f(x):
        return pyasc.tanh(x) + x * x

    x = np.random.default_rng(1).standard_normal(1 << 20)
    np.testing.assert_allclose(f(x), np.tanh(x) + x * x, rtol=1e-14, atol=1e-15)


def test_non_array_arguments_are_typed_errors():
    @pyasc.operator
    def f(x):
        return x + 1

    for bad in ("abc", None, object()):
        with pytest.raises(pyasc.InvalidArgumentError, match="argument 0 \\(x\\)"):
            f(bad)
    # Lists and dicts are nested arguments (pytrees): the function receives them, and here its
    # own `+` rejects them, as in JAX.
    for tree in ([1, 2, 3], {"a": 1}):
        with pytest.raises(TypeError):
            f(tree)
    with pytest.raises(pyasc.DTypeError):
        f(np.ones(3, np.longdouble))
    # As NumPy, a Python int past every integer dtype is an OverflowError.
    with pytest.raises(pyasc.IntegerOverflowError, match="argument 0"):
        f(2**70)


def test_decorating_a_non_function_is_an_error():
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.operator(3)


def test_eager_op_library_on_numpy_arrays():
    x = np.linspace(-3, 3, 11, dtype=np.float32)
    assert_matches(pyasc.relu(x), np.maximum(x, 0))
    assert_matches(pyasc.where(x > 0, x, 0.0), np.where(x > 0, x, 0.0).astype(np.float32))
    assert_matches(pyasc.clip(x, -1.0, 1.0), np.clip(x, -1.0, 1.0))
    assert_matches(pyasc.cast(x, np.int32), x.astype(np.int32))
    assert_matches(pyasc.round(np.array([0.5, 1.5, 2.5, -0.5])), np.round(np.array([0.5, 1.5, 2.5, -0.5])))
    np.testing.assert_allclose(pyasc.round(np.array([1.234, -5.678]), 2), np.round(np.array([1.234, -5.678]), 2))


def test_device_info_names_the_twin_and_the_isa():
    cpu = pyasc.device_info("cpu")
    npu = pyasc.device_info("NPU")
    assert cpu["kind"] == "cpu" and npu["kind"] == "npu-twin"
    assert npu["local_memory_bytes"] == 192 * 1024
    assert cpu["isa"] in ("avx512", "avx2+fma", "sse2", "neon", "scalar")
    assert cpu["cores"] >= 1


def test_large_outputs_come_from_the_pool_and_are_reused():
    @pyasc.operator
    def f(x):
        return x * 2.0

    x = np.ones(1 << 20, np.float32)
    a = f(x)
    assert a.base is not None and type(a.base).__name__ == "PoolBuffer"
    assert a.flags.c_contiguous and a.flags.writeable and a.ctypes.data % 128 == 0
    ptr = a.ctypes.data
    del a
    before = pyasc.memory_stats()
    b = f(x)
    after = pyasc.memory_stats()
    assert b.ctypes.data == ptr and after["reuses"] == before["reuses"] + 1
    np.testing.assert_array_equal(b, np.full(1 << 20, 2.0, np.float32))
    b[0] = 5.0  # outputs are ordinary writable arrays
    assert after["bytes_in_use"] >= b.nbytes
    del b
    pyasc.empty_cache()
    assert pyasc.memory_stats()["bytes_cached"] == 0


def test_scalar_only_subexpressions_are_computed_once_and_registers_reused():
    # `s * 2 + 1` involves only broadcast values; its register is later reused for `x - 1`.
    @pyasc.operator
    def f(x, s):
        return (s * 2 + 1) * x + (x - 1) * (s - 3)

    x = np.linspace(-1, 1, 50000, dtype=np.float32).reshape(100, 500)
    for s in (0.5, -2.0):
        np.testing.assert_allclose(f(x, s), (s * 2 + 1) * x + (x - 1) * (s - 3), rtol=1e-6, atol=1e-6)
