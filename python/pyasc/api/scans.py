"""Scans: running sums, products, maxima, minima and log-sum-exps along an axis.

``cumsum cumprod cummax cummin logcumsumexp`` (JAX's ``lax.cumsum ... cumlogsumexp``), and
inside operators ``np.cumsum``, ``np.cumprod``, ``np.cumulative_sum``, ``np.cumulative_prod``,
``np.nancumsum``, ``np.nancumprod``, ``x.cumsum()``, ``x.cumprod()`` and
``np.add/multiply/maximum/minimum/logaddexp.accumulate``.
Result dtypes are NumPy's (asked of NumPy itself: ``np.cumsum`` of bool or int8 is int64, of
uint8 uint64; ``maximum.accumulate`` keeps the dtype; ``dtype=`` casts first, as NumPy does).
A scan along the last axis of rows of up to 16384 elements runs inside a fused row kernel with
its elementwise producers and consumers (``np.cumsum(x * 2 + 1, -1) / n`` is one pass over
memory); other scans are one library kernel, parallel over lines and within long lines, with
elementwise consumers of the result run inside that kernel.
"""

from __future__ import annotations

import operator as _operator
from typing import Any, Callable, Optional

import numpy as np

from .. import _pyasc
from ..errors import DTypeError, InvalidArgumentError, ShapeError, UnsupportedError, at_user_line
from ..ops import _eager_op, _is_traced

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "cumlogsumexp"]

#: Scan name -> the NumPy call whose result dtype the scan takes (``f(array, dtype=)``).
_NUMPY: dict = {
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "cummax": np.maximum.accumulate,
    "cummin": np.minimum.accumulate,
    "logcumsumexp": np.logaddexp.accumulate,
}

#: ufunc name -> (scan name, the ufunc's accumulate for result dtypes).
_ACCUMULATE: dict = {
    "add": ("cumsum", np.add.accumulate),
    "multiply": ("cumprod", np.multiply.accumulate),
    "maximum": ("cummax", np.maximum.accumulate),
    "minimum": ("cummin", np.minimum.accumulate),
    "logaddexp": ("logcumsumexp", np.logaddexp.accumulate),
}


def _result_dtype(name: str, probe: Callable[..., Any], dtype: Any, requested: Any) -> np.dtype:
    """Return the dtype NumPy's ``probe`` gives for ``dtype`` input and ``dtype=requested``."""
    try:
        rt = probe(np.zeros(1, dtype), dtype=requested).dtype
    except TypeError as e:
        raise at_user_line(DTypeError(f"{name} of {np.dtype(dtype)}: {e}")) from None
    if rt == np.float16:
        raise at_user_line(DTypeError(f"{name} of {np.dtype(dtype)} gives float16, which pyasc does not compute yet; "
                                      "cast to float32 first"))
    if rt.kind == "c":
        raise at_user_line(UnsupportedError(f"{name} of {np.dtype(dtype)} into {rt} is not supported; "
                                            "pass complex operands instead"))
    return rt


def _axis(name: str, axis: Any, ndim: int) -> int:
    """Return ``axis`` normalised for a tensor of rank ``ndim`` (a typed error if it is bad)."""
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    try:
        a = _operator.index(axis)
    except TypeError:
        raise at_user_line(InvalidArgumentError(f"{name}: axis must be an int or None, not {axis!r}")) from None
    if not -ndim <= a < ndim:
        raise at_user_line(ShapeError(f"{name}: axis {a} is out of bounds for a tensor of rank {ndim}"))
    return a % ndim


def _flip(x: Any, axis: int) -> Any:
    from .movement import flip

    return flip(x, axis)


def _scan(name: str, x: Any, axis: Any, dtype: Any, probe: Callable[..., Any], reverse: bool = False) -> Any:
    """Record the scan ``name`` of the traced ``x`` (``axis`` None: over the flattened tensor)."""
    from .movement import reshape

    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    elif x.ndim == 0:
        # NumPy scans a 0-d array as a 1-d one (axis 0 or -1).
        x = reshape(x, (1,))
    a = _axis(name, axis, x.ndim)
    rt = _result_dtype(name, probe, x.dtype, dtype)
    if x.dtype != rt or x.is_weak:
        x = x.astype(rt)
    if reverse:
        return _flip(_pyasc.apply_scan(name, _flip(x, a), a), a)
    return _pyasc.apply_scan(name, x, a)


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise at_user_line(UnsupportedError(f"{name}(..., out=) is not supported inside operators"))


