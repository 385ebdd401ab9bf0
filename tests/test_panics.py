"""Failures inside the Rust core reach Python as typed pyasc errors: a panic (a pyasc bug) is an
``InternalError`` with its message, never ``pyo3_runtime.PanicException``, and NumPy failing to
create an output array is an ``OutOfMemoryError``, never a ``SystemError``. A private hook of the
extension makes the core fail at chosen places; pyasc keeps working afterwards."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from pyasc import _pyasc


@pytest.fixture
def fault():
    """Set the extension's fault hook for one test; always cleared afterwards."""
    yield _pyasc._set_test_panic
    _pyasc._set_test_panic(None)


def _scale_shift(x):
    return x * 2.0 + 1.0


def _assert_internal(err: BaseException) -> None:
    assert isinstance(err, pyasc.InternalError), type(err)
    assert err.code == 500001
    assert "test panic" in str(err)
    assert type(err).__name__ != "PanicException"


def test_a_panic_while_tracing_is_an_internal_error(fault):
    op = pyasc.operator(_scale_shift)
    x = np.arange(10, dtype=np.float32)
    fault("trace")
    with pytest.raises(pyasc.InternalError) as info:
        op(x)
    _assert_internal(info.value)
    fault(None)
    np.testing.assert_array_equal(op(x), x.astype(np.float64) * 2 + 1)


@pytest.mark.parametrize("n", [10, 1 << 16])
def test_a_panic_while_launching_is_an_internal_error(fault, n):
    # Small launches run with the GIL held, large ones with it released: both are guarded.
    op = pyasc.operator(_scale_shift)
    x = np.linspace(-1, 1, n, dtype=np.float32)
    want = x.astype(np.float64) * 2 + 1
    np.testing.assert_allclose(op(x), want, rtol=1e-6)
    fault("launch")
    with pytest.raises(pyasc.InternalError) as info:
        op(x)
    _assert_internal(info.value)
    fault(None)
    np.testing.assert_allclose(op(x), want, rtol=1e-6)


def test_numpy_failing_to_allocate_an_output_is_out_of_memory(fault):
    op = pyasc.operator(_scale_shift)
    x = np.arange(12, dtype=np.float64)
    fault("numpy_alloc")
    with pytest.raises(pyasc.OutOfMemoryError) as info:
        op(x)
    assert info.value.code == 200001
    assert "NumPy could not allocate" in str(info.value)
    fault(None)
    # NumPy's own exception was consumed, not left pending for a later call.
    np.testing.assert_array_equal(op(x), x * 2 + 1)


def test_unknown_fault_sites_are_refused():
    with pytest.raises(pyasc.InvalidArgumentError, match="unknown test panic site"):
        _pyasc._set_test_panic("nowhere")
