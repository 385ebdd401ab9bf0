"""Axis arguments of NumPy functions: normalising them and reporting bad ones as pyasc errors."""

from __future__ import annotations

import numbers
from typing import Any, Tuple

import numpy as np

from ..errors import InvalidArgumentError, PyAscError, ShapeError, at_user_line


def err(cls: type, message: str) -> PyAscError:
    """Make a pyasc error of class ``cls`` that names the user's line."""
    return at_user_line(cls(message))


def is_int(a: Any) -> bool:
    """Return True for Python and NumPy integers (not bools)."""
    return isinstance(a, (numbers.Integral, np.integer)) and not isinstance(a, (bool, np.bool_))


def norm_axis(a: Any, nd: int) -> int:
    """Return axis ``a`` of a rank-``nd`` array as a non-negative int, or raise ``ShapeError``."""
    if not is_int(a):
        raise err(InvalidArgumentError, f"an axis must be an integer, not {a!r}")
    a = int(a)
    if not -nd <= a < nd:
        raise err(ShapeError, f"axis {a} is out of bounds for a tensor of rank {nd}")
    return a + nd if a < 0 else a


def norm_axes(axis: Any, nd: int) -> Tuple[int, ...]:
    """Return ``axis`` (None: every axis; an int; a tuple) as a tuple of distinct non-negative ints."""
    if axis is None:
        return tuple(range(nd))
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(norm_axis(a, nd) for a in items)
    if len(set(out)) != len(out):
        raise err(ShapeError, f"duplicate value in axis {axis!r}")
    return out


def count(shape: Tuple[int, ...], axes: Tuple[int, ...]) -> int:
    """Return how many elements a reduction over ``axes`` of ``shape`` reads."""
    n = 1
    for a in axes:
        n *= shape[a]
    return n
