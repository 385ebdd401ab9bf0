"""The accuracy checker against independent float64 evaluations."""

import ml_dtypes
import numpy as np
import pyasc
import pytest


def test_a_float32_operator_passes_with_errors_measured_against_float64():
    x = np.linspace(-3, 3, 1001).astype(np.float32)
    op = pyasc.operator(lambda v: (np.exp(v) * 0.5, v.sum()))
    rep = pyasc.check_accuracy(op, x)
    assert rep.passed and len(rep.outputs) == 2
    ref = np.exp(x.astype(np.float64)) * 0.5
    err = np.abs(op(x)[0].astype(np.float64) - ref)
    o = rep.outputs[0]
    assert o.dtype == "float32" and o.shape == (1001,)
    assert o.max_abs == pytest.approx(err.max(), rel=1e-12)
    assert o.max_rel == pytest.approx((err / np.abs(ref)).max(), rel=1e-9)
    assert 0 < o.max_ulp <= 4  # pyasc's float32 exp is within 2 ulp
    assert o.worst_index is not None and o.worst_inputs[0] == float(x[o.worst_index])
    assert o.worst_got == float(op(x)[0][o.worst_index])
    assert "PASS" in str(rep) and "max ulp" in str(rep)
    assert str(op.check_accuracy(x)) == str(rep)


def test_cancellation_in_float32_is_reported_as_a_failure_with_its_worst_element():
    # (x + 1e4) - 1e4 loses x's low bits in float32; float64 keeps them.
    x = np.array([0.1, 0.25, 1.0 / 3.0, 2.0], np.float32)
    op = pyasc.operator(lambda v: (v + np.float32(1e4)) - np.float32(1e4))
    rep = op.check_accuracy(x)
    got, want = op(x).astype(np.float64), x.astype(np.float64)
    o = rep.outputs[0]
    assert not rep.passed and "FAIL" in str(rep)
    assert o.max_abs == pytest.approx(np.abs(got - want).max())
    assert o.beyond == pytest.approx(np.mean(np.abs(got - want) > o.atol + o.rtol * np.abs(want)))
    ulps = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert o.worst_index == (int(np.argmax(ulps)),)
    assert o.max_ulp == pytest.approx(ulps.max(), rel=1e-9) and o.max_ulp > 100


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
def test_16_bit_outputs_are_measured_in_their_own_ulps(dt):
    x = np.linspace(0.5, 4, 300).astype(dt)
    rep = pyasc.check_accuracy(pyasc.operator(lambda v: np.sqrt(v) * 3), x)
    o = rep.outputs[0]
    assert rep.passed and o.dtype == np.dtype(dt).name
    assert o.max_ulp <= 1.0  # one rounding of the float32 value


def test_integer_outputs_are_exact():
    rep = pyasc.check_accuracy(pyasc.operator(lambda v: v * 3 + 1), np.arange(10))
    assert rep.passed and rep.outputs[0].max_abs == 0.0
