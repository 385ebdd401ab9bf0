"""Sorting and selection inside operators and on arrays.

``sort argsort partition argpartition topk take_along_axis searchsorted unique median
nanmedian quantile percentile nanquantile nanpercentile``. Inside an operator each is one sort
library op (a Rust routine over the rows of the axis, spread over the worker pool);
``topk`` is an index op plus a gather, so its values never sort twice. Called on arrays
outside an operator they run at once. Floats sort as NumPy sorts them (NaN last); ``topk``
follows ``jax.lax.top_k`` (largest first, ties to the lower index, IEEE total order).
Index results are int64.
"""

from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _pyasc, ops
from ..errors import DTypeError, InvalidArgumentError, ShapeError, TraceError, UnsupportedError, at_user_line
from ..ops import _eager_op, _is_traced

__all__ = ["sort", "argsort", "partition", "argpartition", "topk", "take_along_axis", "searchsorted", "unique",
           "median", "nanmedian", "quantile", "percentile", "nanquantile", "nanpercentile"]

Axis = Union[None, int, Sequence[int]]
_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _err(cls: type, message: str) -> Exception:
    return at_user_line(cls(message))


def _strong(x: Any) -> Any:
    """Make a weak Python-number scalar an array of its dtype, as NumPy does."""
    return ops.cast(x, x.dtype) if x.is_weak else x


def _check_dtype(x: Any, what: str) -> None:
    dt = np.dtype(x.dtype)
    if dt.kind not in "biuf":
        raise _err(DTypeError, f"{what} of {dt} arrays is not supported")


def _prepare(x: Any, axis: Optional[int], what: str) -> Tuple[Any, int]:
    """``x`` (flattened when ``axis`` is None) and its normalised axis."""
    from .movement import reshape

    x = _strong(x)
    _check_dtype(x, what)
    if axis is None:
        return reshape(x, (-1,)), 0
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise _err(InvalidArgumentError, f"{what}: axis must be an int or None, not {axis!r}")
    nd = x.ndim
    if not -nd <= axis < nd:
        raise _err(ShapeError, f"{what}: axis {axis} is out of bounds for an array of rank {nd}")
    return x, int(axis) % nd


def _check_kind(kind: Any, order: Any, what: str) -> None:
    if order is not None:
        raise _err(UnsupportedError, f"{what}(..., order=) (structured arrays) is not supported inside operators")
    if kind not in _KINDS:
        raise _err(InvalidArgumentError, f"{what}: kind must be one of quicksort, mergesort, heapsort, stable; "
                                         f"got {kind!r}")


def sort(a: Any, axis: Optional[int] = -1, kind: Optional[str] = None, order: Any = None, *,
         stable: Optional[bool] = None) -> Any:
    """Return a sorted copy of ``a`` along ``axis`` (flattened when None), NaN last, as ``np.sort``."""
    if not _is_traced(a):
        return _eager_op(f"sort:{axis!r}", lambda t: sort(t, axis))(a)
    _check_kind(kind, order, "sort")
    x, ax = _prepare(a, axis, "sort")
    return _pyasc.apply_sort("sort", x, axis=ax)


def argsort(a: Any, axis: Optional[int] = -1, kind: Optional[str] = None, order: Any = None, *,
            stable: Optional[bool] = None) -> Any:
    """Return the int64 indices that sort ``a`` along ``axis``, as ``np.argsort``.

    Equal elements keep their index order: every kind is stable here, which ``kind='stable'``
    and ``stable=True`` require.
    """
    if not _is_traced(a):
        return _eager_op(f"argsort:{axis!r}", lambda t: argsort(t, axis))(a)
    _check_kind(kind, order, "argsort")
    x, ax = _prepare(a, axis, "argsort")
    return _pyasc.apply_sort("argsort", x, axis=ax, stable=True)


