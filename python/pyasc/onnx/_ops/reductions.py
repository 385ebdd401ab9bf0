"""Reductions, arg-reductions, softmax and hardmax, and scans (CumSum, CumProd)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from ._base import OPS, Op, _axis, _dims, _rank, _same, ints, op


def _reduce_axes(x: List[Any], a: Dict[str, Any], v: int, since: int) -> Optional[tuple]:
    if v >= since and len(x) > 1 and x[1] is not None:
        axes = ints(x[1])
    else:
        axes = a.get("axes")
    if not axes:
        return None if not a.get("noop_with_empty_axes", 0) else ()
    return tuple(_axis(int(i), _rank(x[0])) for i in axes)


def _reducer(f: Callable[..., Any], since: int, post: Optional[Callable[[Any], Any]] = None,
             pre: Optional[Callable[[Any], Any]] = None) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        axes = _reduce_axes(x, a, v, since)
        t = x[0] if pre is None else pre(x[0])
        shape = _dims(t)
        empty = any(shape[i] == 0 for i in (axes if axes is not None else range(len(shape))))
        if axes == ():
            r = t
        elif empty:
            # Over nothing: the reduction's identity (NumPy raises for max and min).
            keep = bool(a.get("keepdims", 1))
            out = [1 if (axes is None or i in axes) and keep else n for i, n in enumerate(shape)
                   if keep or not (axes is None or i in axes)]
            r = np.full(out, _empty_identity(f, np.dtype(t.dtype)), np.dtype(t.dtype))
        else:
            r = f(t, axis=axes, keepdims=bool(a.get("keepdims", 1)))
        return [_same(post(r) if post is not None else r, x[0])]

    return run


def _empty_identity(f: Callable[..., Any], dt: np.dtype) -> Any:
    if f is np.max:
        return False if dt.kind == "b" else -np.inf if dt.kind == "f" else np.iinfo(dt).min
    if f is np.min:
        return True if dt.kind == "b" else np.inf if dt.kind == "f" else np.iinfo(dt).max
    if f is np.prod:
        return 1
    return 0


OPS["ReduceSum"] = _reducer(np.sum, 13)


OPS["ReduceMean"] = _reducer(np.mean, 18)


OPS["ReduceMax"] = _reducer(np.max, 18)


OPS["ReduceMin"] = _reducer(np.min, 18)


OPS["ReduceProd"] = _reducer(np.prod, 18)


OPS["ReduceL1"] = _reducer(np.sum, 18, pre=np.abs)


OPS["ReduceL2"] = _reducer(np.sum, 18, pre=lambda t: t * t, post=np.sqrt)


OPS["ReduceSumSquare"] = _reducer(np.sum, 18, pre=lambda t: t * t)


OPS["ReduceLogSum"] = _reducer(np.sum, 18, post=np.log)


OPS["ReduceLogSumExp"] = _reducer(np.sum, 18, pre=np.exp, post=np.log)


def _argop(f: Callable[..., Any], flip: Callable[..., Any]) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        t, axis = x[0], _axis(a.get("axis", 0), _rank(x[0]))
        if a.get("select_last_index", 0):
            n = _dims(t)[axis]
            r = (n - 1) - f(np.flip(t, axis), axis=axis)
        else:
            r = f(t, axis=axis)
        r = r.astype(np.int64)
        return [np.expand_dims(r, axis) if a.get("keepdims", 1) else r]

    return run


OPS["ArgMax"], OPS["ArgMin"] = _argop(np.argmax, np.flip), _argop(np.argmin, np.flip)


def _softmax_op(log: bool) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        t = x[0]
        axis = a.get("axis", -1 if v >= 13 else 1)
        shape = _dims(t)
        if v < 13:
            # Before opset 13 the input is coerced to 2-D at `axis`.
            axis = _axis(axis, len(shape))
            t = t.reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1)
            axis = 1
        m = np.max(t, axis=axis, keepdims=True)
        e = np.exp(t - m)
        s = np.sum(e, axis=axis, keepdims=True)
        r = (t - m) - np.log(s) if log else e / s
        return [r.reshape(shape)]

    return run


OPS["Softmax"], OPS["LogSoftmax"] = _softmax_op(False), _softmax_op(True)


@op("Hardmax")
def _hardmax(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    shape = _dims(t)
    axis = _axis(a.get("axis", -1 if v >= 13 else 1), len(shape))
    if v < 13:
        t = t.reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1)
        axis = 1
    first = np.argmax(t, axis=axis)
    pos = np.arange(_dims(t)[axis]).reshape([-1 if i == axis else 1 for i in range(len(_dims(t)))])
    hot = np.expand_dims(first, axis) == pos
    return [np.where(hot, np.ones((), np.dtype(t.dtype)), np.zeros((), np.dtype(t.dtype))).reshape(shape)]


def _scan_op(f: Callable[..., Any], identity: float) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        t = x[0]
        axis = _axis(ints(x[1])[0], _rank(t))
        if a.get("reverse", 0):
            t = np.flip(t, axis)
        r = f(t, axis=axis)
        if a.get("exclusive", 0):
            n = _dims(t)[axis]
            idx = [slice(None)] * _rank(t)
            idx[axis] = slice(0, n - 1)
            widths = [(0, 0)] * _rank(t)
            widths[axis] = (1, 0)
            r = np.pad(r[tuple(idx)], widths, constant_values=identity)
        if a.get("reverse", 0):
            r = np.flip(r, axis)
        return [_same(r, x[0])]

    return run


OPS["CumSum"], OPS["CumProd"] = _scan_op(np.cumsum, 0), _scan_op(np.cumprod, 1)
