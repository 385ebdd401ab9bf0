"""NumPy ``ndarray`` methods of traced tensors whose bodies are Python functions.

Each takes the tensor first, then the method's own arguments as NumPy names them. Methods
that NumPy runs in place (``sort``, ``partition``, ``fill``, ``put``) are functional updates
of arrays made in the operator (see ``pyasc.api.updates``); on an argument they are a
``TraceError`` naming the line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api import sorting, updates
from ..errors import TraceError, at_user_line
from . import _numpy_api


def _np(name: str, a: Any, *args: Any, **kwargs: Any) -> Any:
    return _numpy_api._FUNCTIONS[name](a, *args, **kwargs)


def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    """``a.argsort(axis=-1, kind=None, order=None, *, stable=None)``."""
    return sorting.argsort(a, axis, kind, order, stable=stable)


def argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    """``a.argpartition(kth, axis=-1)``."""
    return sorting.argpartition(a, kth, axis, kind, order)


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """``a.searchsorted(v, side='left', sorter=None)``."""
    return sorting.searchsorted(a, v, side, sorter)


def sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> None:
    """``a.sort(axis=-1)``: sorts ``a`` in place (an update of an array made in the operator)."""
    updates._write(a, Ellipsis, sorting.sort(a, axis, kind, order, stable=stable), "set", "`y.sort()`")


def partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> None:
    """``a.partition(kth, axis=-1)``: partitions ``a`` in place."""
    updates._write(a, Ellipsis, sorting.partition(a, kth, axis, kind, order), "set", "`y.partition()`")


def fill(a: Any, value: Any) -> None:
    """``a.fill(value)``: sets every element in place."""
    updates._write(a, Ellipsis, value, "set", "`y.fill(v)`")


def put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """``a.put(ind, v)``: sets the elements at flat indices ``ind`` in place (NumPy's ``np.put``)."""
    if mode != "raise":
        raise at_user_line(TraceError(f"y.put(..., mode={mode!r}) is not supported inside operators"))
    ind = np.asarray(ind) if not updates._has_traced(ind) else ind
    n = int(np.prod(ind.shape))
    if updates._has_traced(v):
        vals = _np("reshape", v, -1)
        if vals.shape[0] != n:  # NumPy repeats the values cyclically over the indices
            vals = _np("take", vals, np.arange(n) % max(vals.shape[0], 1), 0)
    else:
        vals = np.resize(np.asarray(v), n)
    updates._write(_np("reshape", a, -1), _np("reshape", ind, -1) if ind.ndim != 1 else ind, vals, "set",
                   "`y.put(ind, v)`")


def round(a: Any, decimals: int = 0, out: Any = None) -> Any:  # noqa: A001 - NumPy's name
    """``a.round(decimals=0)``."""
    return _np("round", a, decimals, out)


def take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    """``a.take(indices, axis=None)``."""
    return _np("take", a, indices, axis, out=out, mode=mode)


def compress(a: Any, condition: Any, axis: Any = None, out: Any = None) -> Any:
    """``a.compress(condition, axis=None)``: a static condition only (a traced one is data-dependent)."""
    return _np("compress", condition, a, axis, out)


def nonzero(a: Any) -> Any:
    """``a.nonzero()``: data-dependent; raises with the hint to use a static ``size=``."""
    return _np("nonzero", a)
