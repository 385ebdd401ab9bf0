"""ONNX operators whose result size depends on the data.

NonMaxSuppression, NonZero, Unique and Compress run between the model's traced stages, on the
arrays the stage before produced.

Each function takes the node's inputs as arrays (``None`` for an omitted one) and its
attributes, and returns the node's outputs as arrays.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np

HostOp = Callable[[List[Any], Dict[str, Any]], List[np.ndarray]]
HOST_OPS: Dict[str, HostOp] = {}


def host(name: str) -> Callable[[HostOp], HostOp]:
    """Register a function for the operator type ``name``."""

    def put(f: HostOp) -> HostOp:
        HOST_OPS[name] = f
        return f

    return put


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """IoU of one ``(y1, x1, y2, x2)`` box (corners in any order) with each of ``others``."""
    def norm(b: np.ndarray) -> np.ndarray:
        return np.stack([np.minimum(b[..., 0], b[..., 2]), np.minimum(b[..., 1], b[..., 3]),
                         np.maximum(b[..., 0], b[..., 2]), np.maximum(b[..., 1], b[..., 3])], -1)

    a, o = norm(box), norm(others)
    ih = np.clip(np.minimum(a[2], o[:, 2]) - np.maximum(a[0], o[:, 0]), 0, None)
    iw = np.clip(np.minimum(a[3], o[:, 3]) - np.maximum(a[1], o[:, 1]), 0, None)
    inter = ih * iw
    union = (a[2] - a[0]) * (a[3] - a[1]) + (o[:, 2] - o[:, 0]) * (o[:, 3] - o[:, 1]) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


@host("NonMaxSuppression")
def _nms(x: List[Any], a: Dict[str, Any]) -> List[np.ndarray]:
    boxes, scores = np.asarray(x[0], np.float64), np.asarray(x[1], np.float64)
    limit = int(np.asarray(x[2]).reshape(-1)[0]) if len(x) > 2 and x[2] is not None and np.size(x[2]) else 0
    iou_t = float(np.asarray(x[3]).reshape(-1)[0]) if len(x) > 3 and x[3] is not None and np.size(x[3]) else 0.0
    score_t = float(np.asarray(x[4]).reshape(-1)[0]) if len(x) > 4 and x[4] is not None and np.size(x[4]) else None
    if a.get("center_point_box", 0):
        c = boxes
        boxes = np.stack([c[..., 1] - c[..., 3] / 2, c[..., 0] - c[..., 2] / 2,
                          c[..., 1] + c[..., 3] / 2, c[..., 0] + c[..., 2] / 2], -1)
    out = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [i for i in np.argsort(-s, kind="stable") if score_t is None or s[i] > score_t]
            kept: List[int] = []
            for i in order:
                if limit and len(kept) >= limit:
                    break
                if kept and np.any(_iou(boxes[b, i], boxes[b, kept]) > iou_t):
                    continue
                kept.append(int(i))
            out.extend([b, c, i] for i in kept)
    return [np.array(out, np.int64).reshape(-1, 3)]


@host("NonZero")
def _nonzero(x: List[Any], a: Dict[str, Any]) -> List[np.ndarray]:
    return [np.array(np.nonzero(np.asarray(x[0])), np.int64).reshape(np.ndim(x[0]), -1)]


@host("Compress")
def _compress(x: List[Any], a: Dict[str, Any]) -> List[np.ndarray]:
    t, cond = np.asarray(x[0]), np.asarray(x[1]).astype(bool)
    axis = a.get("axis")
    return [np.compress(cond, t, axis=axis)]


@host("Unique")
def _unique(x: List[Any], a: Dict[str, Any]) -> List[np.ndarray]:
    t = np.asarray(x[0])
    axis = a.get("axis")
    y, first, inverse, counts = np.unique(t, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    if not a.get("sorted", 1):
        # In the order of first occurrence.
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse.reshape(-1)]
    return [y, first.astype(np.int64), inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)]
