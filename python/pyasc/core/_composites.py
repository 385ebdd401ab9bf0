"""NumPy functions and multi-output ufuncs built from ops of the table inside operators.

``divmod modf frexp float_power fix angle real imag copy`` and the ``*_like`` creators.

Each follows NumPy's result dtypes and special values (``modf(-3.0) == (-0.0, -3.0)``,
``frexp(0) == (0, 0)``, ``frexp(inf) == (inf, 0)``).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import _pyasc


def _u(name: str, x: Any) -> Any:
    return _pyasc.apply_unary(name, x)


def _b(name: str, a: Any, b: Any) -> Any:
    return _pyasc.apply_binary(name, a, b)


def _dtype(x: Any) -> np.dtype:
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def _cast(x: Any, dtype: Any) -> Any:
    return _pyasc.apply_cast(x, dtype) if isinstance(x, _pyasc.Tensor) else np.asarray(x).astype(dtype)


def _as_float(x: Any) -> Any:
    return x if _dtype(x).kind == "f" else _cast(x, np.float64)


def divmod_(a: Any, b: Any) -> Tuple[Any, Any]:
    """Return ``(a // b, a % b)`` with NumPy's ``floor_divide`` and ``remainder``."""
    return _b("floordiv", a, b), _b("mod", a, b)


def modf(x: Any) -> Tuple[Any, Any]:
    """Fractional and integral parts, both with x's sign (floats; integers become float64)."""
    x = _as_float(x)
    whole = _u("trunc", x)
    frac = _pyasc.apply_where(_u("isinf", x), 0.0, _b("sub", x, whole))
    return _b("copysign", frac, x), whole


def frexp(x: Any) -> Tuple[Any, Any]:
    """Mantissa in ``[0.5, 1)`` (signed) and int32 exponent with ``x == m * 2**e``."""
    x = _as_float(x)
    regular = _b("and", _u("isfinite", x), _b("ne", x, 0.0))
    e = _b("add", _u("floor", _u("log2", _u("abs", x))), 1.0)
    e = _pyasc.apply_where(regular, e, 0.0)
    m = _b("ldexp", x, _u("neg", e))
    # log2 may round across a power of two: move m back into [0.5, 1).
    big = _b("and", regular, _b("ge", _u("abs", m), 1.0))
    e = _pyasc.apply_where(big, _b("add", e, 1.0), e)
    m = _pyasc.apply_where(big, _b("mul", m, 0.5), m)
    small = _b("and", regular, _b("lt", _u("abs", m), 0.5))
    e = _pyasc.apply_where(small, _b("sub", e, 1.0), e)
    m = _pyasc.apply_where(small, _b("mul", m, 2.0), m)
    return _pyasc.apply_where(regular, m, x), _cast(e, np.int32)


def float_power(a: Any, b: Any) -> Any:
    """Compute ``a ** b`` in float64 (NumPy's ``float_power``)."""
    return _b("pow", _cast(a, np.float64), _cast(b, np.float64))


def fix(x: Any, out: Any = None) -> Any:
    """Round toward zero (integers unchanged)."""
    if out is not None:
        from ..errors import UnsupportedError

        raise UnsupportedError("np.fix(..., out=) is not supported inside operators")
    return _u("trunc", x)


def angle(z: Any, deg: bool = False) -> Any:
    """Return the argument of a real number: 0 for x >= +0, pi for x <= -0 (as float)."""
    r = _b("arctan2", 0.0, z)
    return _u("rad2deg", r) if deg else r


def real(x: Any) -> Any:
    """Return the real part: the array itself for real dtypes."""
    return x


def imag(x: Any) -> Any:
    """Return the imaginary part: zeros of x's dtype and shape for real dtypes."""
    return zeros_like(x)


def conj(x: Any) -> Any:
    """Return the complex conjugate: a copy for real dtypes."""
    return _u("conjugate", x)


def copy(x: Any, order: str = "K", subok: bool = False) -> Any:
    """Return a copy of x."""
    return _u("positive", x)


def _like(x: Any, value: Any, dtype: Any, shape: Any) -> Any:
    from ..api.creation import full

    dt = _dtype(x) if dtype is None else np.dtype(dtype)
    return full(tuple(x.shape) if shape is None else shape, value, dt)


def zeros_like(x: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None) -> Any:
    """Zeros with x's shape and dtype."""
    return _like(x, 0, dtype, shape)


def ones_like(x: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None) -> Any:
    """Ones with x's shape and dtype."""
    return _like(x, 1, dtype, shape)


def full_like(
    x: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Optional[Any] = None
) -> Any:
    """``fill_value`` with x's shape and dtype."""
    return _like(x, fill_value, dtype, shape)


def empty_like(x: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None) -> Any:
    """Return an array with x's shape and dtype (zero-filled inside operators)."""
    return _like(x, 0, dtype, shape)


def fabs(x: Any) -> Any:
    """``|x|`` computed in floats (integers convert as NumPy's float loops do)."""
    dt = np.result_type(x.dtype, np.float16)
    return abs(x.astype(dt) if x.dtype != dt else x)


def bitwise_count(x: Any) -> Any:
    """Count the 1 bits in ``|x|`` (uint8), by the SWAR popcount on 64-bit lanes."""
    if x.dtype.kind not in "iu":
        from ..errors import DTypeError, at_user_line

        raise at_user_line(DTypeError(f"np.bitwise_count is defined for integers, not {x.dtype}"))
    # |x| read as the unsigned type of its width (|-128| of int8 is 128), widened to 64 bits.
    v = (abs(x).astype(f"u{x.dtype.itemsize}") if x.dtype.kind == "i" else x).astype(np.uint64)
    v = v - ((v >> 1) & 0x5555555555555555)
    v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((v * 0x0101010101010101) >> 56).astype(np.uint8)


def vecdot(a: Any, b: Any) -> Any:
    """``sum(conj(a) * b)`` over the last axis (NumPy 2's ``vecdot``)."""
    return (np.conj(a) * b).sum(axis=-1)


def matvec(m: Any, v: Any) -> Any:
    """Matrix times vector over the last axes, batch axes broadcast (NumPy 2's ``matvec``)."""
    return (m * np.expand_dims(v, -2)).sum(axis=-1)


def vecmat(v: Any, m: Any) -> Any:
    """Conjugated vector times matrix over the last axes (NumPy 2's ``vecmat``)."""
    return (np.expand_dims(np.conj(v), -1) * m).sum(axis=-2)


#: NumPy ufuncs with two outputs, or with a result dtype of their own.
UFUNCS = {"divmod": divmod_, "modf": modf, "frexp": frexp, "float_power": float_power, "fabs": fabs,
          "bitwise_count": bitwise_count, "vecdot": vecdot, "matvec": matvec, "vecmat": vecmat}

#: NumPy functions (``__array_function__``) built here.
FUNCTIONS = {
    "fix": fix,
    "angle": angle,
    "real": real,
    "imag": imag,
    "copy": copy,
    "zeros_like": zeros_like,
    "ones_like": ones_like,
    "full_like": full_like,
    "empty_like": empty_like,
}
