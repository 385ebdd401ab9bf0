"""The class form: ``pyasc.AscendOperatorBase`` subclasses with ``compute(self, inputs)``."""

from __future__ import annotations

import inspect

import numpy as np
import pyasc
import pytest
from conftest import assert_matches, assert_ulp

HERE = __file__


def _inputs(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def _scale_add_ref(x, y, scale):
    """float64 reference of ``x * scale + y`` in float32: each op rounded once, as NumPy does."""
    prod = (x.astype(np.float64) * scale).astype(np.float32)
    return (prod.astype(np.float64) + y.astype(np.float64)).astype(np.float32)


class ScaleAdd(pyasc.AscendOperatorBase):
    """x * scale + y, with the scale an instance attribute."""

    def __init__(self, scale=2.0, **options):
        super().__init__(**options)
        self.scale = scale

    def compute(self, inputs):
        x, y = inputs
        return x * self.scale + y


def test_article_form_runs_on_the_npu_twin():
    class CustomOp(pyasc.AscendOperatorBase):
        def __init__(self):
            super().__init__(device="NPU")

        def compute(self, inputs):
            x, y = inputs
            return x + y

    op = CustomOp()
    x, y = _inputs()
    got = op(x, y)
    # One float32 rounding of the exact sum.
    assert_matches(got, (x.astype(np.float64) + y.astype(np.float64)).astype(np.float32))
    assert op.options["device_type"] == "npu" and op.device == "npu-twin"
    assert op.kernel_name == "CustomOp"


def test_instance_attributes_are_constants_of_the_trace():
    x, y = _inputs(4096, seed=1)
    op = ScaleAdd(0.75)
    got = op(x, y)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert_matches(got, _scale_add_ref(x, y, 0.75))
    program = op.get_compiled_op(x, y).tile_program(0)
    assert "scalar 0.75" in program, program  # a constant in the kernel, not an input
    # Another instance with another constant is another operator.
    assert_matches(ScaleAdd(-3.0)(x, y), _scale_add_ref(x, y, -3.0))


def test_changing_an_attribute_needs_cache_clear_to_retrace():
    x, y = _inputs(64, seed=2)
    op = ScaleAdd(2.0)
    first = op(x, y)
    assert_matches(first, _scale_add_ref(x, y, 2.0))
    op.scale = 5.0
    # The signature was traced with scale 2.0; the constant is captured.
    assert_matches(op(x, y), first)
    op.cache_clear()
    assert_matches(op(x, y), _scale_add_ref(x, y, 5.0))


def test_cache_info_and_get_compiled_op_delegate():
    op = ScaleAdd(kernel_name="scale_add")
    with pytest.raises(pyasc.InvalidArgumentError, match="not been compiled yet"):
        op.get_compiled_op()
    assert op.cache_info() == pyasc.CacheInfo(hits=0, misses=0, compiles=0, currsize=0)
    x, y = _inputs(100)
    op(x, y)
    op(x, y)
    assert op.cache_info() == pyasc.CacheInfo(hits=1, misses=1, compiles=1, currsize=1)
    op(x[:10], y[:10])  # a new shape: a new signature
    assert op.cache_info().currsize == 2
    latest = op.get_compiled_op()
    assert "(10,)" in latest.tile_program(0) and "scale_add" in latest.tile_program(0)
    # Example arguments compile without running.
    op.get_compiled_op(x.astype(np.float64), y.astype(np.float64))
    assert op.cache_info().compiles == 3
    op.cache_clear()
    assert op.cache_info().currsize == 0


def test_every_operator_option_is_accepted_and_recorded():
    op = ScaleAdd(
        device_type="cpu",
        kernel_name="k",
        op_break_level=0,
        precision="fp16",
        compute_type="vector",
        atomic_flag=False,
        dynamic_shape=True,
        gears="pow2",
        debug=False,
    )
    opts = op.options
    assert opts["device_type"] == "cpu" and opts["kernel_name"] == "k" and opts["op_break_level"] == 0
    assert opts["precision_mode"] == "force_fp16" and opts["compute_type"] == "vector"
    assert opts["atomic_flag"] is False and opts["dynamic_shape"] is True and opts["gears"] == "pow2"
    x, y = _inputs(50)
    op(x, y)
    # op_break_level=0: one kernel per op: the multiply, the add and, under float16 storage,
    # each input's rounding through float16 (a cast there and one back).
    assert len(op.get_compiled_op().kernels()) == 6
    assert op.get_compiled_op().graph_ir().count("cast<float16>") == 2
    ref = x.astype(np.float16).astype(np.float64) * 2.0 + y.astype(np.float16)
    np.testing.assert_allclose(op(x, y)[:50], ref, rtol=1e-6)  # gears="pow2" pads to 64
    assert op.device == "cpu"


@pytest.mark.parametrize("options", [{"unroll": 4}, {"device": "gpu"}, {"op_break_level": 9}, {"precision": "fp8"}])
def test_bad_options_raise_at_construction(options):
    with pytest.raises(pyasc.InvalidArgumentError) as e:
        ScaleAdd(**options)
    assert e.value.code == 100000


def test_default_options():
    class Plain(pyasc.AscendOperatorBase):
        def __init__(self):
            super().__init__()

        def compute(self, inputs):
            (x,) = inputs
            return pyasc.exp(x)

    op = Plain()
    assert op.options == pyasc.core.decorators.validate_options({})
    assert op.device == "cpu"
    x, _ = _inputs(300)
    assert_ulp(op(x), np.exp(x.astype(np.float64)), 2)


def test_a_subclass_without_init_gets_the_defaults():
    class NoInit(pyasc.AscendOperatorBase):
        def compute(self, inputs):
            a, b = inputs
            return a - b

    x, y = _inputs(20)
    assert_matches(NoInit()(x, y), (x.astype(np.float64) - y.astype(np.float64)).astype(np.float32))


def test_missing_compute_is_unsupported():
    class Empty(pyasc.AscendOperatorBase):
        pass

    op = Empty()
    x, y = _inputs(8)
    with pytest.raises(pyasc.UnsupportedError, match="compute") as e:
        op(x, y)
    assert isinstance(e.value, NotImplementedError)
    with pytest.raises(NotImplementedError):
        op.get_compiled_op(x)


def test_tuple_results_scalars_and_arity():
    class Stats(pyasc.AscendOperatorBase):
        def compute(self, inputs):
            x, *rest = inputs
            shift = sum(rest)  # scalars and further arrays, however many
            return x + shift, x * x

    op = Stats()
    x, y = _inputs(30)
    s, sq = op(x, 1.5)
    x64 = x.astype(np.float64)
    assert_ulp(s, x64 + 1.5, 0.5)
    assert_ulp(sq, x64 * x64, 0.5)
    three = op(x, y, y)[0]
    assert_ulp(three, x64 + 2.0 * y.astype(np.float64), 0.5)  # y + y is exact


def test_keyword_inputs_are_rejected():
    x, y = _inputs(4)
    with pytest.raises(pyasc.InvalidArgumentError, match="positionally"):
        ScaleAdd()(x, y=y)


def test_errors_in_compute_point_at_the_users_line():
    class Branchy(pyasc.AscendOperatorBase):
        def compute(self, inputs):
            (x,) = inputs
            if x > 0:  # the offending line
                return x
            return -x

    with pytest.raises(pyasc.TraceError) as e:
        Branchy()(np.ones(3, np.float32))
    src, start = inspect.getsourcelines(Branchy.compute)
    line = start + next(i for i, s in enumerate(src) if "the offending line" in s)
    assert e.value.filename == HERE and e.value.lineno == line


def test_article_transpose_of_a_vector():
    class CustomOp(pyasc.AscendOperatorBase):
        def __init__(self):
            super().__init__(device="NPU")

        def compute(self, inputs):
            x, y = inputs
            return x + y.T

    x, y = _inputs(16)
    assert_matches(CustomOp()(x, y), (x.astype(np.float64) + y.astype(np.float64)).astype(np.float32))