def _kth(kth: Any, n: int, what: str) -> list:
    ks = np.asarray(kth)
    if ks.dtype.kind not in "iu" or ks.ndim > 1:
        raise _err(InvalidArgumentError, f"{what}: kth must be an int or a sequence of ints, not {kth!r}")
    out = []
    for k in ks.reshape(-1).tolist():
        if not -n <= k < n:
            raise _err(ShapeError, f"{what}: kth {k} is out of bounds for an axis of length {n}")
        out.append(k % n)
    return sorted(set(out))


def partition(a: Any, kth: Any, axis: Optional[int] = -1, kind: str = "introselect", order: Any = None) -> Any:
    """Partition ``a`` along ``axis`` around each ``kth`` position, as ``np.partition``.

    The element at ``kth`` is the one a sort puts there, smaller ones before it, larger after.
    """
    if not _is_traced(a):
        return _eager_op(f"partition:{_key(kth)}:{axis!r}", lambda t: partition(t, kth, axis))(a)
    _check_select(kind, order, "partition")
    x, ax = _prepare(a, axis, "partition")
    return _pyasc.apply_sort("partition", x, axis=ax, kth=_kth(kth, x.shape[ax], "partition"))


def argpartition(a: Any, kth: Any, axis: Optional[int] = -1, kind: str = "introselect", order: Any = None) -> Any:
    """Return the int64 indices that partition ``a`` around each ``kth``, as ``np.argpartition``."""
    if not _is_traced(a):
        return _eager_op(f"argpartition:{_key(kth)}:{axis!r}", lambda t: argpartition(t, kth, axis))(a)
    _check_select(kind, order, "argpartition")
    x, ax = _prepare(a, axis, "argpartition")
    return _pyasc.apply_sort("argpartition", x, axis=ax, kth=_kth(kth, x.shape[ax], "argpartition"))


def _check_select(kind: Any, order: Any, what: str) -> None:
    if order is not None:
        raise _err(UnsupportedError, f"{what}(..., order=) (structured arrays) is not supported inside operators")
    if kind != "introselect":
        raise _err(InvalidArgumentError, f"{what}: kind must be 'introselect', not {kind!r}")


def _key(v: Any) -> str:
    return repr(np.asarray(v).tolist()) if not isinstance(v, (int, float)) else repr(v)


def topk(x: Any, k: int, axis: int = -1) -> Tuple[Any, Any]:
    """Return the ``k`` largest elements along ``axis`` and their int64 indices.

    Largest first, equal values by lower index, IEEE total order (``jax.lax.top_k`` on any axis).
    """
    if not _is_traced(x):
        return _eager_op(f"topk:{k!r}:{axis!r}", lambda t: topk(t, k, axis))(x)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
        raise _err(InvalidArgumentError, f"topk: k must be a non-negative int, not {k!r}")
    if axis is None:
        raise _err(InvalidArgumentError, "topk: axis must be an int")
    x, ax = _prepare(x, axis, "topk")
    n = x.shape[ax]
    if k > n:
        raise _err(ShapeError, f"topk: k={k} is larger than the axis length {n}")
    idx = _pyasc.apply_sort("topk", x, axis=ax, k=int(k))
    return _pyasc.apply_sort("gather", x, idx, axis=ax), idx


