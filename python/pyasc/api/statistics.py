"""Statistics: ``var std average ptp nansum nanmean nanmax nanmin nanvar nanstd count_nonzero``.

Each takes NumPy's arguments and gives NumPy's result dtypes (integer variances are float64,
float32 stays float32). Inside an operator they record reductions that fuse with their
neighbours: ``var`` is the mean of each row followed by the sum of squared deviations from
it, two passes over a row held in the tile, so ``(x - x.mean(-1, keepdims=True)) /
np.sqrt(x.var(-1, keepdims=True) + eps)`` is one kernel and a large mean cancels exactly.
Outside an operator they run at once on arrays.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import _pyasc, ops
from ..core import _eager, _moment_trace
from ..core._axes import err, norm_axes
from ..errors import InvalidArgumentError, ShapeError, UnsupportedError
from . import creation, movement, reductions

__all__ = ["var", "std", "average", "ptp", "nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd",
           "count_nonzero"]


def _refuse(name: str, out: Any = None, where: Any = None, a: Any = None) -> None:
    if out is not None or where is not None:
        raise err(UnsupportedError, f"{name}(..., out=/where=) is not supported inside operators")
    if getattr(a, "_pyasc_complex", False) is True:
        raise err(UnsupportedError, f"{name} of complex values is not supported inside operators yet")


def _ddof(name: str, ddof: Any, correction: Any) -> Any:
    if correction is not None:
        if ddof != 0:
            raise err(InvalidArgumentError, f"{name}: ddof and correction can't be given together")
        return correction
    return ddof


def _axis_arg(x: Any, axis: Any) -> Any:
    """Check ``axis`` against ``x`` and return it as the reductions take it (None or a tuple)."""
    if x.ndim == 0 and axis is not None and axis != ():
        raise err(ShapeError, f"axis {axis} is out of bounds for a tensor of rank 0")
    return None if axis is None else norm_axes(axis, x.ndim)


def _float_dtype(x: Any, dtype: Any) -> np.dtype:
    if dtype is not None:
        return np.dtype(dtype)
    dt = np.dtype(x.dtype)
    return dt if dt.kind == "f" else np.dtype(np.float64)


def _plain_number(v: Any) -> bool:
    """Return True for a real Python or NumPy number (not a traced value)."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _divisor(n: Any, ddof: Any) -> Any:
    d = n - ddof
    return max(d, 0) if not isinstance(d, _pyasc.Tensor) else ops.maximum(d, 0)


def _var(x: Any, m: Any = None, *, axis: Any, dtype: Any, ddof: Any, keepdims: bool) -> Any:
    ax = _axis_arg(x, axis)
    dt = _float_dtype(x, dtype)
    if np.dtype(x.dtype) != dt:
        x = x.astype(dt)
    n = reductions._count(x, ax)
    if m is not None:
        d = x - m
        return reductions.sum(d * d, ax, keepdims) / _divisor(n, ddof)
    return _deviations(x, ax, keepdims, n, n) / _divisor(n, ddof)


def _deviations(x: Any, ax: Any, keepdims: bool, n: Any, n_out: Any, nan: Any = None) -> Any:
    """Sum of squared deviations from the mean, by the corrected two-pass algorithm.

    ``d = x - mean`` is computed against the rounded mean; ``sum(d)**2 / n`` removes the error
    that rounding leaves (``sum((x - m')**2) = sum((x - m)**2) + n (m - m')**2``), so float32
    data with a large mean keeps its variance to a few ulp. ``n`` counts the values with the
    reduced axes kept, ``n_out`` in the result's shape; ``nan`` masks values out.
    """
    if nan is None:
        d = x - reductions.sum(x, ax, True) / n
    else:
        v = ops.where(nan, 0, x)
        d = ops.where(nan, 0, x - reductions.sum(v, ax, True) / n)
    s2 = reductions.sum(d * d, ax, keepdims)
    s1 = reductions.sum(d, ax, keepdims)
    return ops.maximum(s2 - s1 * s1 / n_out, 0)


