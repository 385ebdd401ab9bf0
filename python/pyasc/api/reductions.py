"""Reductions and the fused composites built on them.

``sum mean max min prod argmax argmin any all logsumexp`` over an ``axis`` (None, an int or
a tuple) with ``keepdims``; ``softmax log_softmax layer_norm rms_norm``. Inside an operator
they record graph nodes, and the compiler fuses each with its producers and consumers into
one pass over every row; on arrays outside an operator they run at once.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .. import _pyasc
from ..core import _moment_trace
from ..ops import _eager_op, _is_traced

__all__ = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all", "logsumexp", "softmax",
           "log_softmax", "layer_norm", "rms_norm"]

Axis = Any


def _axes(x: Any, axis: Axis) -> tuple:
    nd = x.ndim
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(a + nd if a < 0 else a for a in axis)


def _count(x: Any, axis: Axis) -> Any:
    """Return how many elements the reduction of ``x`` over ``axis`` reads.

    In a geared trace a padded axis counts its valid extent (a traced value), not the gear.
    """
    from ..core.dynamic import _valid_extents

    flags = _pyasc.gear_flags(x)
    valid = _valid_extents()
    n: Any = 1
    for a in _axes(x, axis):
        if not 0 <= a < x.ndim:
            return 1  # the reduction itself reports the bad axis
        gear = flags[a] if flags is not None and valid else None
        n = n * (valid[gear] if gear is not None else x.shape[a])
    return n


def _eager(name: str, fn: Callable[..., Any], x: Any, axis: Axis, keepdims: bool, *rest: Any) -> Any:
    key = f"{name}:{axis!r}:{keepdims}:{len(rest)}"
    return _eager_op(key, lambda t, *r: fn(t, axis, keepdims, *r))(x, *rest)


def _arg_axis(x: Any, axis: Axis) -> bool:
    """Return True for an ``argmax``/``argmin`` axis that names one axis of ``x`` (or None)."""
    if axis is None:
        return True
    return isinstance(axis, int) and not isinstance(axis, bool) and -x.ndim <= axis < x.ndim


def _reduction(name: str) -> Callable[..., Any]:
    def f(x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
        if _is_traced(x):
            if name in ("argmax", "argmin") and _moment_trace.active() and _arg_axis(x, axis):
                return _moment_trace.intercept(name, x, None if axis is None else (axis % x.ndim,), keepdims)
            return _pyasc.apply_reduce(name, x, axis, keepdims)
        if getattr(x, "_pyasc_complex", False) is True and name in ("sum", "prod"):
            return getattr(x, name)(axis, keepdims)
        return _eager(name, f, x, axis, keepdims)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``{name}`` over ``axis`` (None: every axis), keeping reduced axes as 1 if ``keepdims``."
    return f


sum = _reduction("sum")  # noqa: A001 - the API's name
prod = _reduction("prod")
max = _reduction("max")  # noqa: A001
min = _reduction("min")  # noqa: A001
argmax = _reduction("argmax")
argmin = _reduction("argmin")
any = _reduction("any")  # noqa: A001
all = _reduction("all")  # noqa: A001


def mean(x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis`` (integers average in float64, as in NumPy)."""
    if getattr(x, "_pyasc_complex", False) is True:
        return x.mean(axis, keepdims)
    if not _is_traced(x):
        return _eager("mean", mean, x, axis, keepdims)
    if x.ndim == 0 and (isinstance(axis, int) or (isinstance(axis, tuple) and axis)):
        # Unlike sum and max, NumPy's mean takes no axis of a 0-d array.
        from ..errors import ShapeError, at_user_line

        raise at_user_line(ShapeError(f"axis {axis} is out of bounds for a tensor of rank 0"))
    if x.dtype.kind != "f":
        # NumPy accumulates integer means in float64 (an int64 sum could wrap).
        x = x.astype("float64")
    return sum(x, axis, keepdims) / _count(x, axis)


def logsumexp(x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x)))`` over ``axis``, computed stably (the maximum is taken out first)."""
    if not _is_traced(x):
        return _eager("logsumexp", logsumexp, x, axis, keepdims)
    from ..ops import exp, isfinite, log, where

    m = max(x, axis, keepdims=True)
    shift = where(isfinite(m), m, 0.0)
    s = sum(exp(x - shift), axis, keepdims)
    mk = max(x, axis, keepdims)
    return log(s) + where(isfinite(mk), mk, 0.0)


def softmax(x: Any, axis: int = -1) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis``, stable; one pass over each row when it fits a tile."""
    if not _is_traced(x):
        return _eager("softmax", lambda t, a, k: softmax(t, a), x, axis, False)
    from ..ops import exp

    e = exp(x - max(x, axis, keepdims=True))
    return e / sum(e, axis, keepdims=True)


def log_softmax(x: Any, axis: int = -1) -> Any:
    """``x - logsumexp(x)`` along ``axis``, stable."""
    if not _is_traced(x):
        return _eager("log_softmax", lambda t, a, k: log_softmax(t, a), x, axis, False)
    from ..ops import exp, log

    shifted = x - max(x, axis, keepdims=True)
    return shifted - log(sum(exp(shifted), axis, keepdims=True))


def layer_norm(x: Any, weight: Optional[Any] = None, bias: Optional[Any] = None, eps: float = 1e-5,
               axis: Axis = -1) -> Any:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over ``axis`` (the last by default).

    Computed as ``(x - mean) * (1 / sqrt(var + eps))``: within an ulp or two of the division.
    """
    if not _is_traced(x):
        rest = tuple(v for v in (weight, bias) if v is not None)
        has = (weight is not None, bias is not None)

        def fn(t: Any, a: Axis, k: bool, *r: Any) -> Any:
            it = iter(r)
            w = next(it) if has[0] else None
            b = next(it) if has[1] else None
            return layer_norm(t, w, b, eps, a)

        return _eager(f"layer_norm{has}{eps!r}", fn, x, axis, False, *rest)
    from ..ops import sqrt

    mu = mean(x, axis, keepdims=True)
    d = x - mu
    var = mean(d * d, axis, keepdims=True)
    # One reciprocal per row and a multiply per element (as PyTorch and JAX's layer norms do):
    # a division per element costs more than the rest of the kernel's arithmetic.
    y = d * (1.0 / sqrt(var + eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(x: Any, weight: Optional[Any] = None, eps: float = 1e-6, axis: Axis = -1) -> Any:
    """``x / sqrt(mean(x**2) + eps) * weight`` over ``axis`` (the last by default).

    Computed as ``x * (1 / sqrt(mean(x**2) + eps))``: within an ulp or two of the division.
    """
    if not _is_traced(x):
        rest = () if weight is None else (weight,)

        def fn(t: Any, a: Axis, k: bool, *r: Any) -> Any:
            return rms_norm(t, r[0] if r else None, eps, a)

        return _eager(f"rms_norm{weight is None}{eps!r}", fn, x, axis, False, *rest)
    from ..ops import sqrt

    y = x * (1.0 / sqrt(mean(x * x, axis, keepdims=True) + eps))
    return y if weight is None else y * weight
