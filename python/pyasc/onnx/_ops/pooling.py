"""Pooling: max (with indices), average, Lp and global pools, with ONNX's pads and ceil_mode."""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Sequence

import numpy as np

from ...nn import convolution as _conv
from ._base import OPS, _dims, _rank, op
from .convolution import _conv_pads


def _pool_geometry(a: Dict[str, Any], shape: Sequence[int]) -> tuple:
    n = len(shape) - 2
    kernel = list(a["kernel_shape"])
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    pads = _conv_pads(a, shape[2:], kernel, strides, dil)
    begin, end = pads[:n], list(pads[n:])
    outs = []
    for i in range(n):
        span = shape[2 + i] + begin[i] + end[i] - ((kernel[i] - 1) * dil[i] + 1)
        o = (-(-span // strides[i]) if a.get("ceil_mode", 0) else span // strides[i]) + 1
        if a.get("ceil_mode", 0) and (o - 1) * strides[i] >= shape[2 + i] + begin[i]:
            o -= 1  # the last window must start inside the input or its left padding
        # Pad the end so that every window lies inside.
        need = (o - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - (shape[2 + i] + begin[i])
        end[i] = max(end[i], need)
        outs.append(o)
    return kernel, strides, dil, begin, end, outs


def _windows(t: Any, kernel: Sequence[int], strides: Sequence[int], dil: Sequence[int],
             outs: Sequence[int]) -> List[Any]:
    """Every window tap of a padded input as a strided slice of shape ``(N, C, *outs)``."""
    taps = []
    for off in itertools.product(*(range(k) for k in kernel)):
        idx = [slice(None), slice(None)]
        for i, o in enumerate(off):
            start = o * dil[i]
            idx.append(slice(start, start + strides[i] * (outs[i] - 1) + 1, strides[i]))
        taps.append(t[tuple(idx)])
    return taps


@op("MaxPool")
def _max_pool(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    kernel, strides, dil, begin, end, outs = _pool_geometry(a, _dims(t))
    n = len(kernel)
    simple = n == 2 and dil == [1, 1] and begin == end[:2] and all(b <= k // 2 for b, k in zip(begin, kernel))
    if simple and a.get("_outputs", 1) < 2 and np.dtype(t.dtype).kind == "f" and all(
            (_dims(t)[2 + i] + 2 * begin[i] - kernel[i]) // strides[i] + 1 == outs[i] for i in range(2)):
        return [_conv.max_pool2d(t, tuple(kernel), tuple(strides), tuple(begin))]
    dt = np.dtype(t.dtype)
    low = -np.inf if dt.kind == "f" else np.iinfo(dt).min
    padded = np.pad(t, [(0, 0), (0, 0)] + list(zip(begin, end)), constant_values=low)
    acc = None
    for tap in _windows(padded, kernel, strides, dil, outs):
        acc = tap if acc is None else np.maximum(acc, tap)
    if a.get("_outputs", 1) < 2:
        return [acc]
    # Indices: the first maximum's flat position in the (unpadded) input, row-major per
    # image (storage_order 0) or column-major over the spatial dims (1).
    shape = _dims(t)
    spatial = shape[2:]
    if a.get("storage_order", 0):
        flat = np.arange(int(np.prod(spatial))).reshape(spatial[::-1]).T
    else:
        flat = np.arange(int(np.prod(spatial))).reshape(spatial)
    per_image = (np.arange(shape[0] * shape[1]) * int(np.prod(spatial))).reshape(shape[0], shape[1], *([1] * n))
    pos = np.pad(flat, list(zip(begin, end)), constant_values=-1)[None, None]
    best, where = None, None
    for tap, at in zip(_windows(padded, kernel, strides, dil, outs), _windows(pos, kernel, strides, dil, outs)):
        if best is None:
            best, where = tap, np.broadcast_to(at, _dims(tap))
        else:
            better = tap > best
            best, where = np.where(better, tap, best), np.where(better, at, where)
    return [acc, (where + per_image).astype(np.int64)]


@op("AveragePool")
def _avg_pool(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    shape = _dims(t)
    explicit = list(a.get("pads", [0] * (2 * (len(shape) - 2))))
    kernel, strides, dil, begin, end, outs = _pool_geometry(a, shape)
    n = len(kernel)
    padded = np.pad(t, [(0, 0), (0, 0)] + list(zip(begin, end)))
    acc = None
    for tap in _windows(padded, kernel, strides, dil, outs):
        acc = tap if acc is None else acc + tap
    # Each window's divisor: the input elements it covers, and the explicit pads with
    # count_include_pad (never the end padding ceil_mode adds).
    covered = np.zeros([shape[2 + i] + begin[i] + end[i] for i in range(n)])
    if a.get("count_include_pad", 0):
        covered[tuple(slice(0, shape[2 + i] + begin[i] + explicit[n + i]) for i in range(n))] = 1.0
    else:
        covered[tuple(slice(begin[i], begin[i] + shape[2 + i]) for i in range(n))] = 1.0
    cnt = np.zeros(outs)
    for off in itertools.product(*(range(k) for k in kernel)):
        idx = tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in zip(off, dil, strides, outs))
        cnt = cnt + covered[idx]
    return [acc * (1.0 / cnt).astype(np.dtype(t.dtype))]


OPS["GlobalAveragePool"] = lambda x, a, v: [np.mean(x[0], axis=tuple(range(2, _rank(x[0]))), keepdims=True)]


OPS["GlobalMaxPool"] = lambda x, a, v: [np.max(x[0], axis=tuple(range(2, _rank(x[0]))), keepdims=True)]


@op("LpPool")
def _lp_pool(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    p = a.get("p", 2)
    kernel, strides, dil, begin, end, outs = _pool_geometry(a, _dims(t))
    padded = np.pad(np.abs(t), [(0, 0), (0, 0)] + list(zip(begin, end)))
    acc = None
    for tap in _windows(padded, kernel, strides, dil, outs):
        tp = tap ** p
        acc = tp if acc is None else acc + tp
    return [acc ** (1.0 / p)]