def _public(name: str, doc: str) -> Callable[..., Any]:
    def f(x: Any, axis: Optional[int] = None, dtype: Any = None, reverse: bool = False) -> Any:
        if getattr(x, "_pyasc_complex", False) is True:
            if name != "cumsum":
                raise at_user_line(UnsupportedError(f"{name} of complex values is not supported"))
            return _complex_cumsum(x, axis, dtype)
        if _is_traced(x):
            return _scan(name, x, axis, dtype, _NUMPY[name], reverse)
        if isinstance(x, (list, tuple, int, float, bool)):
            x = np.asarray(x)
        key = f"{name}:{axis!r}:{dtype!r}:{reverse}"
        return _eager_op(key, lambda t: f(t, axis, dtype, reverse))(x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


cumsum = _public("cumsum", """Running sums along ``axis`` (None: over the flattened array), NumPy ``cumsum``.

``dtype`` casts first (NumPy's result dtypes otherwise: bool and signed integers give int64,
unsigned ones uint64); ``reverse=True`` scans from the end (JAX's ``lax.cumsum(reverse=)``).
float32 sums accumulate in float64 and round each output once.""")
cumprod = _public("cumprod", """Running products along ``axis`` (None: flattened), NumPy ``cumprod``.

Integers wrap as in NumPy (bool and signed integers give int64, unsigned ones uint64).""")
cummax = _public("cummax", """Running maxima along ``axis`` (None: flattened), ``np.maximum.accumulate``.

The dtype is kept; NaN propagates from its position on.""")
cummin = _public("cummin", """Running minima along ``axis`` (None: flattened), ``np.minimum.accumulate``.

The dtype is kept; NaN propagates from its position on.""")
logcumsumexp = _public("logcumsumexp", """Running ``log(sum(exp(x)))`` along ``axis`` (None: flattened).

``np.logaddexp.accumulate`` (JAX's ``lax.cumlogsumexp``), computed stably in float64 per step.""")

#: JAX's name (``jax.lax.cumlogsumexp``).
cumlogsumexp = logcumsumexp


def _complex_cumsum(z: Any, axis: Any, dtype: Any) -> Any:
    """Scan a complex traced value: running sums of its parts, each on its own."""
    if dtype is not None and np.dtype(dtype).kind != "c":
        raise at_user_line(UnsupportedError(f"cumsum of complex values into {np.dtype(dtype)} is not supported"))
    parts = z._map(lambda p: p)
    if dtype is not None:
        part = np.float32 if np.dtype(dtype) == np.complex64 else np.float64
        parts = parts._map(lambda p: p.astype(part))
    return parts._map(lambda p: cumsum(p, axis))


def numpy_cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``np.cumsum`` inside operators."""
    _no_out("np.cumsum", out)
    return cumsum(a, axis, dtype)


def numpy_cumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``np.cumprod`` inside operators."""
    _no_out("np.cumprod", out)
    return cumprod(a, axis, dtype)


def _nan_to(a: Any, value: float) -> Any:
    """Return ``a`` with NaN replaced by ``value`` (only floats hold NaN)."""
    return np.where(np.isnan(a), value, a) if np.dtype(a.dtype).kind == "f" else a


def numpy_nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``np.nancumsum`` inside operators: NaN counts as zero."""
    _no_out("np.nancumsum", out)
    return cumsum(_nan_to(a, 0.0), axis, dtype)


def numpy_nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``np.nancumprod`` inside operators: NaN counts as one."""
    _no_out("np.nancumprod", out)
    return cumprod(_nan_to(a, 1.0), axis, dtype)


def _cumulative(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    def impl(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None, include_initial: bool = False) -> Any:
        _no_out(f"np.{name}", out)
        if include_initial:
            raise at_user_line(
                UnsupportedError(f"np.{name}(..., include_initial=True) is not supported inside operators"))
        if axis is None and x.ndim > 1:
            raise at_user_line(ShapeError(f"np.{name} of a tensor of more than one dimension needs an axis"))
        return f(x, axis, dtype)

    impl.__name__ = name
    return impl


numpy_cumulative_sum = _cumulative("cumulative_sum", cumsum)
numpy_cumulative_prod = _cumulative("cumulative_prod", cumprod)


def _method_cumsum(x: Any, axis: Any, dtype: Any, out: Any) -> Any:
    _no_out("cumsum", out)
    return cumsum(x, axis, dtype)


def _method_cumprod(x: Any, axis: Any, dtype: Any, out: Any) -> Any:
    _no_out("cumprod", out)
    return cumprod(x, axis, dtype)


def accumulate(ufunc: Any, x: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
    """``ufunc.accumulate(x, axis, dtype)`` of a traced ``x`` for add, multiply, maximum, minimum, logaddexp."""
    name = ufunc.__name__
    if name not in _ACCUMULATE:
        raise at_user_line(UnsupportedError(f"np.{name}.accumulate is not supported inside operators; "
                                            f"use one of {', '.join(_ACCUMULATE)}"))
    _no_out(f"np.{name}.accumulate", out)
    scan, probe = _ACCUMULATE[name]
    if x.ndim == 0:
        raise at_user_line(ShapeError(f"np.{name}.accumulate cannot accumulate on a 0-d tensor"))
    if axis is None:
        if x.ndim > 1:
            raise at_user_line(ShapeError(f"np.{name}.accumulate takes one axis, not None, of a {x.ndim}-d tensor"))
        axis = 0
    return _scan(scan, x, axis, dtype, probe)
