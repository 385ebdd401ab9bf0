"""Indexing: Gather (and Elements, ND), scatters, TopK and OneHot."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from ...errors import UnsupportedError
from ._base import _axis, _dims, _rank, ints, join, op, traced


@op("Gather")
def _gather(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, i = x
    axis = _axis(a.get("axis", 0), _rank(t))
    n = _dims(t)[axis]
    if not traced(i):
        i = np.where(np.asarray(i) < 0, np.asarray(i) + n, np.asarray(i)).astype(np.int64)
        if not traced(t):
            return [np.take(t, i, axis=axis)]
    else:
        i = np.where(i < 0, i + n, i)
        if not traced(t):
            t = join(t, i)
    return [t[(slice(None),) * axis + (i,)]]


@op("GatherElements")
def _gather_elements(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, i = x
    axis = _axis(a.get("axis", 0), _rank(t))
    n = _dims(t)[axis]
    i = np.where(i < 0, i + n, i)
    return [np.take_along_axis(t, i, axis=axis)]


@op("TopK")
def _topk(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    k = ints(x[1])[0] if v >= 10 else a["k"]
    axis = _axis(a.get("axis", -1), _rank(t))
    largest = a.get("largest", 1)
    # A stable sort keeps the lower index first among equal values, as ONNX specifies.
    keyed = (np.invert(t) if np.dtype(t.dtype).kind == "u" else -t) if largest else t
    order = np.argsort(keyed, axis=axis, kind="stable")
    idx = [slice(None)] * _rank(t)
    idx[axis] = slice(0, k)
    order = order[tuple(idx)]
    return [np.take_along_axis(t, order, axis=axis), order.astype(np.int64)]


@op("OneHot")
def _one_hot(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    idx, depth, values = x
    d = int(np.asarray(depth).reshape(-1)[0])
    rank = _rank(idx) + 1
    axis = _axis(a.get("axis", -1), rank)
    idx = np.where(idx < 0, idx + d, idx)
    pos = np.arange(d).reshape([-1 if i == axis else 1 for i in range(rank)])
    hot = np.expand_dims(idx, axis) == pos
    return [np.where(hot, values[1], values[0])]


_AT = {"none": "set", "add": "add", "mul": "multiply", "max": "max", "min": "min"}


def _update(data: Any, index: tuple, updates: Any, reduction: str) -> Any:
    import pyasc

    base = data if traced(data) else pyasc.asarray(data) if hasattr(pyasc, "asarray") else data
    if not traced(base):
        out = np.array(data, copy=True)
        f = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
        if f is None:
            out[index] = updates
        else:
            f.at(out, index, updates)
        return out
    return getattr(base.at[index], _AT[reduction])(updates)


@op("ScatterND")
def _scatter_nd(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    data, idx, upd = x
    k = _dims(idx)[-1]
    index = tuple(idx[..., i] for i in range(k))
    return [_update(data, index, upd, a.get("reduction", "none"))]


@op("ScatterElements", "Scatter")
def _scatter_elements(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    data, idx, upd = x
    axis = _axis(a.get("axis", 0), _rank(data))
    n = _dims(data)[axis]
    idx = np.where(idx < 0, idx + n, idx)
    shape = _dims(idx)
    index = tuple(idx if d == axis else np.arange(shape[d]).reshape([-1 if e == d else 1 for e in range(len(shape))])
                  for d in range(len(shape)))
    index = tuple(np.broadcast_to(i, shape) if not traced(i) else i for i in index)
    return [_update(data, index, upd, a.get("reduction", "none"))]


@op("GatherND")
def _gather_nd(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    data, idx = x
    b = a.get("batch_dims", 0)
    if b:
        raise UnsupportedError("GatherND with batch_dims is not supported")
    k = _dims(idx)[-1]
    return [data[tuple(idx[..., i] for i in range(k))]]
