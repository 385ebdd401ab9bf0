"""Resize and Upsample: nearest, linear and cubic interpolation along each axis."""

from __future__ import annotations

import math
from typing import Any, Dict, List

import numpy as np

from ...errors import UnsupportedError
from ._base import _axis, _count, _dims, _rank, ints, op


def _cubic_axis(t: Any, ax: int, src: np.ndarray, n: int, o: int, a: Dict[str, Any]) -> Any:
    """Interpolate ``t`` cubically along ``ax`` at source positions ``src``.

    Four taps each, Keys' kernel with coefficient ``cubic_coeff_a``; taps outside the input are
    clamped, or dropped with the rest reweighted under ``exclude_outside``.
    """
    ca = a.get("cubic_coeff_a", -0.75)
    base = np.floor(src).astype(np.int64)
    frac = src - base

    def kernel(d: np.ndarray) -> np.ndarray:
        d = np.abs(d)
        return np.where(d <= 1, ((ca + 2) * d - (ca + 3)) * d * d + 1,
                        np.where(d < 2, ((ca * d - 5 * ca) * d + 8 * ca) * d - 4 * ca, 0.0))

    taps = [base + k for k in (-1, 0, 1, 2)]
    weights = [kernel(frac - k) for k in (-1, 0, 1, 2)]
    if a.get("exclude_outside", 0):
        weights = [np.where((i >= 0) & (i < n), w, 0.0) for i, w in zip(taps, weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    rank = _rank(t)
    fshape = [1] * rank
    fshape[ax] = o
    dt = np.dtype(t.dtype)
    acc = None
    for i, w in zip(taps, weights):
        part = np.take(t, np.clip(i, 0, n - 1), axis=ax) * w.astype(dt).reshape(fshape)
        acc = part if acc is None else acc + part
    return acc


@op("Resize", "Upsample")
def _resize(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    shape = _dims(t)
    rank = len(shape)
    mode = a.get("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if v < 10 or len(x) == 2:  # Upsample: (X, scales)
        scales = [float(s) for s in np.asarray(x[1]).reshape(-1)] if len(x) > 1 else list(a["scales"])
        sizes = [int(math.floor(n * s)) for n, s in zip(shape, scales)]
        ct = "asymmetric"
        a = dict(a, nearest_mode="floor")  # Upsample's nearest neighbour is the one at or before
    else:
        roi = x[1] if len(x) > 1 else None
        scales_in = x[2] if len(x) > 2 else None
        sizes_in = x[3] if len(x) > 3 else None
        if roi is not None and _count(roi) and a.get("coordinate_transformation_mode", "half_pixel") in (
                "tf_crop_and_resize", b"tf_crop_and_resize"):
            raise UnsupportedError("Resize with tf_crop_and_resize is not supported")
        axes = [_axis(i, rank) for i in a.get("axes", range(rank))]
        if sizes_in is not None and _count(sizes_in):
            want = dict(zip(axes, ints(sizes_in)))
            policy = a.get("keep_aspect_ratio_policy", "stretch")
            if policy != "stretch":
                pick = min if policy == "not_larger" else max
                r = pick(want[i] / shape[i] for i in axes)
                want = {i: int(math.floor(r * shape[i] + 0.5)) for i in axes}
                scales = [r if i in want else 1.0 for i in range(rank)]
            else:
                scales = [want[i] / shape[i] if i in want else 1.0 for i in range(rank)]
            sizes = [want.get(i, shape[i]) for i in range(rank)]
        else:
            given = dict(zip(axes, (float(v) for v in np.asarray(scales_in).reshape(-1))))
            scales = [given.get(i, 1.0) for i in range(rank)]
            sizes = [int(math.floor(n * sc)) for n, sc in zip(shape, scales)]
        ct = a.get("coordinate_transformation_mode", "half_pixel")
        ct = ct.decode() if isinstance(ct, bytes) else ct
    nearest_mode = a.get("nearest_mode", "round_prefer_floor")
    nearest_mode = nearest_mode.decode() if isinstance(nearest_mode, bytes) else nearest_mode
    for ax in range(rank):
        n, o, s = shape[ax], sizes[ax], scales[ax]
        if n == o:
            continue
        out = np.arange(o, dtype=np.float64)
        if ct == "half_pixel":
            src = (out + 0.5) / s - 0.5
        elif ct == "pytorch_half_pixel":
            src = (out + 0.5) / s - 0.5 if o > 1 else np.zeros(o)
        elif ct == "align_corners":
            # The unrounded output length n * s, as ONNX's reference scales it.
            span = n * s - 1
            src = out * (n - 1) / span if span > 0 else np.zeros(o)
        elif ct == "asymmetric":
            src = out / s
        elif ct == "half_pixel_symmetric":
            adj = o / (s * n)
            center = n / 2
            src = center * (1 - adj) + (out + 0.5) / s - 0.5
        else:
            raise UnsupportedError(f"Resize with coordinate_transformation_mode {ct!r} is not supported")
        if mode == "nearest":
            if nearest_mode == "round_prefer_floor":
                i = np.where(src - np.floor(src) == 0.5, np.floor(src), np.round(src))
            elif nearest_mode == "round_prefer_ceil":
                i = np.where(src - np.floor(src) == 0.5, np.ceil(src), np.round(src))
            elif nearest_mode == "floor":
                i = np.floor(src)
            else:
                i = np.ceil(src)
            i = np.clip(i, 0, n - 1).astype(np.int64)
            t = np.take(t, i, axis=ax)
        elif mode == "cubic":
            t = _cubic_axis(t, ax, src, n, o, a)
        elif mode == "linear":
            src = np.clip(src, 0, n - 1)
            lo = np.floor(src).astype(np.int64)
            hi = np.minimum(lo + 1, n - 1)
            f = (src - lo).astype(np.dtype(t.dtype))
            fshape = [1] * rank
            fshape[ax] = o
            f = f.reshape(fshape)
            t = np.take(t, lo, axis=ax) * (1 - f) + np.take(t, hi, axis=ax) * f
        else:
            raise UnsupportedError(f"Resize mode {mode!r} is not supported")
    return [t]
