"""The pyasc exception hierarchy.

Every error pyasc raises is a :class:`PyAscError` with a numeric ``code`` in ACL-style
bands (1xxxxx invalid input, 2xxxxx resources, 5xxxxx internal) and, when it comes from
the user's code, the ``filename`` and ``lineno`` of the Python expression responsible.
The codes are the Rust core's (``_pyasc.ERROR_CODES``), set on the classes at import.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "PyAscError",
    "InvalidArgumentError",
    "AlignmentError",
    "ShapeError",
    "DTypeError",
    "TraceError",
    "FusionError",
    "UnsupportedError",
    "NumericalError",
    "IntegerOverflowError",
    "OutOfMemoryError",
    "DeviceError",
    "InternalError",
    "PyAscWarning",
]


class PyAscError(Exception):
    """Base class of every pyasc error."""

    code: int = 0
    filename: Optional[str] = None
    lineno: Optional[int] = None


class InvalidArgumentError(PyAscError, ValueError):
    """An argument or option that is not accepted."""


class AlignmentError(PyAscError, ValueError):
    """Memory that is not aligned as the device requires."""


class ShapeError(PyAscError, ValueError):
    """Shapes that do not broadcast or do not fit an op."""


class DTypeError(PyAscError, TypeError):
    """A dtype an op does not accept."""


class TraceError(PyAscError, ValueError):
    """A Python construct that cannot be traced, such as data-dependent control flow.

    Also a ``ValueError``, as NumPy raises for the truth value of an array (``if x > 0``,
    ``a and b``).
    """


class FusionError(PyAscError):
    """A function required to become one kernel could not be fused."""


class UnsupportedError(PyAscError, NotImplementedError):
    """A feature the API names but this version or backend does not provide."""


class NumericalError(PyAscError, ArithmeticError):
    """An op of a ``debug=True`` operator produced NaN or infinity."""


class IntegerOverflowError(PyAscError, OverflowError):
    """A Python integer outside the range of the integer dtype it meets.

    ``int8_array + 300`` raises it where NumPy 2 raises ``OverflowError``.
    """


class OutOfMemoryError(PyAscError, MemoryError):
    """The device ran out of memory."""


class DeviceError(PyAscError):
    """The device failed while running a kernel."""


class InternalError(PyAscError):
    """A bug in pyasc; please report it."""


class PyAscWarning(UserWarning):
    """A setting pyasc cannot use and replaces by its default (an invalid ``PYASC_*`` value)."""


def _set_codes() -> None:
    from . import _pyasc

    for name, code in _pyasc.ERROR_CODES.items():
        globals()[name].code = code


_set_codes()


def at_user_line(exc: PyAscError) -> PyAscError:
    """Attach the user's file and line (the innermost frame outside pyasc and NumPy) to ``exc``."""
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    try:
        import numpy

        skip = (here, os.path.dirname(os.path.abspath(numpy.__file__)) + os.sep)
    except ImportError:  # pragma: no cover - numpy is a dependency
        skip = (here,)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(skip + ("<frozen",)):
        frame = frame.f_back
    if frame is not None:
        exc.filename, exc.lineno = frame.f_code.co_filename, frame.f_lineno
        exc.args = (f"{exc.args[0] if exc.args else ''} (at {exc.filename}:{exc.lineno})",) + exc.args[1:]
    return exc
