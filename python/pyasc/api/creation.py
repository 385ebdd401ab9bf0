"""Creating arrays: ``zeros ones full arange``.

Inside an operator they make constants of the trace (``zeros``/``ones``/``full`` fill a
shape; ``arange`` is computed once when tracing). Outside an operator ``zeros``, ``ones``
and ``full`` make DeviceArrays and ``arange`` a NumPy array.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from .. import _pyasc
from ..errors import UnsupportedError

__all__ = ["zeros", "ones", "full", "arange"]

ShapeLike = Union[int, Sequence[int]]


def _tracing() -> Optional[Any]:
    from ..core.dynamic import _stack

    traces = _stack("traces")
    if traces:
        if not traces[-1]:
            raise UnsupportedError("creating arrays inside an operator without arguments is not supported")
        return traces[-1][0]
    return None


def _shape(shape: ShapeLike) -> list:
    return [int(shape)] if isinstance(shape, (int, np.integer)) else [int(d) for d in shape]


def full(shape: ShapeLike, fill_value: Any, dtype: Any = None) -> Any:
    """Make an array of ``shape`` filled with ``fill_value`` (dtype from the value, like NumPy)."""
    dt = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    like = _tracing()
    if like is not None:
        return _pyasc.apply_fill(like, fill_value, dt, _shape(shape))
    return _pyasc.to_device(np.full(_shape(shape), fill_value, dtype=dt))


def zeros(shape: ShapeLike, dtype: Any = np.float32, alignment: int = 128, device: Optional[str] = None) -> Any:
    """Make an array of zeros (a DeviceArray outside an operator, float32 by default)."""
    like = _tracing()
    if like is not None:
        return _pyasc.apply_fill(like, 0, np.dtype(dtype), _shape(shape))
    return _pyasc.zeros(shape, dtype, alignment, device)


def ones(shape: ShapeLike, dtype: Any = np.float32) -> Any:
    """Make an array of ones (a DeviceArray outside an operator, float32 by default)."""
    return full(shape, 1, dtype)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Any:
    """Evenly spaced values in ``[start, stop)`` (NumPy's ``arange``), fixed when tracing."""
    values = np.arange(start, stop, step, dtype=dtype) if stop is not None else np.arange(start, step=step, dtype=dtype)
    like = _tracing()
    if like is not None:
        return _pyasc.apply_constant_array(like, values)
    return values
