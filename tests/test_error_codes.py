"""Every error class of ``_pyasc.ERROR_CODES`` that user input can reach is raised by a real
input, with its class, its code and (for errors in user code) the user's line."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from pyasc import _pyasc

HERE = __file__


def _invalid_option():
    pyasc.operator(op_break_level=7)(lambda t: t)


def _alignment():
    pyasc.DeviceArray((4,), np.float32, alignment=3)


def _shape():
    pyasc.operator(lambda a, b: a + b)(np.ones(3), np.ones(4))


def _dtype():
    pyasc.operator(lambda a: a - a)(np.ones(3, bool))


def _trace():
    pyasc.operator(lambda a: float(a))(np.ones(3))


def _unsupported():
    pyasc.operator(lambda a: np.fft.fft(a))(np.ones(3))


def _numerical():
    pyasc.operator(debug=True)(lambda a: np.log(a))(np.array([1.0, -1.0]))


def _overflow():
    pyasc.operator(lambda a: a + 300)(np.ones(3, np.int8))


def _out_of_memory():
    pyasc.empty((1 << 41,), np.float64)


REACHABLE = {
    "InvalidArgumentError": (_invalid_option, ValueError),
    "AlignmentError": (_alignment, ValueError),
    "ShapeError": (_shape, ValueError),
    "DTypeError": (_dtype, TypeError),
    "TraceError": (_trace, ValueError),
    "UnsupportedError": (_unsupported, NotImplementedError),
    "NumericalError": (_numerical, ArithmeticError),
    "IntegerOverflowError": (_overflow, OverflowError),
    "OutOfMemoryError": (_out_of_memory, MemoryError),
}
# No user input reaches these: fusion is never required (there is no fused-operator form in this
# version), kernels on the host do not fail, and an internal error is a bug.
UNREACHABLE = {"FusionError", "DeviceError", "InternalError"}


def test_the_tables_cover_every_code():
    assert set(REACHABLE) | UNREACHABLE == set(_pyasc.ERROR_CODES)


@pytest.mark.parametrize("name", sorted(REACHABLE))
def test_each_reachable_error_is_raised_with_its_class_and_code(name):
    trigger, builtin = REACHABLE[name]
    cls = getattr(pyasc, name)
    with pytest.raises(cls) as e:
        trigger()
    assert type(e.value) is cls, type(e.value)
    assert isinstance(e.value, builtin) and isinstance(e.value, pyasc.PyAscError)
    assert e.value.code == _pyasc.ERROR_CODES[name]
    band = {1: "invalid input", 2: "resources"}[e.value.code // 100000]
    assert band


@pytest.mark.parametrize(
    "name", ["ShapeError", "DTypeError", "TraceError", "UnsupportedError", "NumericalError", "IntegerOverflowError"]
)
def test_errors_in_user_code_name_the_user_line(name):
    trigger, _ = REACHABLE[name]
    with pytest.raises(getattr(pyasc, name)) as e:
        trigger()
    assert e.value.filename == HERE, (e.value.filename, e.value)
    assert e.value.lineno is not None and f"{HERE}:{e.value.lineno}" in str(e.value)
