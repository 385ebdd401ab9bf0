"""The operator table and what its functions share: registration, traced-value tests, shapes."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np

from ... import _pyasc
from ...errors import UnsupportedError

Op = Callable[[List[Any], Dict[str, Any], int], List[Any]]


OPS: Dict[str, Op] = {}


def op(*names: str) -> Callable[[Op], Op]:
    """Register a function for the operator types ``names``."""

    def put(f: Op) -> Op:
        for n in names:
            OPS[n] = f
        return f

    return put


def traced(x: Any) -> bool:
    """Return whether ``x`` is a traced tensor (a value of the model's trace)."""
    return type(x) is _pyasc.Tensor


def ints(x: Any) -> List[int]:
    """Return a constant integer input (shapes, axes, pads) as a list; it must be known at load time."""
    if traced(x):
        raise UnsupportedError("a shape, axes or pads input computed from the model's inputs is not supported; "
                               "it must be a constant or come from static shapes")
    return [int(v) for v in np.asarray(x).reshape(-1)]


def join(const: Any, value: Any) -> Any:
    """Return the array ``const`` as a value of ``value``'s trace (through an empty read of it)."""
    a = np.asarray(const)
    empty = value.reshape(-1)[:0].sum()
    if a.dtype.kind == "b":
        return (a.astype(np.int8) + empty.astype(np.int8)) != 0
    return a + empty.astype(a.dtype)


def _dims(x: Any) -> tuple:
    """Return the shape of an array or a traced tensor."""
    return tuple(x.shape) if traced(x) else tuple(np.shape(x))


def _rank(x: Any) -> int:
    return len(_dims(x))


def _count(x: Any) -> int:
    return int(np.prod(_dims(x), dtype=np.int64))


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


def _unary(f: Callable[[Any], Any]) -> Op:
    return lambda x, a, v: [f(x[0])]


def _binary(f: Callable[[Any, Any], Any]) -> Op:
    return lambda x, a, v: [f(x[0], x[1])]


def _same(x: Any, like: Any) -> Any:
    """``x`` in ``like``'s dtype (ONNX ops keep their input's type)."""
    dt = np.dtype(like.dtype)
    return x if np.dtype(x.dtype) == dt else x.astype(dt)


def _np_dtype(code: int) -> np.dtype:
    from onnx.helper import tensor_dtype_to_np_dtype

    return np.dtype(tensor_dtype_to_np_dtype(code))