def var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False, *,
        where: Any = None, mean: Any = None, correction: Any = None) -> Any:
    """Variance over ``axis``: the mean of squared deviations, divided by ``n - ddof``.

    Integers and bools compute in float64 (or ``dtype``); ``ddof >= n`` gives inf (nan where every
    deviation is 0), as NumPy. ``mean=`` supplies the mean (with ``keepdims=True``'s shape).
    """
    _refuse("var", out, where, a)
    ddof = _ddof("var", ddof, correction)
    if mean is None and _moment_trace.active() and _eager.traced(a) and _plain_number(ddof):
        return _moment_trace.intercept("var", a, _axis_arg(a, axis), keepdims, ddof, dtype)
    arrays = (a,) if mean is None else (a, mean)
    return _eager.run("var", _var, arrays, axis=axis, dtype=dtype, ddof=ddof, keepdims=bool(keepdims))


def _std(x: Any, m: Any = None, **kw: Any) -> Any:
    return ops.sqrt(_var(x, m, **kw))


def std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False, *,
        where: Any = None, mean: Any = None, correction: Any = None) -> Any:
    """Compute the standard deviation over ``axis``: ``sqrt(var(a, axis, dtype, ddof=ddof))``."""
    _refuse("std", out, where, a)
    ddof = _ddof("std", ddof, correction)
    if mean is None and _moment_trace.active() and _eager.traced(a) and _plain_number(ddof):
        return _moment_trace.intercept("std", a, _axis_arg(a, axis), keepdims, ddof, dtype)
    arrays = (a,) if mean is None else (a, mean)
    return _eager.run("std", _std, arrays, axis=axis, dtype=dtype, ddof=ddof, keepdims=bool(keepdims))


def _weights_shape(x: Any, w: Any, axis: Any) -> Any:
    """Return ``w`` broadcastable against ``x`` (NumPy's rules for weights of another shape)."""
    if tuple(w.shape) == tuple(x.shape):
        return w
    if axis is None:
        raise err(ShapeError, "average: axis must be given when the shapes of a and weights differ")
    axes = norm_axes(axis, x.ndim)
    if tuple(w.shape) != tuple(x.shape[a] for a in axes):
        raise err(ShapeError, f"average: the shape of weights {tuple(w.shape)} does not match the shape of a "
                              f"{tuple(x.shape)} along axis {axis}")
    w = w.transpose(tuple(int(i) for i in np.argsort(axes))) if len(axes) > 1 else w
    return w.reshape(tuple(s if i in axes else 1 for i, s in enumerate(x.shape)))


def _average(x: Any, w: Any = None, *, axis: Any, returned: bool, keepdims: bool) -> Any:
    ax = _axis_arg(x, axis)
    if w is None:
        avg = reductions.mean(x, ax, keepdims)
        if not returned:
            return avg
        n = reductions._count(x, ax)
        if isinstance(n, _pyasc.Tensor):
            return avg, movement.broadcast_to(n.astype(avg.dtype), tuple(avg.shape))
        return avg, creation.full(tuple(avg.shape), n, avg.dtype)
    w = _eager.lift(x, w)
    kind = np.dtype(x.dtype).kind
    rdt = np.result_type(x.dtype, w.dtype, "f8") if kind in "biu" else np.result_type(x.dtype, w.dtype)
    w = _weights_shape(x, w, axis).astype(rdt)
    scl = reductions.sum(w, ax, keepdims)
    avg = reductions.sum(x.astype(rdt) * w, ax, keepdims) / scl
    if not returned:
        return avg
    if tuple(scl.shape) != tuple(avg.shape):
        scl = movement.broadcast_to(scl, tuple(avg.shape))
    return avg, scl