def take_along_axis(arr: Any, indices: Any, axis: Optional[int] = -1) -> Any:
    """Gather ``arr`` at ``indices`` along ``axis``, as ``np.take_along_axis``.

    Same rank, equal extents off the axis; an index out of range raises ``ShapeError``.
    """
    if not _is_traced(arr, indices):
        return _eager_op(f"take_along_axis:{axis!r}", lambda t, i: take_along_axis(t, i, axis))(
            arr, np.asarray(indices))
    if not _is_traced(arr):
        arr = _pyasc.apply_constant_array(indices, np.asarray(arr))
    if not _is_traced(indices):
        indices = _pyasc.apply_constant_array(arr, np.asarray(indices))
    if np.dtype(indices.dtype).kind not in "iu":
        raise _err(DTypeError, f"take_along_axis: indices must be integers, not {indices.dtype}")
    indices = ops.cast(indices, "int64")
    if axis is None:
        from .movement import reshape

        arr = reshape(arr, (-1,))
        axis = 0
    arr, ax = _prepare(arr, axis, "take_along_axis")
    if indices.ndim != arr.ndim:
        raise _err(ShapeError, f"take_along_axis: indices of rank {indices.ndim} for an array of rank {arr.ndim}")
    return _pyasc.apply_sort("gather", arr, indices, axis=ax)


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """Return the int64 insertion points of ``v`` in the sorted 1-D ``a``, as ``np.searchsorted``.

    ``side`` is left or right; ``sorter`` holds the indices that sort ``a``.
    """
    if not _is_traced(a, v, sorter):
        args = [a, v] + ([] if sorter is None else [sorter])
        return _eager_op(f"searchsorted:{side!r}:{sorter is None}",
                         lambda *t: searchsorted(t[0], t[1], side, t[2] if len(t) > 2 else None))(*args)
    if side not in ("left", "right"):
        raise _err(InvalidArgumentError, f"searchsorted: side must be 'left' or 'right', not {side!r}")
    like = next(t for t in (a, v, sorter) if _is_traced(t))
    if not _is_traced(a):
        a = _pyasc.apply_constant_array(like, np.asarray(a))
    a = _strong(a)
    if a.ndim != 1:
        raise _err(ShapeError, f"searchsorted: the sorted array must be 1-D, not of shape {a.shape}")
    if sorter is not None:
        from .movement import take

        a = take(a, sorter if _is_traced(sorter) else np.asarray(sorter), 0)
    scalar_v = not _is_traced(v) and np.ndim(v) == 0
    if not _is_traced(v):
        v = _pyasc.apply_constant_array(like, np.asarray(v))
    vdt = np.dtype(v.dtype)
    common = np.result_type(np.dtype(a.dtype), vdt)
    _check_dtype(a, "searchsorted")
    _check_dtype(v, "searchsorted")
    a = a if np.dtype(a.dtype) == common else ops.cast(a, common)
    v = ops.cast(v, common) if (vdt != common or v.is_weak) else v
    r = _pyasc.apply_sort("searchsorted", a, v, right=side == "right")
    # A constant scalar `v` gives a 0-d result, as in NumPy.
    return _pyasc.apply_view(r, "reshape", []) if scalar_v and r.ndim else r


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: Any = None, *, equal_nan: bool = True, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """Return the sorted distinct values of the flattened ``ar``, cut or padded to a static ``size``.

    JAX's rule for a data-dependent shape: the first ``size`` distinct values, padded with
    ``fill_value`` (default: the smallest value). NaNs count once. Without ``size`` inside an
    operator it raises ``TraceError``.
    """
    if return_index or return_inverse or return_counts or axis is not None or not equal_nan:
        raise _err(UnsupportedError, "unique: return_index, return_inverse, return_counts, axis and "
                                     "equal_nan=False are not supported inside operators")
    if size is None:
        raise _err(TraceError, "unique has a data-dependent shape; inside an operator give it a static size: "
                               "pyasc.unique(x, size=N, fill_value=...) returns the first N distinct values, "
                               "padded with fill_value (JAX's rule)")
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise _err(InvalidArgumentError, f"unique: size must be a non-negative int, not {size!r}")
    if fill_value is not None and not isinstance(fill_value, (bool, int, float, np.number, np.bool_)):
        raise _err(UnsupportedError, "unique: fill_value must be one number")
    if not _is_traced(ar):
        return _eager_op(f"unique:{size!r}:{fill_value!r}", lambda t: unique(t, size=size, fill_value=fill_value))(ar)
    x, _ = _prepare(ar, None, "unique")
    fill = None if fill_value is None else (fill_value.item() if isinstance(fill_value, np.generic) else fill_value)
    return _pyasc.apply_sort("unique", x, size=int(size), fill=fill)


