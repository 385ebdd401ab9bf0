"""Summaries of one intermediate result: statistics, a histogram and a heatmap, as JSON-ready values.

Statistics are over the finite elements (NaN and infinities are counted apart), computed in
float64. Non-finite numbers never reach the JSON: they become ``None``.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np

#: Bins of every histogram.
HIST_BINS = 32
#: A 2-D result's heatmap has at most this many cells along each side (block means).
HEATMAP_SIDE = 64
#: Leading elements shown as values.
PREVIEW = 16


def _num(v: float) -> Optional[float]:
    """Return a float for JSON, or None when it is not finite."""
    v = float(v)
    return v if math.isfinite(v) else None


def _heatmap(values: np.ndarray, finite: np.ndarray) -> Dict[str, Any]:
    """Block means of a 2-D array on a grid of at most HEATMAP_SIDE cells a side."""
    h, w = values.shape
    bh, bw = max(1, math.ceil(h / HEATMAP_SIDE)), max(1, math.ceil(w / HEATMAP_SIDE))
    gh, gw = math.ceil(h / bh), math.ceil(w / bw)
    total = np.zeros((gh * bh, gw * bw))
    count = np.zeros((gh * bh, gw * bw))
    total[:h, :w] = np.where(finite, values, 0.0)
    count[:h, :w] = finite
    total = total.reshape(gh, bh, gw, bw).sum(axis=(1, 3))
    count = count.reshape(gh, bh, gw, bw).sum(axis=(1, 3))
    means = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    cells: List[List[Optional[float]]] = [
        [float(means[i, j]) if count[i, j] > 0 else None for j in range(gw)] for i in range(gh)
    ]
    return {"rows": gh, "cols": gw, "block": [bh, bw], "cells": cells}


def summarize(arr: np.ndarray, dtype: str) -> Dict[str, Any]:
    """Shape, dtype, min/max/mean/std, NaN and Inf counts, histogram, heatmap (2-D) and a preview."""
    values = np.asarray(arr, dtype=np.float64)
    flat = values.reshape(-1)
    finite_mask = np.isfinite(values)
    good = flat[finite_mask.reshape(-1)]
    nan = int(np.isnan(flat).sum())
    inf = int(np.isinf(flat).sum())
    out: Dict[str, Any] = {"shape": list(arr.shape), "dtype": dtype, "size": int(flat.size),
                           "nan": nan, "inf": inf, "finite": int(good.size)}
    if good.size:
        out.update(min=_num(good.min()), max=_num(good.max()), mean=_num(good.mean()), std=_num(good.std()))
        counts, edges = np.histogram(good, bins=HIST_BINS)
        out["histogram"] = {"counts": counts.tolist(), "edges": [_num(e) for e in edges]}
    else:
        out.update(min=None, max=None, mean=None, std=None)
        out["histogram"] = {"counts": [], "edges": []}
    out["heatmap"] = _heatmap(values, finite_mask) if values.ndim == 2 and values.size else None
    out["preview"] = [_num(v) for v in flat[:PREVIEW]]
    return out
