"""Normalisations: batch, instance, layer, group, RMS, Lp, and local response."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from ._base import _axis, _dims, _rank, _same, op


@op("BatchNormalization")
def _batch_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale, bias, mean, var = x[:5]
    eps = a.get("epsilon", 1e-5)
    shape = (1, -1) + (1,) * (_rank(t) - 2)
    if a.get("training_mode", 0):
        # The batch's statistics normalise; the running ones are updated with momentum.
        axes = (0,) + tuple(range(2, _rank(t)))
        bm = np.mean(t, axis=axes)
        dev = t - bm.reshape(shape)
        bv = np.mean(dev * dev, axis=axes)
        mom = a.get("momentum", 0.9)
        y = dev / np.sqrt(bv.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)
        return [_same(y, t), _same(mean * mom + bm * (1 - mom), mean), _same(var * mom + bv * (1 - mom), var)]
    k = (scale / np.sqrt(var + eps)).reshape(shape)
    return [_same(t * k + (bias - mean * k.reshape(-1)).reshape(shape), t)]


@op("InstanceNormalization")
def _instance_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale, bias = x
    eps = a.get("epsilon", 1e-5)
    axes = tuple(range(2, _rank(t)))
    mu = np.mean(t, axis=axes, keepdims=True)
    d = t - mu
    var = np.mean(d * d, axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (_rank(t) - 2)
    return [d / np.sqrt(var + eps) * scale.reshape(shape) + bias.reshape(shape)]


@op("LayerNormalization")
def _layer_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale = x[0], x[1]
    bias = x[2] if len(x) > 2 else None
    axis = _axis(a.get("axis", -1), _rank(t))
    eps = a.get("epsilon", 1e-5)
    axes = tuple(range(axis, _rank(t)))
    mu = np.mean(t, axis=axes, keepdims=True)
    d = t - mu
    var = np.mean(d * d, axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    y = d * rstd * scale
    if bias is not None:
        y = y + bias
    return [y, mu, rstd]


@op("LRN")
def _lrn(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    size = a["size"]
    alpha, beta, bias = a.get("alpha", 1e-4), a.get("beta", 0.75), a.get("bias", 1.0)
    c = _dims(t)[1]
    sq = t * t
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    widths = [(0, 0), (lo, hi)] + [(0, 0)] * (_rank(t) - 2)
    padded = np.pad(sq, widths)
    acc = None
    for i in range(size):
        s = padded[:, i:i + c]
        acc = s if acc is None else acc + s
    return [t / (bias + (alpha / size) * acc) ** beta]


@op("LpNormalization")
def _lp_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, p = x[0], a.get("p", 2)
    axis = a.get("axis", -1)
    n = np.sum(np.abs(t), axis=axis, keepdims=True) if p == 1 else np.sqrt(np.sum(t * t, axis=axis, keepdims=True))
    zero = np.zeros((), np.dtype(t.dtype))
    return [np.where(n == 0, zero, t / np.where(n == 0, np.ones((), np.dtype(t.dtype)), n))]


@op("RMSNormalization")
def _rms_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale = x[0], x[1]
    axis = _axis(a.get("axis", -1), _rank(t))
    eps = a.get("epsilon", 1e-5)
    dt = np.dtype(t.dtype)
    w = t.astype(np.float32) if dt.itemsize < 4 else t
    ms = np.mean(w * w, axis=tuple(range(axis, _rank(t))), keepdims=True)
    return [(w / np.sqrt(ms + eps)).astype(dt) * scale]


@op("GroupNormalization")
def _group_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale, bias = x
    g = a["num_groups"]
    eps = a.get("epsilon", 1e-5)
    d = _dims(t)
    grouped = np.reshape(t, (d[0], g, -1))
    mu = np.mean(grouped, axis=2, keepdims=True)
    dev = grouped - mu
    var = np.mean(dev * dev, axis=2, keepdims=True)
    y = np.reshape(dev / np.sqrt(var + eps), d)
    shape = (1, -1) + (1,) * (len(d) - 2)
    return [y * np.reshape(scale, shape) + np.reshape(bias, shape)]