def _stat_layout(a: Any, axis: Axis, what: str) -> Tuple[Any, int, tuple]:
    """Return ``a`` with the reduced axes merged into its last one, that axis, the kept-dims shape."""
    from .movement import reshape, transpose

    x = _strong(a)
    _check_dtype(x, what)
    nd = x.ndim
    if axis is None:
        axes = tuple(range(nd))
    else:
        raw = (axis,) if isinstance(axis, numbers.Integral) and not isinstance(axis, bool) else tuple(axis)
        for ax in raw:
            if isinstance(ax, bool) or not isinstance(ax, numbers.Integral):
                raise _err(InvalidArgumentError, f"{what}: axis must be None, an int or a tuple of ints")
            if not -nd <= ax < nd:
                raise _err(ShapeError, f"{what}: axis {ax} is out of bounds for an array of rank {nd}")
        axes = tuple(sorted({int(ax) % nd for ax in raw}))
        if len(axes) != len(raw):
            raise _err(ShapeError, f"{what}: repeated axis in {axis!r}")
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    rest = [i for i in range(nd) if i not in axes]
    if axes != tuple(range(nd - len(axes), nd)):
        x = transpose(x, rest + list(axes))
    if len(axes) != 1:
        x = reshape(x, tuple(x.shape[i] for i in range(len(rest))) + (-1,))
    return x, x.ndim - 1, kept


def _finish(r: Any, lead: tuple, kept: tuple, keepdims: bool) -> Any:
    from .movement import reshape

    return reshape(r, lead + kept) if keepdims else r


def _median(a: Any, axis: Axis, keepdims: bool, skip_nan: bool, what: str) -> Any:
    x, ax, kept = _stat_layout(a, axis, what)
    return _finish(_pyasc.apply_sort("median", x, axis=ax, skip_nan=skip_nan), (), kept, keepdims)


def median(a: Any, axis: Axis = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False) -> Any:
    """Return the median along ``axis``, as ``np.median``.

    The middle element or the mean of the middle pair; NaN where a row holds a NaN; float32
    stays float32, other dtypes give float64.
    """
    if out is not None:
        raise _err(UnsupportedError, "median(..., out=) is not supported inside operators")
    if not _is_traced(a):
        return _eager_op(f"median:{axis!r}:{keepdims}", lambda t: median(t, axis, keepdims=keepdims))(a)
    return _median(a, axis, keepdims, False, "median")


