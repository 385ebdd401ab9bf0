"""Typed errors: classes, codes in ACL bands, and the user's file and line."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from conftest import line_of

HERE = __file__



def test_codes_come_from_the_rust_core():
    from pyasc import _pyasc

    assert len(_pyasc.ERROR_CODES) == 12
    for name, code in _pyasc.ERROR_CODES.items():
        assert getattr(pyasc, name).code == code
    assert _pyasc.ERROR_CODES["InvalidArgumentError"] == 100000
    assert _pyasc.ERROR_CODES["NumericalError"] == 100007
    assert _pyasc.ERROR_CODES["IntegerOverflowError"] == 100008
    assert issubclass(pyasc.IntegerOverflowError, OverflowError)
    assert _pyasc.ERROR_CODES["DeviceError"] == 200002


def test_hierarchy_and_codes():
    classes = [pyasc.InvalidArgumentError, pyasc.AlignmentError, pyasc.ShapeError, pyasc.DTypeError,
               pyasc.TraceError, pyasc.FusionError, pyasc.UnsupportedError, pyasc.OutOfMemoryError,
               pyasc.DeviceError, pyasc.InternalError]
    codes = [c.code for c in classes]
    assert len(set(codes)) == len(codes)
    for c in classes:
        assert issubclass(c, pyasc.PyAscError)
        band = c.code // 100000
        assert band in (1, 2, 5)
    assert pyasc.AlignmentError.code == 100001
    assert pyasc.OutOfMemoryError.code // 100000 == 2
    assert pyasc.InternalError.code // 100000 == 5


def test_data_dependent_control_flow_names_the_if_line():
    def relu_branch(x):
        if x > 0:  # the offending line
            return x
        return -x

    op = pyasc.operator(relu_branch)
    with pytest.raises(pyasc.TraceError) as e:
        op(np.ones(3))
    assert e.value.filename == HERE
    assert e.value.lineno == line_of(relu_branch, "the offending line")
    assert f"{HERE}:{e.value.lineno}" in str(e.value)
    assert e.value.code == 100004


def test_broadcast_errors_name_the_expression_line():
    def add(a, b):
        c = a * 2.0
        return c + b  # mismatched shapes

    with pytest.raises(pyasc.ShapeError) as e:
        pyasc.operator(add)(np.ones(3), np.ones(4))
    assert e.value.lineno == line_of(add, "mismatched shapes")
    assert "(3,)" in str(e.value) and "(4,)" in str(e.value)


def test_dtype_errors_name_the_line():
    def bad(a):
        return a - a  # bool subtract

    with pytest.raises(pyasc.DTypeError) as e:
        pyasc.operator(bad)(np.ones(3, bool))
    assert e.value.lineno == line_of(bad, "bool subtract")

    def neg_pow(a):
        return a ** -1  # negative integer power

    # NumPy raises ValueError for integers to negative integer powers.
    with pytest.raises(pyasc.InvalidArgumentError) as e:
        pyasc.operator(neg_pow)(np.arange(3))
    assert isinstance(e.value, ValueError)
    assert e.value.lineno == line_of(neg_pow, "negative integer power")

    def fshift(a):
        return np.left_shift(a, 1)  # float shift

    with pytest.raises(pyasc.DTypeError) as e:
        pyasc.operator(fshift)(np.ones(3))
    assert e.value.lineno == line_of(fshift, "float shift")


def test_conversions_and_iteration_are_trace_errors():
    for body in (lambda x: float(x), lambda x: int(x), lambda x: [v for v in x], lambda x: np.asarray(x) + 1,
                 lambda x: range(x)):
        with pytest.raises(pyasc.TraceError):
            pyasc.operator(body)(np.ones(3))


def test_bad_returns_are_trace_errors():
    with pytest.raises(pyasc.TraceError, match="returned a str"):
        pyasc.operator(lambda x: "nope")(np.ones(3))


def test_escaped_tensors_cannot_be_used_later():
    kept = []

    @pyasc.operator
    def leak(x):
        kept.append(x)
        return x + 1

    leak(np.ones(2))
    with pytest.raises(pyasc.TraceError, match="after its operator returned"):
        kept[0] + 1


def test_unsupported_numpy_calls_are_typed():
    with pytest.raises(pyasc.UnsupportedError, match="np.fft"):
        pyasc.operator(lambda x: np.fft.fft(x))(np.ones(3))
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda x: np.add.reduce(x))(np.ones(3))


def test_user_exceptions_propagate_unchanged_and_the_operator_stays_usable():
    calls = {"n": 0}

    @pyasc.operator
    def flaky(x):
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyError("boom")
        return x * 3

    with pytest.raises(KeyError):
        flaky(np.ones(2))
    np.testing.assert_array_equal(flaky(np.ones(2)), np.full(2, 3.0))


def test_bad_log_level():
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.set_log_level("LOUD")


def test_truth_value_of_a_tensor_is_a_value_error_like_numpy():
    def both(a):
        return a > 0 and a < 1  # and on arrays

    with pytest.raises(ValueError) as e:
        pyasc.operator(both)(np.ones(3))
    assert isinstance(e.value, pyasc.TraceError)
    assert e.value.lineno == line_of(both, "and on arrays")
