"""Detection ops: ``pyasc.ops.box_iou``, ``nms``, ``batched_nms``, ``nms_mask`` and ``filter_rows``.

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
* Both take ``score_threshold=``: boxes whose score is not above it take no part (ONNX's
  ``NonMaxSuppression`` rule); the indices returned still index the arrays given.
* ``nms_mask(iou_matrix, iou_threshold)``: the greedy sweep alone, over an IoU matrix whose rows
  and columns are already in score order; returns the boolean keep mask.
* ``filter_rows(x, column, threshold)``: ``x[x[:, column] > threshold]``, the score filter in
  front of NMS (a detector keeps the anchors whose objectness is above a confidence).

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

from .. import _pyasc
from ..errors import DTypeError, InvalidArgumentError, ShapeError, TraceError, at_user_line

__all__ = ["box_iou", "nms", "batched_nms", "nms_mask", "filter_rows"]


def _err(cls: type, message: str) -> Exception:
    return at_user_line(cls(message))


def _traced(*xs: Any) -> bool:
    return any(isinstance(x, _pyasc.Tensor) for x in xs)


def _array(x: Any, what: str, fn: str) -> np.ndarray:
    if type(x) is np.ndarray and x.dtype.kind in "biuf":
        return x
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
    if type(t) is float and t == t:
        return t
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
    # float32 and float64 scores go as they are, through any strides (the kernel widens
    # float32 exactly); NaN is refused there.
    if s.dtype in (np.float32, np.float64):
        return s
    return np.ascontiguousarray(s, dtype=np.float32 if s.dtype == np.float32 else np.float64)


def _box_iou_traced(a: Any, b: Any) -> Any:
    """``box_iou`` of traced tensors as elementwise ops (they fuse into the operator's kernel)."""
    from ..ops import maximum, minimum, where

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
    dt = _float_dtype(b)
    if b.dtype != dt or not b.flags.c_contiguous:
        b = np.ascontiguousarray(b, dtype=dt)
    return b, s, _threshold(iou_threshold, fn)


def _run_nms(fn: str, b: np.ndarray, s: np.ndarray, t: float, c: Any, score_threshold: Any) -> np.ndarray:
    """``_pyasc._nms`` with its input errors (NaN or infinite boxes, NaN scores) at the user's line."""
    st = None
    if score_threshold is not None:
        st = _weak_threshold(s.dtype, score_threshold)
        if st is None:
            raise _err(InvalidArgumentError, f"{fn}: score_threshold must be a real number, not {score_threshold!r}")
        st = float(st)
    try:
        return _pyasc._nms(b, s, t, c, st)
    except InvalidArgumentError as e:
        raise _err(InvalidArgumentError, f"{fn}: {e}") from None


def nms(boxes: Any, scores: Any, iou_threshold: float, *, score_threshold: Any = None) -> np.ndarray:
    """Greedy non-maximum suppression with torchvision's semantics.

    Boxes are visited by descending score (stable: equal scores keep the lower index first); a
    box is dropped when its IoU with an already kept box is strictly greater than
    ``iou_threshold``. Returns the indices of the kept boxes (int64), best score first.

    With ``score_threshold``, boxes whose score is not greater than it (``scores >
    score_threshold`` compared as NumPy compares them) take no part, as in ONNX's
    ``NonMaxSuppression``: the same result as ``sel[nms(boxes[sel], scores[sel], t)]`` for
    ``sel = np.flatnonzero(scores > score_threshold)``, without the copies.
    """
    if (type(boxes) is np.ndarray and type(scores) is np.ndarray and type(iou_threshold) is float
            and (score_threshold is None or type(score_threshold) is float)):
        # The common call, checked in Rust; anything it declines is checked and reported below.
        kept = _pyasc._nms_fast(boxes, scores, iou_threshold, score_threshold)
        if kept is not None:
            return kept
    _no_trace("nms", boxes, scores)
    b, s, t = _nms_inputs(boxes, scores, iou_threshold, "nms")
    return _run_nms("nms", b, s, t, None, score_threshold)


def batched_nms(boxes: Any, scores: Any, idxs: Any, iou_threshold: float, *,
                score_threshold: Any = None) -> np.ndarray:
    """Non-maximum suppression within each category ``idxs[i]``, as torchvision's ``batched_nms``.

    Boxes of different categories never suppress each other. Returns the kept indices (int64)
    in descending score order (equal scores: lower index first). ``score_threshold`` as for
    :func:`nms`.
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
    return _run_nms("batched_nms", b, s, t, c, score_threshold)


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


def _weak_threshold(dtype: np.dtype, threshold: Any) -> Any:
    """Return the threshold as a value of ``dtype`` (float32 or float64) that NumPy would compare.

    For every ``v`` of that dtype, ``v > result`` answers as NumPy's ``v > threshold``; None
    for a threshold that is not a real scalar.
    """
    if type(threshold) in (bool, int, float):
        # A Python number is weakly typed: NumPy compares in the array's dtype (NEP 50).
        # (Exact types: NumPy's float64 scalar is a float subclass but not weak.)
        if abs(threshold) < 3e38 or threshold != threshold:
            return dtype.type(threshold)
        with np.errstate(over="ignore"):
            return dtype.type(threshold)
    t = np.asarray(threshold)
    if t.ndim or t.dtype.kind not in "biuf":
        return None
    if np.result_type(dtype, t.dtype) == dtype:
        return dtype.type(t)
    # float32 values against a wider type compare in float64: the largest float32 at most t.
    tf = float(t)
    with np.errstate(over="ignore"):
        c = np.float32(tf)
    return np.nextafter(c, np.float32(-np.inf)) if float(c) > tf else c


def filter_rows(x: Any, column: int, threshold: Any) -> np.ndarray:
    """Return the rows of the 2-D array ``x`` whose value in ``column`` is greater than ``threshold``.

    The same rows, in the same order and dtype, as NumPy's ``x[x[:, column] > threshold]``
    (rows whose value is NaN are dropped). float32 and float64 C-contiguous arrays take one
    parallel Rust pass that reads one value per row and copies only the kept rows; other
    arrays run NumPy's expression. ``x`` is never modified.
    """
    if type(x) is np.ndarray and type(column) is int and type(threshold) is float:
        # The common call, checked in Rust; anything it declines takes the path below.
        got = _pyasc._filter_rows_fast(x, column, threshold)
        if got is not None:
            return got
    _no_trace("filter_rows", x)
    a = _array(x, "x", "filter_rows")
    if a.ndim != 2:
        raise _err(ShapeError, f"filter_rows: x must be 2-D (rows, columns), not {a.ndim}-D {a.shape}")
    if isinstance(column, (bool, np.bool_)) or not isinstance(column, numbers.Integral):
        raise _err(InvalidArgumentError, f"filter_rows: column must be an int, not {column!r}")
    cols = a.shape[1]
    if not -cols <= column < cols:
        raise _err(ShapeError, f"filter_rows: column {column} is out of range for {cols} columns")
    column = int(column) % cols
    t = _weak_threshold(a.dtype, threshold) if a.dtype in (np.float32, np.float64) else None
    if t is None or not a.flags.c_contiguous or a.shape[0] >= 2**32:
        return a[a[:, column] > threshold]
    return _pyasc._filter_rows(a, column, float(t))