def average(a: Any, axis: Any = None, weights: Optional[Any] = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    """Weighted average over ``axis``; with ``returned=True`` also the sum of the weights.

    Weights of another shape than ``a`` must have the shape of ``a`` along ``axis``. A zero sum
    of weights gives inf or nan (NumPy raises ``ZeroDivisionError``, which depends on data).
    """
    _refuse("average", a=a)
    arrays = (a,) if weights is None else (a, weights)
    return _eager.run("average", _average, arrays, axis=axis, returned=bool(returned), keepdims=bool(keepdims))


def _ptp(x: Any, *, axis: Any, keepdims: bool) -> Any:
    ax = _axis_arg(x, axis)
    return reductions.max(x, ax, keepdims) - reductions.min(x, ax, keepdims)


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Peak to peak, ``max - min`` over ``axis``, in the input's dtype (integers wrap)."""
    _refuse("ptp", out, a=a)
    return _eager.run("ptp", _ptp, (a,), axis=axis, keepdims=bool(keepdims))


def _is_float(x: Any) -> bool:
    return np.dtype(x.dtype).kind == "f"


def _splits(a: Any, dtype: Any = None) -> bool:
    """Return True inside a Dask companion trace when a NaN-skipping reduction of ``a`` gives per-chunk partials.

    Float operands only (integers have no NaN: their NaN-skipping reductions are the plain ones),
    computed in a float ``dtype`` if one is given.
    """
    return (_moment_trace.active() is not None and _eager.traced(a) and getattr(a, "_pyasc_complex", False) is not True
            and _is_float(a) and (dtype is None or np.dtype(dtype).kind == "f"))


def _nansum(x: Any, *, axis: Any, dtype: Any, keepdims: bool) -> Any:
    ax = _axis_arg(x, axis)
    if _is_float(x):
        x = ops.where(ops.isnan(x), 0, x)
    if dtype is None:
        return reductions.sum(x, ax, keepdims)
    # Sums of small integers are int64 by default; an explicit dtype is kept (wrapping as NumPy).
    return reductions.sum(x.astype(dtype), ax, keepdims).astype(dtype)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, initial: Any = None,
           where: Any = None) -> Any:
    """Sum over ``axis`` counting NaN as 0 (``sum``'s dtypes: integers give int64)."""
    _refuse("nansum", out, where, a)
    if initial is not None:
        raise err(UnsupportedError, "nansum(..., initial=) is not supported inside operators")
    return _eager.run("nansum", _nansum, (a,), axis=axis, dtype=dtype, keepdims=bool(keepdims))


def _count(nan: Any, ax: Any, keepdims: bool) -> Any:
    """Count the values that are not NaN over ``ax``.

    A float64 sum of 0/1 (exact below 2**53): about 3x faster than the int64 sum of a boolean mask.
    """
    return reductions.sum(ops.where(nan, 0.0, 1.0), ax, keepdims)


def _nanmean(x: Any, *, axis: Any, dtype: Any, keepdims: bool) -> Any:
    ax = _axis_arg(x, axis)
    if not _is_float(x):
        return reductions.mean(x if dtype is None else x.astype(dtype), ax, keepdims)
    nan = ops.isnan(x)
    tot = reductions.sum(ops.where(nan, 0, x if dtype is None else x.astype(dtype)), ax, keepdims)
    cnt = _count(nan, ax, keepdims)
    return tot / cnt.astype(tot.dtype)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,
            where: Any = None) -> Any:
    """Mean over ``axis`` ignoring NaN; an all-NaN slice gives NaN."""
    _refuse("nanmean", out, where, a)
    if _splits(a, dtype):
        return _moment_trace.intercept("nanmean", a, _axis_arg(a, axis), keepdims, dtype=dtype)
    return _eager.run("nanmean", _nanmean, (a,), axis=axis, dtype=dtype, keepdims=bool(keepdims))


def _nanext(x: Any, *, axis: Any, keepdims: bool, high: bool) -> Any:
    ax = _axis_arg(x, axis)
    red = reductions.max if high else reductions.min
    if not _is_float(x):
        return red(x, ax, keepdims)
    nan = ops.isnan(x)
    r = red(ops.where(nan, -np.inf if high else np.inf, x), ax, keepdims)
    return ops.where(reductions.all(nan, ax, keepdims), np.nan, r)


def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = None,
           where: Any = None) -> Any:
    """Maximum over ``axis`` ignoring NaN; an all-NaN slice gives NaN."""
    _refuse("nanmax", out, where, a)
    if initial is not None:
        raise err(UnsupportedError, "nanmax(..., initial=) is not supported inside operators")
    if _splits(a):
        return _moment_trace.intercept("nanmax", a, _axis_arg(a, axis), keepdims)
    return _eager.run("nanmax", _nanext, (a,), axis=axis, keepdims=bool(keepdims), high=True)


