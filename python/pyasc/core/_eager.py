"""Running a NumPy-style function of arrays at once, outside an operator.

``pyasc.var(a)``, ``pyasc.einsum("ij,jk", a, b)``... called on NumPy arrays trace the same
function into a cached one-op operator keyed by its non-array parameters (like ``jax.numpy``).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence, Tuple

import numpy as np

from .. import _pyasc
from ..ops import _eager_op


def traced(*xs: Any) -> bool:
    """Return True when any of ``xs`` is a traced value (a real or a complex tracer)."""
    return any(isinstance(x, _pyasc.Tensor) or getattr(x, "_pyasc_complex", False) is True for x in xs)


def _kept_types() -> Tuple[type, ...]:
    """Return the argument types passed as they are.

    Arrays, DeviceArrays, and graph mode's lazy arrays once graph mode was imported (none exists
    before).
    """
    graph = sys.modules.get("pyasc.graph.record")
    if graph is None:
        return (np.ndarray, _pyasc.DeviceArray)
    return (np.ndarray, _pyasc.DeviceArray, graph.LazyArray)


def run(name: str, fn: Callable[..., Any], arrays: Sequence[Any], **params: Any) -> Any:
    """Call ``fn(*arrays, **params)``: directly on traced values, else as a cached operator."""
    if traced(*arrays):
        return fn(*arrays, **params)
    kept = _kept_types()
    arrays = [a if isinstance(a, kept) else np.asarray(a) for a in arrays]
    key = f"{name}:{len(arrays)}:{sorted(params.items())!r}"
    return _eager_op(key, lambda *ts: fn(*ts, **params))(*arrays)


def lift(like: Any, v: Any) -> Any:
    """Return ``v`` as a traced value of ``like``'s trace (arrays are read live at each call)."""
    if traced(v):
        return v
    return _pyasc.apply_capture(like, v if isinstance(v, (np.ndarray, _pyasc.DeviceArray)) else np.asarray(v))
