"""Trace modes that turn a function's one var/std/argmax/argmin/NaN-skipping reduction into partials.

A Dask array's tree reduction needs, per chunk, the statistics that combine: a variance's count,
mean and sum of squared deviations (M2), an arg-reduction's index and value. A function such
as ``np.var(x * 2 + y, axis=0)`` traces into a graph where those are not separate nodes, so
:mod:`pyasc.dask._moments` traces the function again, in a companion operator, with one of
these modes on:

* ``"partials"``: ``var``/``std`` return ``(mean, M2)`` in float64 with the reduced axes kept
  (pyasc's corrected two-pass sums over the chunk), ``argmax``/``argmin`` return ``(index,
  value)`` with the reduced axes kept; ``nanvar``/``nanstd`` return ``(count, mean, M2)`` of the
  values that are not NaN, ``nanmean`` ``(count, sum)``, all float64 and per output element
  (the count varies from column to column), ``nanmax``/``nanmin`` the chunk's own result
  (NaN where every value is NaN), all with the reduced axes kept;
* ``"operand"``: they return the array they were given (the pointwise expression), so the
  companion's graph tells whether that expression splits over chunks.

The companion is accepted only when the function's result is the value that one such call
returned; anything else (``var(x) + 1``, two calls) raises :class:`NotSplittable` and the
caller keeps the user's own operator. Outside these companions nothing changes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from ..errors import UnsupportedError

__all__ = ["Call", "NAN_KINDS", "NotSplittable", "active", "intercept", "run"]

_local = threading.local()


#: The NaN-skipping reductions of floats that split into per-chunk partials.
NAN_KINDS = ("nanmean", "nanvar", "nanstd", "nanmax", "nanmin")


class NotSplittable(UnsupportedError):
    """The function is not one ``var``/``std``/``argmax``/``argmin`` or NaN-skipping call returned as it is."""


@dataclass(frozen=True)
class Call:
    """What the one intercepted call asked for (plain data: it travels to Dask workers)."""

    kind: str  # "var", "std", "argmax", "argmin" or one of NAN_KINDS
    axes: Optional[Tuple[int, ...]]  # None: every axis
    keepdims: bool
    ddof: Any = 0
    shape: Tuple[int, ...] = ()  # the operand's shape in this trace


class _Recorder:
    def __init__(self, mode: str):
        self.mode = mode
        self.calls: List[Tuple[Call, Any]] = []


def _stack() -> List[_Recorder]:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def active() -> Optional[str]:
    """Return the mode of the companion trace in progress on this thread, or None."""
    s = _stack()
    return s[-1].mode if s else None


def run(mode: str, func: Callable[..., Any], args: tuple) -> Tuple[Any, Call]:
    """Call ``func(*args)`` in ``mode``; return its result and the one call it must return directly."""
    rec = _Recorder(mode)
    _stack().append(rec)
    result: Any = None
    failed: Optional[Exception] = None
    try:
        result = func(*args)
    except Exception as e:  # e.g. ``var(x) + 1`` adds 1 to the pair of partials
        if not rec.calls:
            raise
        failed = e
    finally:
        _stack().pop()
    if failed is not None or len(rec.calls) != 1 or result is not rec.calls[0][1]:
        name = getattr(func, "__name__", "operator")
        raise NotSplittable(f"{name}: its result is not one var/std/argmax/argmin call (nor one nanmean/nanvar/"
                            f"nanstd/nanmax/nanmin call) for arguments of shapes "
                            f"{[tuple(getattr(a, 'shape', ())) for a in args]}, though it was for the blocks' "
                            "stand-ins; give its Dask arguments chunks of one shape, or compute them first"
                            ) from failed
    return result, rec.calls[0][0]


def intercept(kind: str, x: Any, axes: Optional[Tuple[int, ...]], keepdims: bool, ddof: Any = 0,
              dtype: Any = None) -> Any:
    """Record one call on the traced ``x`` and return what the mode gives in its place."""
    from .. import _pyasc, ops
    from ..api import reductions

    rec = _stack()[-1]
    call = Call(kind, axes, bool(keepdims), ddof, tuple(int(n) for n in x.shape))
    if kind in NAN_KINDS:
        out: Any = _nan_partials(kind, x, axes, dtype, rec.mode)
    elif kind in ("var", "std"):
        dt = np.dtype(dtype) if dtype is not None else (np.dtype(x.dtype) if np.dtype(x.dtype).kind == "f"
                                                         else np.dtype(np.float64))
        if np.dtype(x.dtype) != dt:
            x = x.astype(dt)  # the dtype the variance computes in, then float64 for the partials
        if rec.mode == "operand":
            out = x
        else:
            x = x.astype(np.float64)
            n = reductions._count(x, axes)
            m = reductions.sum(x, axes, True) / n
            d = x - m
            s1 = reductions.sum(d, axes, True)
            s2 = reductions.sum(d * d, axes, True)
            # Corrected two-pass: the rounding of m is taken out of both the mean and M2.
            out = (m + s1 / n, ops.maximum(s2 - s1 * s1 / n, 0))
    else:
        axis = None if axes is None else axes[0]
        if rec.mode == "operand":
            out = x
        elif axis is None and x.ndim > 1:
            out = _flat_arg(kind, x)
        else:
            value = _pyasc.apply_reduce("max" if kind == "argmax" else "min", x, axis, True)
            out = (_pyasc.apply_reduce(kind, x, axis, True), value)
    rec.calls.append((call, out))
    return out


def _nan_partials(kind: str, x: Any, axes: Optional[Tuple[int, ...]], dtype: Any, mode: str) -> Any:
    """Return a NaN-skipping reduction's operand (``"operand"`` mode) or its partials over ``axes``."""
    from .. import ops
    from ..api import reductions, statistics

    if kind in ("nanmax", "nanmin"):
        if mode == "operand":
            return x
        return statistics._nanext(x, axis=axes, keepdims=True, high=kind == "nanmax")
    if dtype is not None and np.dtype(x.dtype) != np.dtype(dtype):
        x = x.astype(dtype)  # the dtype NumPy computes in, then float64 for the partials
    if mode == "operand":
        return x
    x = x.astype(np.float64)
    nan = ops.isnan(x)
    # The count as a float64 sum of 0/1 (exact below 2**53): about 3x faster than a boolean mask's int64 sum.
    n = reductions.sum(ops.where(nan, 0.0, 1.0), axes, True)
    total = reductions.sum(ops.where(nan, 0, x), axes, True)
    if kind == "nanmean":
        return n, total
    # The corrected two-pass sums of the values that are not NaN (NaN where n is 0: the tree skips those).
    m = total / n
    d = ops.where(nan, 0, x - m)
    s1 = reductions.sum(d, axes, True)
    s2 = reductions.sum(d * d, axes, True)
    return n, m + s1 / n, ops.maximum(s2 - s1 * s1 / n, 0)


def _flat_arg(kind: str, x: Any) -> Tuple[Any, Any]:
    """Return the C-order flat index of the first extreme of an n-d ``x`` and that extreme, both (1, ..., 1).

    The last axis gives its ``argmax``; each axis before it keeps, among the positions whose
    extreme over the trailing axes equals the overall one (NaN counting as equal to NaN), the
    smallest flat index ``i_k * stride_k + trailing index``.
    """
    from .. import _pyasc, ops
    from . import _eager

    extreme = "max" if kind == "argmax" else "min"
    last = x.ndim - 1
    flat = _pyasc.apply_reduce(kind, x, last, True)
    cur = _pyasc.apply_reduce(extreme, x, last, True)
    stride = int(x.shape[last])
    for k in range(last - 1, -1, -1):
        best = _pyasc.apply_reduce(extreme, cur, k, True)
        hit = (cur == best) | (cur != cur)
        iota = np.arange(int(x.shape[k]), dtype=np.int64).reshape((-1,) + (1,) * (last - k))
        candidate = _eager.lift(x, iota) * stride + flat
        flat = _pyasc.apply_reduce("min", ops.where(hit, candidate, np.iinfo(np.int64).max), k, True)
        stride *= int(x.shape[k])
        cur = best
    return flat, cur
