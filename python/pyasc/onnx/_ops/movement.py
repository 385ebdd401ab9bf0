"""Movement: reshapes, transposes, concatenation and splits, slices, pads, tiles, depth/space."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from ._base import OPS, _axis, _dims, _rank, ints, op, traced


@op("Reshape")
def _reshape(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    shape = ints(x[1]) if v >= 5 else list(a["shape"])
    cur = _dims(x[0])
    if not a.get("allowzero", 0):
        shape = [cur[i] if s == 0 else s for i, s in enumerate(shape)]
    return [np.reshape(x[0], shape)]


@op("Flatten")
def _flatten(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    shape = _dims(x[0])
    axis = _axis(a.get("axis", 1), len(shape))
    lead = int(np.prod(shape[:axis], dtype=np.int64))
    return [np.reshape(x[0], (lead, int(np.prod(shape[axis:], dtype=np.int64))))]


@op("Transpose")
def _transpose(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    perm = a.get("perm")
    return [np.transpose(x[0], perm if perm is not None else None)]


@op("Squeeze")
def _squeeze(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    axes = (ints(x[1]) if len(x) > 1 and x[1] is not None else None) if v >= 13 else a.get("axes")
    if axes is None:
        return [np.squeeze(x[0])]
    return [np.squeeze(x[0], tuple(_axis(i, _rank(x[0])) for i in axes))]


@op("Unsqueeze")
def _unsqueeze(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    axes = ints(x[1]) if v >= 13 else list(a["axes"])
    rank = _rank(x[0]) + len(axes)
    return [np.expand_dims(x[0], tuple(sorted(_axis(i, rank) for i in axes)))]


@op("Concat")
def _concat(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    parts = [t for t in x if t is not None]
    return [np.concatenate(parts, axis=a["axis"])]


@op("Split")
def _split(x: List[Any], a: Dict[str, Any], v: int, outputs: int = 0) -> List[Any]:
    t = x[0]
    axis = _axis(a.get("axis", 0), _rank(t))
    sizes = (ints(x[1]) if len(x) > 1 and x[1] is not None else None) if v >= 13 else a.get("split")
    n = _dims(t)[axis]
    if sizes is None:
        parts = a.get("num_outputs") or a["_outputs"]
        step = -(-n // parts)
        sizes = [min(step, n - i * step) for i in range(parts)]
    bounds = np.cumsum([0] + list(sizes))
    idx = [slice(None)] * _rank(t)
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        idx[axis] = slice(int(lo), int(hi))
        out.append(t[tuple(idx)])
    return out


@op("Slice")
def _slice(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    if v < 10:
        starts, ends, axes, steps = list(a["starts"]), list(a["ends"]), a.get("axes"), None
    else:
        starts, ends = ints(x[1]), ints(x[2])
        axes = ints(x[3]) if len(x) > 3 and x[3] is not None else None
        steps = ints(x[4]) if len(x) > 4 and x[4] is not None else None
    rank = _rank(t)
    axes = [_axis(i, rank) for i in axes] if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    idx = [slice(None)] * rank
    shape = _dims(t)
    for s, e, ax, st in zip(starts, ends, axes, steps):
        n = shape[ax]
        # Clamp as ONNX does (INT_MAX/INT_MIN ends included).
        s = max(-n - 1, min(n, s))
        e = max(-n - 1, min(n, e))
        if st > 0:
            s, e = (s + n if s < 0 else s), (e + n if e < 0 else e)
            idx[ax] = slice(max(0, s), max(0, e), st)
        else:
            s = s + n if s < 0 else s
            s = min(s, n - 1)
            e = e + n if e < 0 else e
            idx[ax] = slice(s, e if e >= 0 else None, st)
    return [t[tuple(idx)]]


@op("Expand")
def _expand(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    shape = np.broadcast_shapes(tuple(_dims(x[0])), tuple(ints(x[1])))
    return [np.broadcast_to(x[0], shape) * np.ones((), np.dtype(x[0].dtype)) if traced(x[0])
            else np.broadcast_to(x[0], shape).copy()]


@op("Tile")
def _tile(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, reps = x[0], ints(x[1])
    if not traced(t):
        return [np.tile(t, reps)]
    # Each axis d becomes (reps[d], d) broadcast, then merged: the copies one after another.
    d = _dims(t)
    inter = tuple(v for n in d for v in (1, n))
    full = tuple(v for r, n in zip(reps, d) for v in (r, n))
    return [np.reshape(np.broadcast_to(np.reshape(t, inter), full), tuple(r * n for r, n in zip(reps, d)))]


@op("Pad")
def _pad(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    rank = _rank(t)
    if v < 11:
        pads, value = list(a["pads"]), a.get("value", 0.0)
    else:
        pads = ints(x[1])
        value = x[2] if len(x) > 2 and x[2] is not None else 0
        if hasattr(value, "reshape") and not traced(value):
            value = np.asarray(value).reshape(()).item()
    mode = a.get("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    axes = ints(x[3]) if v >= 18 and len(x) > 3 and x[3] is not None else list(range(rank))
    axes = [_axis(i, rank) for i in axes]
    k = len(axes)
    widths = [(0, 0)] * rank
    for j, ax in enumerate(axes):
        widths[ax] = (pads[j], pads[j + k])
    # Negative pads crop.
    crop = [slice(None)] * rank
    pos = []
    for ax, (lo, hi) in enumerate(widths):
        crop[ax] = slice(-lo if lo < 0 else 0, hi if hi < 0 else None)
        pos.append((max(lo, 0), max(hi, 0)))
    t = t[tuple(crop)]
    np_mode = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode]
    if np_mode == "constant":
        return [np.pad(t, pos, mode="constant", constant_values=value)]
    return [np.pad(t, pos, mode=np_mode)]


def _depth_to_space(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    b = a["blocksize"]
    n, c, h, w = _dims(t)
    mode = a.get("mode", "DCR")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if mode == "DCR":
        y = np.reshape(t, (n, b, b, c // (b * b), h, w)).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = np.reshape(t, (n, c // (b * b), b, b, h, w)).transpose(0, 1, 4, 2, 5, 3)
    return [np.reshape(y, (n, c // (b * b), h * b, w * b))]


def _space_to_depth(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    b = a["blocksize"]
    n, c, h, w = _dims(t)
    y = np.reshape(t, (n, c, h // b, b, w // b, b)).transpose(0, 3, 5, 1, 2, 4)
    return [np.reshape(y, (n, c * b * b, h // b, w // b))]


OPS["DepthToSpace"], OPS["SpaceToDepth"] = _depth_to_space, _space_to_depth


@op("Trilu")
def _trilu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    k = ints(x[1])[0] if len(x) > 1 and x[1] is not None else 0
    rows, cols = _dims(t)[-2:]
    keep = np.triu(np.ones((rows, cols), bool), k) if a.get("upper", 1) else np.tril(np.ones((rows, cols), bool), k)
    return [np.where(keep, t, np.zeros((), np.dtype(t.dtype)))]


@op("CenterCropPad")
def _center_crop_pad(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    shape = _dims(t)
    axes = [_axis(i, len(shape)) for i in a.get("axes", range(len(shape)))]
    want = dict(zip(axes, ints(x[1])))
    idx, widths = [], []
    for d, n in enumerate(shape):
        w = want.get(d, n)
        if w < n:
            lo = (n - w) // 2
            idx.append(slice(lo, lo + w))
            widths.append((0, 0))
        else:
            idx.append(slice(None))
            lo = (w - n) // 2
            widths.append((lo, w - n - lo))
    return [np.pad(t[tuple(idx)], widths)]