def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = None,
           where: Any = None) -> Any:
    """Minimum over ``axis`` ignoring NaN; an all-NaN slice gives NaN."""
    _refuse("nanmin", out, where, a)
    if initial is not None:
        raise err(UnsupportedError, "nanmin(..., initial=) is not supported inside operators")
    if _splits(a):
        return _moment_trace.intercept("nanmin", a, _axis_arg(a, axis), keepdims)
    return _eager.run("nanmin", _nanext, (a,), axis=axis, keepdims=bool(keepdims), high=False)


def _nanvar(x: Any, *, axis: Any, dtype: Any, ddof: Any, keepdims: bool, root: bool) -> Any:
    if not _is_float(x):
        r = _var(x, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
        return ops.sqrt(r) if root else r
    ax = _axis_arg(x, axis)
    dt = _float_dtype(x, dtype)
    nan = ops.isnan(x)
    v = x.astype(dt) if np.dtype(x.dtype) != dt else x
    cnt = _count(nan, ax, True).astype(dt)
    cnt_out = cnt if keepdims else _count(nan, ax, False).astype(dt)
    sq = _deviations(v, ax, keepdims, cnt, cnt_out, nan)
    dof = cnt_out - ddof
    r = ops.where(dof <= 0, np.nan, sq / dof)
    return ops.sqrt(r) if root else r


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False, *,
           where: Any = None, mean: Any = None, correction: Any = None) -> Any:
    """Variance over ``axis`` ignoring NaN; NaN where fewer than ``ddof + 1`` values are not NaN."""
    _refuse("nanvar", out, where, a)
    if mean is not None:
        raise err(UnsupportedError, "nanvar(..., mean=) is not supported inside operators")
    ddof = _ddof("nanvar", ddof, correction)
    if _plain_number(ddof) and _splits(a, dtype):
        return _moment_trace.intercept("nanvar", a, _axis_arg(a, axis), keepdims, ddof, dtype)
    if _plain_number(ddof) and _moment_trace.active() and _eager.traced(a) and not _is_float(a):
        return var(a, axis, dtype, ddof=ddof, keepdims=keepdims)  # no NaN in integers: the plain var
    return _eager.run("nanvar", _nanvar, (a,), axis=axis, dtype=dtype, ddof=ddof, keepdims=bool(keepdims),
                      root=False)


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False, *,
           where: Any = None, mean: Any = None, correction: Any = None) -> Any:
    """Compute the standard deviation over ``axis`` ignoring NaN: ``sqrt(nanvar(...))``."""
    _refuse("nanstd", out, where, a)
    if mean is not None:
        raise err(UnsupportedError, "nanstd(..., mean=) is not supported inside operators")
    ddof = _ddof("nanstd", ddof, correction)
    if _plain_number(ddof) and _splits(a, dtype):
        return _moment_trace.intercept("nanstd", a, _axis_arg(a, axis), keepdims, ddof, dtype)
    if _plain_number(ddof) and _moment_trace.active() and _eager.traced(a) and not _is_float(a):
        return std(a, axis, dtype, ddof=ddof, keepdims=keepdims)  # no NaN in integers: the plain std
    return _eager.run("nanstd", _nanvar, (a,), axis=axis, dtype=dtype, ddof=ddof, keepdims=bool(keepdims),
                      root=True)


def _count_nonzero(x: Any, *, axis: Any, keepdims: bool) -> Any:
    ax = _axis_arg(x, axis)
    return reductions.sum(x != 0, ax, keepdims)


def count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    """Count the non-zero values over ``axis`` (int64; NaN counts as non-zero)."""
    _refuse("count_nonzero", a=a)
    return _eager.run("count_nonzero", _count_nonzero, (a,), axis=axis, keepdims=bool(keepdims))


def clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, *, min: Any = None,  # noqa: A002
         max: Any = None, **kw: Any) -> Any:  # noqa: A002
    """``np.clip``: limit to ``[a_min, a_max]``; bounds may be arrays (broadcast) or None."""
    if out is not None or kw:
        raise err(UnsupportedError, "clip(..., out=/keywords) is not supported inside operators")
    lo = a_min if min is None else min
    hi = a_max if max is None else max
    if lo is None and hi is None:
        return ops.cast(a, a.dtype) if _eager.traced(a) else np.array(a)
    return ops.clip(a, lo, hi)