def nanmedian(a: Any, axis: Axis = None, out: Any = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """Return the median of each row's non-NaN elements (NaN for a row of NaNs), as ``np.nanmedian``."""
    if out is not None:
        raise _err(UnsupportedError, "nanmedian(..., out=) is not supported inside operators")
    if not _is_traced(a):
        return _eager_op(f"nanmedian:{axis!r}:{keepdims}", lambda t: nanmedian(t, axis, keepdims=keepdims))(a)
    return _median(a, axis, keepdims, True, "nanmedian")


def _quantile(a: Any, q: Any, axis: Axis, method: str, keepdims: bool, skip_nan: bool, percent: bool,
              what: str, **unsupported: Any) -> Any:
    if any(v is not None for v in unsupported.values()):
        raise _err(UnsupportedError, f"{what}(..., {', '.join(k for k, v in unsupported.items() if v is not None)}=)"
                                     " is not supported inside operators")
    if method != "linear":
        raise _err(UnsupportedError, f"{what}: only method='linear' (NumPy's default) is supported, not {method!r}")
    if _is_traced(q):
        raise _err(UnsupportedError, f"{what}: q must be a number or an array known when tracing, not a traced value")
    weak = type(q) in (int, float)
    qa = np.true_divide(q, 100) if percent else np.asarray(q)
    if qa.dtype.kind not in "biuf":
        raise _err(InvalidArgumentError, f"{what}: q must be numbers, not {qa.dtype}")
    if not (np.all(qa >= 0) and np.all(qa <= 1)):
        rng = "[0, 100]" if percent else "[0, 1]"
        raise _err(InvalidArgumentError, f"{what}: {'percentiles' if percent else 'quantiles'} must be in the range "
                                         f"{rng}")
    x, ax, kept = _stat_layout(a, axis, what)
    if np.dtype(x.dtype).kind == "b":
        raise _err(DTypeError, f"{what} of bool arrays is not supported (NumPy cannot subtract bools)")
    if qa.dtype.kind in "biu":
        # Integer quantiles (0 or 1) pick elements: NumPy's result keeps the array's dtype.
        from . import reductions
        from .movement import stack

        picks = [reductions.max(x, ax) if v else reductions.min(x, ax) for v in qa.reshape(-1).tolist()]
        if qa.ndim == 0:
            r = picks[0]
        else:
            from .movement import reshape

            r = reshape(stack(picks, 0), qa.shape + tuple(x.shape[:ax]))
        return _finish(r, qa.shape, kept, keepdims)
    if x.shape[ax] == 0:
        raise _err(ShapeError, f"{what} of an empty axis")
    r = _pyasc.apply_sort("quantile", x, axis=ax, q=[float(v) for v in qa.reshape(-1).astype(np.float64)],
                          q_shape=list(qa.shape), skip_nan=skip_nan, weak_q=weak)
    return _finish(r, qa.shape, kept, keepdims)


def _eager_quantile(name: str, fn: Any, a: Any, q: Any, axis: Axis, method: str, keepdims: bool) -> Any:
    key = f"{name}:{_key(q)}:{type(q).__name__}:{axis!r}:{method}:{keepdims}"
    return _eager_op(key, lambda t: fn(t, q, axis, method=method, keepdims=keepdims))(a)


def quantile(a: Any, q: Any, axis: Axis = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None,
             interpolation: Any = None) -> Any:
    """Return quantiles with NumPy's default linear method, as ``np.quantile``.

    ``q`` (in [0, 1]) is a number or an array, whose shape leads the result; NaN where a row
    holds a NaN.
    """
    if not _is_traced(a):
        return _eager_quantile("quantile", quantile, a, q, axis, method, keepdims)
    return _quantile(a, q, axis, method, keepdims, False, False, "quantile", out=out, weights=weights,
                     interpolation=interpolation)


def percentile(a: Any, q: Any, axis: Axis = None, out: Any = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: Any = None,
               interpolation: Any = None) -> Any:
    """Return percentiles: ``quantile`` of ``q / 100``, as ``np.percentile``."""
    if not _is_traced(a):
        return _eager_quantile("percentile", percentile, a, q, axis, method, keepdims)
    return _quantile(a, q, axis, method, keepdims, False, True, "percentile", out=out, weights=weights,
                     interpolation=interpolation)


def nanquantile(a: Any, q: Any, axis: Axis = None, out: Any = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                interpolation: Any = None) -> Any:
    """Return quantiles of each row's non-NaN elements, as ``np.nanquantile``."""
    if not _is_traced(a):
        return _eager_quantile("nanquantile", nanquantile, a, q, axis, method, keepdims)
    return _quantile(a, q, axis, method, keepdims, True, False, "nanquantile", out=out, weights=weights,
                     interpolation=interpolation)


def nanpercentile(a: Any, q: Any, axis: Axis = None, out: Any = None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                  interpolation: Any = None) -> Any:
    """Return percentiles of each row's non-NaN elements, as ``np.nanpercentile``."""
    if not _is_traced(a):
        return _eager_quantile("nanpercentile", nanpercentile, a, q, axis, method, keepdims)
    return _quantile(a, q, axis, method, keepdims, True, True, "nanpercentile", out=out, weights=weights,
                     interpolation=interpolation)


def _np_unique(ar: Any, *args: Any, **kwargs: Any) -> Any:
    return unique(ar, *args, **kwargs)


# NumPy functions inside operators (``__array_function__``).
FUNCTIONS = {
    "sort": sort,
    "argsort": argsort,
    "partition": partition,
    "argpartition": argpartition,
    "take_along_axis": take_along_axis,
    "searchsorted": searchsorted,
    "unique": _np_unique,
    "median": median,
    "nanmedian": nanmedian,
    "quantile": quantile,
    "percentile": percentile,
    "nanquantile": nanquantile,
    "nanpercentile": nanpercentile,
}
