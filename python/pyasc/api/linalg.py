"""Norms: ``norm`` (``np.linalg.norm``), ``vector_norm`` and ``matrix_norm``.

Vector norms of any order ``p`` (``inf``, ``-inf``, ``0``, ``1``, ``2``, others as
``sum(|x|**p)**(1/p)``) and the matrix norms that are reductions (``'fro'``, ``1``, ``-1``,
``inf``, ``-inf``); ``2``, ``-2`` and ``'nuc'`` need singular values and raise
``UnsupportedError``. Integers compute in float64, float32 stays float32, as NumPy.
"""

from __future__ import annotations

import math
from typing import Any, Tuple

import numpy as np

from .. import ops
from ..core import _eager
from ..core._axes import err, norm_axes
from ..errors import InvalidArgumentError, ShapeError, UnsupportedError
from . import movement, reductions

__all__ = ["norm", "vector_norm", "matrix_norm"]


def _float(x: Any) -> Any:
    return x if np.dtype(x.dtype).kind == "f" else x.astype(np.float64)


def _vector(x: Any, ord: Any, axes: Any, keepdims: bool) -> Any:  # noqa: A002 - NumPy's name
    if isinstance(ord, str):
        raise err(InvalidArgumentError, f"norm: invalid norm order {ord!r} for vectors")
    if ord is None or ord == 2:
        return ops.sqrt(reductions.sum(x * x, axes, keepdims))
    if ord == math.inf:
        return reductions.max(abs(x), axes, keepdims)
    if ord == -math.inf:
        return reductions.min(abs(x), axes, keepdims)
    if ord == 0:
        return reductions.sum(x != 0, axes, keepdims).astype(x.dtype)
    if ord == 1:
        return reductions.sum(abs(x), axes, keepdims)
    try:
        p = float(ord)
    except (TypeError, ValueError):
        raise err(InvalidArgumentError, f"norm: invalid norm order {ord!r} for vectors") from None
    return reductions.sum(abs(x) ** p, axes, keepdims) ** (1.0 / p)


def _matrix(x: Any, ord: Any, axes: Tuple[int, int], keepdims: bool) -> Any:  # noqa: A002
    r, c = axes
    if r == c:
        raise err(ShapeError, "norm: duplicate axes given")
    if ord in (2, -2, "nuc"):
        raise err(UnsupportedError, f"norm: the matrix norm of order {ord!r} needs a singular value "
                                    "decomposition, which pyasc does not provide inside operators")
    if ord is None or ord == "fro":
        res = reductions.sum(x * x, (r, c), False)
        res = ops.sqrt(res)
    elif ord in (1, -1):
        red = reductions.max if ord == 1 else reductions.min
        res = red(reductions.sum(abs(x), r, False), c - 1 if c > r else c, False)
    elif ord in (math.inf, -math.inf):
        red = reductions.max if ord == math.inf else reductions.min
        res = red(reductions.sum(abs(x), c, False), r - 1 if r > c else r, False)
    else:
        raise err(InvalidArgumentError, f"norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        res = movement.expand_dims(res, tuple(sorted((r, c))))
    return res


def _norm(x: Any, *, ord: Any, axis: Any, keepdims: bool) -> Any:  # noqa: A002
    x = _float(x)
    nd = x.ndim
    if axis is None:
        if ord is None:
            r = ops.sqrt(reductions.sum(x * x, None, False))
            return movement.reshape(r, (1,) * nd) if keepdims else r
        if nd == 1:
            return _vector(x, ord, None, keepdims)
        if nd == 2:
            return _matrix(x, ord, (0, 1), keepdims)
        raise err(ShapeError, f"norm: improper number of dimensions ({nd}) for a norm of order {ord!r}")
    axes = norm_axes(axis, nd)
    if len(axes) == 1:
        return _vector(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix(x, ord, axes, keepdims)
    raise err(ShapeError, f"norm: improper number of dimensions to norm: axis={axis!r}")


def _check(a: Any) -> None:
    if getattr(a, "_pyasc_complex", False) is True:
        raise err(UnsupportedError, "norm of complex values is not supported inside operators yet")


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    """Matrix or vector norm, as ``np.linalg.norm``."""
    _check(x)
    if isinstance(axis, list):
        axis = tuple(axis)
    return _eager.run("norm", _norm, (x,), ord=ord, axis=axis, keepdims=bool(keepdims))


def _vector_norm(x: Any, *, ord: Any, axis: Any, keepdims: bool) -> Any:  # noqa: A002
    x = _float(x)
    return _vector(x, ord, None if axis is None else norm_axes(axis, x.ndim), keepdims)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    """Vector norm over ``axis`` (None: all axes as one vector), as ``np.linalg.vector_norm``."""
    _check(x)
    if isinstance(ord, str):
        raise err(InvalidArgumentError, f"vector_norm: invalid norm order {ord!r}")
    return _eager.run("vector_norm", _vector_norm, (x,), ord=ord, axis=axis, keepdims=bool(keepdims))


def _matrix_norm(x: Any, *, ord: Any, keepdims: bool) -> Any:  # noqa: A002
    x = _float(x)
    if x.ndim < 2:
        raise err(ShapeError, f"matrix_norm needs at least two dimensions, not {x.ndim}")
    return _matrix(x, ord, (x.ndim - 2, x.ndim - 1), keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    """Matrix norm over the last two axes, as ``np.linalg.matrix_norm``."""
    _check(x)
    return _eager.run("matrix_norm", _matrix_norm, (x,), ord=ord, keepdims=bool(keepdims))
