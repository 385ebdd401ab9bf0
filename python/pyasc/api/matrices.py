"""Matrix parts: ``diagonal trace tril triu``.

``diagonal`` is a view: the two axes moved last and merged, then every ``(m + 1)``-th element
from the offset's start (a strided slice, no data moves unless the merge needs a copy).
``trace`` sums that view; ``tril``/``triu`` select with a mask built from two ``arange`` rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _pyasc, ops
from ..core import _eager
from ..core._axes import err, is_int, norm_axis
from ..errors import InvalidArgumentError, ShapeError, UnsupportedError
from . import creation, movement, reductions

__all__ = ["diagonal", "trace", "tril", "triu"]


def _offset(offset: Any) -> int:
    if not is_int(offset):
        raise err(InvalidArgumentError, f"a diagonal offset must be an integer, not {offset!r}")
    return int(offset)


def _diagonal(x: Any, *, offset: int, axis1: Any, axis2: Any) -> Any:
    nd = x.ndim
    if nd < 2:
        raise err(ShapeError, f"diagonal needs at least two dimensions, not {nd}")
    a1, a2 = norm_axis(axis1, nd), norm_axis(axis2, nd)
    if a1 == a2:
        raise err(ShapeError, "diagonal: axis1 and axis2 cannot be the same")
    rest = [i for i in range(nd) if i not in (a1, a2)]
    perm = rest + [a1, a2]
    y = x if perm == list(range(nd)) else movement.transpose(x, perm)
    n, m = x.shape[a1], x.shape[a2]
    if offset >= 0:
        start, d = offset, max(0, min(n, m - offset))
    else:
        start, d = -offset * m, max(0, min(n + offset, m))
    lead = [x.shape[i] for i in rest]
    y = movement.reshape(y, tuple(lead + [n * m]))
    dims = [(0, 1, s) for s in lead] + ([(start, m + 1, d)] if d else [(0, 1, 0)])
    return _pyasc.apply_view(y, "slice", dims)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """Return the diagonal over ``axis1`` and ``axis2`` (removed; the diagonal becomes the last axis)."""
    return _eager.run("diagonal", _diagonal, (a,), offset=_offset(offset), axis1=axis1, axis2=axis2)


def _trace(x: Any, *, offset: int, axis1: Any, axis2: Any, dtype: Any) -> Any:
    d = _diagonal(x, offset=offset, axis1=axis1, axis2=axis2)
    if dtype is None:
        return reductions.sum(d, -1, False)
    return reductions.sum(d.astype(dtype), -1, False).astype(dtype)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    """Sum of the diagonal over ``axis1`` and ``axis2`` (``sum``'s dtypes: integers give int64)."""
    if out is not None:
        raise err(UnsupportedError, "trace(..., out=) is not supported inside operators")
    return _eager.run("trace", _trace, (a,), offset=_offset(offset), axis1=axis1, axis2=axis2,
                      dtype=None if dtype is None else np.dtype(dtype))


def _tri(x: Any, *, k: int, lower: bool) -> Any:
    if x.ndim < 1:
        raise err(ShapeError, "tril/triu need at least one dimension")
    n, m = (x.shape[0], x.shape[0]) if x.ndim == 1 else x.shape[-2:]
    rows = movement.reshape(creation.arange(n), (n, 1))
    diff = creation.arange(m) - rows
    mask = diff <= k if lower else diff >= k
    return ops.where(mask, x, creation.full((), 0, x.dtype))


def tril(m: Any, k: int = 0) -> Any:
    """Zero the elements above the ``k``-th diagonal of the last two axes."""
    return _eager.run("tril", _tri, (m,), k=_offset(k), lower=True)


def triu(m: Any, k: int = 0) -> Any:
    """Zero the elements below the ``k``-th diagonal of the last two axes."""
    return _eager.run("triu", _tri, (m,), k=_offset(k), lower=False)
