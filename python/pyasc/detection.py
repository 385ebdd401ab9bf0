"""Detection ops: ``pyasc.ops.box_iou``, ``nms``, ``batched_nms`` and ``nms_mask``.

Boxes are ``(N, 4)`` arrays of ``x1, y1, x2, y2`` corners, as torchvision's ``box_iou`` and
``nms`` take them, and the results follow torchvision:

* ``box_iou(a, b)`` is ``inter / union`` for every pair, computed in the boxes' dtype
  (float32 or float64; integers and bools compute in float64, float16 in float32). Where the
  union is 0 (two zero-area boxes) the IoU is 0; torchvision's division gives NaN there.
* ``nms(boxes, scores, iou_threshold)`` visits boxes by descending score (a stable order: equal
  scores keep the lower index first) and drops a box when its IoU with a kept box is strictly
  greater than the threshold. It returns the kept indices as int64, best score first.
* ``batched_nms(boxes, scores, idxs, iou_threshold)``: the same within each category of
  ``idxs``; boxes of different categories never suppress each other.
* ``nms_mask(iou_matrix, iou_threshold)``: the greedy sweep alone, over an IoU matrix whose rows
  and columns are already in score order; returns the boolean keep mask.

Each call is one Rust kernel run on all cores (SIMD IoU rows, 64-box suppression bit-masks
computed in parallel, one sequential sweep). Outside an operator the inputs are NumPy arrays
(or anything ``np.asarray`` takes); they are never modified. Inside an operator ``box_iou`` of
traced tensors records elementwise ops that fuse into the operator's kernel; the other three
have data-dependent results and raise ``TraceError`` there. Boxes must be finite and scores
must not be NaN (``InvalidArgumentError``).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from . import _pyasc
from .errors import DTypeError, InvalidArgumentError, ShapeError, TraceError, at_user_line

__all__ = ["box_iou", "nms", "batched_nms", "nms_mask"]


def _err(cls: type, message: str) -> Exception:
    return at_user_line(cls(message))


def _traced(*xs: Any) -> bool:
    return any(isinstance(x, _pyasc.Tensor) for x in xs)


def _array(x: Any, what: str, fn: str) -> np.ndarray:
    try:
        a = np.asarray(x)
    except Exception as e:  # noqa: BLE001 - anything np.asarray refuses is the user's input
        raise _err(DTypeError, f"{fn}: {what} must be an array of numbers, not {type(x).__name__}") from e
    if a.dtype.kind not in "biuf":
        raise _err(DTypeError, f"{fn}: {what} must hold real numbers, not {a.dtype}")
    return a


def _float_dtype(*arrays: np.ndarray) -> np.dtype:
    """float32 when every array is float16/float32, else float64."""
    if all(a.dtype.kind == "f" and a.dtype.itemsize <= 4 for a in arrays):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _boxes(x: Any, what: str, fn: str) -> np.ndarray:
    a = _array(x, what, fn)
    if a.ndim != 2 or a.shape[1] != 4:
        raise _err(ShapeError, f"{fn}: {what} must have shape (N, 4) (x1, y1, x2, y2 rows), not {a.shape}")
    return a


def _finite(a: np.ndarray, what: str, fn: str) -> None:
    if a.dtype.kind == "f" and a.size and not np.isfinite(a).all():
        raise _err(InvalidArgumentError, f"{fn}: {what} contain NaN or infinity")


def _threshold(t: Any, fn: str) -> float:
    if isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Real):
        raise _err(InvalidArgumentError, f"{fn}: iou_threshold must be a real number, not {t!r}")
    t = float(t)
    if np.isnan(t):
        raise _err(InvalidArgumentError, f"{fn}: iou_threshold must not be NaN")
    return t


def _scores(x: Any, n: int, fn: str) -> np.ndarray:
    s = _array(x, "scores", fn)
    if s.shape != (n,):
        raise _err(ShapeError, f"{fn}: scores must have shape ({n},) (one per box), not {s.shape}")
    s = np.ascontiguousarray(s, dtype=np.float64)
    if np.isnan(s).any():
        raise _err(InvalidArgumentError, f"{fn}: scores contain NaN")
    return s


def _box_iou_traced(a: Any, b: Any) -> Any:
    """``box_iou`` of traced tensors as elementwise ops (they fuse into the operator's kernel)."""
    from .ops import maximum, minimum, where

    for t, what in ((a, "boxes1"), (b, "boxes2")):
        if t.ndim != 2 or t.shape[1] != 4:
            raise _err(ShapeError, f"box_iou: {what} must have shape (N, 4), not {tuple(t.shape)}")
    ax1, ay1, ax2, ay2 = (a[:, k:k + 1] for k in range(4))
    bx1, by1, bx2, by2 = (b[:, k] for k in range(4))
    w = maximum(minimum(ax2, bx2) - maximum(ax1, bx1), 0)
    h = maximum(minimum(ay2, by2) - maximum(ay1, by1), 0)
    inter = w * h
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    return where(union == 0, 0, inter / where(union == 0, 1, union))


def box_iou(boxes1: Any, boxes2: Any) -> Any:
    """Pairwise IoU of ``(N, 4)`` and ``(M, 4)`` x1y1x2y2 boxes: an ``(N, M)`` array.

    ``inter / union`` in the boxes' dtype (float32 stays float32, others compute in float64),
    as torchvision's ``box_iou``; where the union is 0 (two zero-area boxes) the result is 0
    where torchvision's division gives NaN.
    """
    if _traced(boxes1, boxes2):
        return _box_iou_traced(boxes1, boxes2)
    a, b = _boxes(boxes1, "boxes1", "box_iou"), _boxes(boxes2, "boxes2", "box_iou")
    dt = _float_dtype(a, b)
    a, b = np.ascontiguousarray(a, dtype=dt), np.ascontiguousarray(b, dtype=dt)
    _finite(a, "boxes1", "box_iou")
    _finite(b, "boxes2", "box_iou")
    return _pyasc._box_iou(a, b)


def _no_trace(fn: str, *xs: Any) -> None:
    if _traced(*xs):
        raise _err(TraceError, f"{fn} returns a data-dependent number of boxes, so it cannot run inside an operator; "
                               f"call it on arrays (for example on an operator's outputs)")


def _nms_inputs(boxes: Any, scores: Any, iou_threshold: Any, fn: str) -> tuple:
    b = _boxes(boxes, "boxes", fn)
    s = _scores(scores, b.shape[0], fn)
    b = np.ascontiguousarray(b, dtype=_float_dtype(b))
    _finite(b, "boxes", fn)
    return b, s, _threshold(iou_threshold, fn)


def nms(boxes: Any, scores: Any, iou_threshold: float) -> np.ndarray:
    """Greedy non-maximum suppression with torchvision's semantics.

    Boxes are visited by descending score (stable: equal scores keep the lower index first); a
    box is dropped when its IoU with an already kept box is strictly greater than
    ``iou_threshold``. Returns the indices of the kept boxes (int64), best score first.
    """
    _no_trace("nms", boxes, scores)
    b, s, t = _nms_inputs(boxes, scores, iou_threshold, "nms")
    return _pyasc._nms(b, s, t)


def batched_nms(boxes: Any, scores: Any, idxs: Any, iou_threshold: float) -> np.ndarray:
    """Non-maximum suppression within each category ``idxs[i]``, as torchvision's ``batched_nms``.

    Boxes of different categories never suppress each other. Returns the kept indices (int64)
    in descending score order (equal scores: lower index first).
    """
    _no_trace("batched_nms", boxes, scores, idxs)
    b, s, t = _nms_inputs(boxes, scores, iou_threshold, "batched_nms")
    c = _array(idxs, "idxs", "batched_nms")
    if c.dtype.kind not in "biu":
        raise _err(DTypeError, f"batched_nms: idxs must hold integer categories, not {c.dtype}")
    if c.shape != (b.shape[0],):
        raise _err(ShapeError, f"batched_nms: idxs must have shape ({b.shape[0]},) (one per box), not {c.shape}")
    # uint64 wraps into int64 one to one, so equal categories stay equal and distinct stay distinct.
    c = np.ascontiguousarray(c).astype(np.int64, copy=False)
    return _pyasc._nms(b, s, t, c)


def nms_mask(iou_matrix: Any, iou_threshold: float) -> np.ndarray:
    """Run the greedy NMS sweep over a precomputed ``(N, N)`` IoU matrix in score order.

    Row and column ``i`` belong to the box of rank ``i`` (best score first). Returns a boolean
    mask: ``keep[i]`` is True when no kept box of a better rank has an IoU with box ``i``
    strictly greater than ``iou_threshold``. ``nms_mask(box_iou(b, b), t)`` for boxes ``b``
    sorted by score keeps the boxes ``nms`` keeps.
    """
    _no_trace("nms_mask", iou_matrix)
    m = _array(iou_matrix, "iou_matrix", "nms_mask")
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise _err(ShapeError, f"nms_mask: iou_matrix must be square (N, N), not {m.shape}")
    t = _threshold(iou_threshold, "nms_mask")
    return _pyasc._nms_mask(np.ascontiguousarray(m, dtype=_float_dtype(m)), t)
