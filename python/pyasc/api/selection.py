"""Positions of non-zero elements with a static size, JAX's rule for data-dependent shapes.

``pyasc.nonzero(a, size=n, fill_value=f)`` (and ``argwhere``, ``flatnonzero``, ``compress``)
returns the first ``n`` results, padded with ``fill_value`` (default 0) when there are fewer:
the shape is known when the function is traced. Without ``size=`` the shape depends on the
data: ``np.nonzero(x)`` inside an operator raises :class:`pyasc.TraceError` saying so (NumPy's
own functions take no ``size=``). Outside operators the functions run on NumPy arrays at once.
"""

from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from .. import _pyasc
from ..errors import InvalidArgumentError, ShapeError, TraceError, at_user_line

__all__ = ["nonzero", "flatnonzero", "argwhere", "compress"]


def _traced(*xs: Any) -> bool:
    return any(isinstance(x, _pyasc.Tensor) for x in xs)


def _size(name: str, size: Any) -> int:
    if size is None:
        raise at_user_line(TraceError(f"{name} inside an operator needs a static size= (the number of results "
                                      "depends on the data); pass size=n and fill_value=..."))
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise at_user_line(InvalidArgumentError(f"{name}: size must be a non-negative int, not {size!r}"))
    return int(size)


def _pad(r: np.ndarray, size: Optional[int], fill: Any) -> np.ndarray:
    """NumPy's result ``r`` (first axis) truncated or padded to ``size`` with ``fill``."""
    if size is None:
        return r
    out = np.full((size,) + r.shape[1:], fill, dtype=r.dtype)
    n = min(size, r.shape[0])
    out[:n] = r[:n]
    return out


def _fills(fill_value: Any, nd: int) -> list:
    if fill_value is None:
        return [0] * nd
    if isinstance(fill_value, (tuple, list)):
        if len(fill_value) != nd:
            raise at_user_line(ShapeError(f"fill_value needs one value per axis ({nd}), not {len(fill_value)}"))
        return list(fill_value)
    return [fill_value] * nd


def _fill_like(p: Any, f: Any) -> Any:
    """Return ``f`` as int64 values of ``p``'s shape."""
    return _pyasc.apply_cast(p * 0 + f, "int64")


def _positions(a: Any, size: int) -> Any:
    if a.ndim == 0:
        raise at_user_line(ShapeError("nonzero of a 0-d array is not defined; use atleast_1d first"))
    return _pyasc.apply_nonzero(a, size)


def flatnonzero(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """Return the flat indices of the non-zero elements of ``a`` (the first ``size``, padded)."""
    if not _traced(a):
        return _pad(np.flatnonzero(a), size, 0 if fill_value is None else fill_value)
    size = _size("flatnonzero", size)
    p = _pyasc.apply_nonzero(a if a.ndim == 1 else a.reshape(-1), size)
    return _pyasc.apply_where(p < 0, _fill_like(p, _fills(fill_value, 1)[0]), p)


def nonzero(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> tuple:
    """Return one index array per axis of the non-zero elements of ``a`` (``size`` of them, padded)."""
    if not _traced(a):
        r = np.nonzero(a)
        fills = _fills(fill_value, len(r))
        return tuple(_pad(i, size, f) for i, f in zip(r, fills))
    size = _size("nonzero", size)
    p = _positions(a, size)
    out = []
    stride = 1
    strides = []
    for d in reversed(a.shape):
        strides.append(stride)
        stride *= d
    strides.reverse()
    for d, s, f in zip(a.shape, strides, _fills(fill_value, a.ndim)):
        idx = (p // s) % d if d else p * 0
        out.append(_pyasc.apply_where(p < 0, _fill_like(p, f), idx))
    return tuple(out)


def argwhere(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """Return the indices of the non-zero elements of ``a``, one row each (``size`` rows, padded)."""
    if not _traced(a):
        return _pad(np.argwhere(a), size, 0 if fill_value is None else fill_value)
    from .movement import stack

    return stack(list(nonzero(a, size=size, fill_value=fill_value)), axis=1)


def compress(condition: Any, a: Any, axis: Optional[int] = None, *, size: Optional[int] = None,
             fill_value: Any = 0) -> Any:
    """Return the slices of ``a`` along ``axis`` where ``condition`` is true (``size``, padded)."""
    from .movement import reshape, take

    if not _traced(condition, a):
        r = np.compress(condition, a, axis=axis)
        if size is None:
            return r
        ax = 0 if axis is None else axis
        r = np.moveaxis(r, ax, 0)
        return np.moveaxis(_pad(r, size, fill_value), 0, ax)
    if axis is None:
        a, axis = (reshape(a, (-1,)) if _traced(a) else np.ravel(a)), 0
    if not _traced(condition):
        # A condition known when traced selects a static shape: a gather.
        picked = np.flatnonzero(np.asarray(condition))
        if size is None:
            return take(a, picked, axis)
        condition = np.asarray(condition)
    size = _size("compress", size)
    if not _traced(a):
        a = _pyasc.apply_constant_array(condition, np.asarray(a))
    cond = condition if _traced(condition) else _pyasc.apply_constant_array(a, np.asarray(condition))
    ax = axis % a.ndim
    if cond.ndim != 1 or cond.shape[0] > a.shape[ax]:
        raise at_user_line(ShapeError(f"compress: the condition must be 1-D and at most {a.shape[ax]} long"))
    p = _pyasc.apply_nonzero(cond, size)
    valid = p >= 0
    got = take(a, _pyasc.apply_where(valid, p, p * 0), ax)
    shape = [1] * a.ndim
    shape[ax] = size
    fill = _pyasc.apply_cast(got * 0 + fill_value, a.dtype) if not isinstance(fill_value, _pyasc.Tensor) else \
        fill_value
    return _pyasc.apply_where(reshape(valid, tuple(shape)), got, fill)


def _data_dependent(name: str) -> Any:
    def impl(*args: Any, **kwargs: Any) -> Any:
        if name == "compress" and len(args) >= 2 and not _traced(args[0]):
            return compress(*args, **kwargs)
        raise at_user_line(TraceError(f"np.{name} gives a data-dependent shape and cannot be traced; use "
                                      f"pyasc.{name}(..., size=n, fill_value=...) for a static size, or where()"))

    return impl


#: NumPy's functions inside operators (``__array_function__``): static conditions work,
#: data-dependent ones raise with the hint.
FUNCTIONS = {name: _data_dependent(name) for name in ("nonzero", "flatnonzero", "argwhere", "compress")}
