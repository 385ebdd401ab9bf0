"""Attention (opset 23 onwards): 3-D and 4-D inputs, caches, grouped heads, masks, softcap."""

from __future__ import annotations

import math
from typing import Any, Dict, List

import numpy as np

from ._base import _dims, _np_dtype, _rank, op


def _heads(t: Any, n: int) -> Any:
    """``(B, S, H * D)`` as ``(B, H, S, D)``."""
    b, s, _ = _dims(t)
    return np.transpose(np.reshape(t, (b, s, n, -1)), (0, 2, 1, 3))


def _bias_of(mask: Any, dt: np.dtype) -> Any:
    """Return an attention mask as an additive bias: ``0``/``-inf`` for a boolean one, else itself."""
    if np.dtype(mask.dtype) == np.bool_:
        return np.where(mask, np.zeros((), dt), np.full((), -np.inf, dt))
    return mask.astype(dt)


@op("Attention")
def _attention(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    q, k, val = x[0], x[1], x[2]
    get = lambda i: x[i] if len(x) > i else None  # noqa: E731
    mask, past_k, past_v, nonpad = get(3), get(4), get(5), get(6)
    three = _rank(q) == 3
    if three:
        batch, sq = _dims(q)[:2]
        q, k, val = _heads(q, a["q_num_heads"]), _heads(k, a["kv_num_heads"]), _heads(val, a["kv_num_heads"])
    dt = np.dtype(q.dtype)
    scale = a.get("scale")
    root = dt.type(math.sqrt(scale if scale is not None else 1 / math.sqrt(_dims(q)[3])))
    k = np.concatenate([past_k, k], axis=2) if past_k is not None else k
    val = np.concatenate([past_v, val], axis=2) if past_v is not None else val
    present_k, present_v = k, val
    lq, lk = _dims(q)[2], _dims(k)[2]
    neg = np.full((), -np.inf, dt)
    bias: Any = None
    if mask is not None:
        short = lk - _dims(mask)[-1]
        if short > 0:
            fill = False if np.dtype(mask.dtype) == np.bool_ else -np.inf
            mask = np.pad(mask, [(0, 0)] * (_rank(mask) - 1) + [(0, short)], constant_values=fill)
        bias = _bias_of(mask, dt)
    i = np.arange(lq).reshape(lq, 1)
    j = np.arange(lk).reshape(1, lk)
    batch_n = _dims(q)[0]
    if nonpad is not None and past_k is None:
        offset: Any = (np.asarray(nonpad).reshape(-1) - lq).reshape(-1, 1, 1, 1)
    else:
        offset = _dims(past_k)[2] if past_k is not None else 0
    frontier = i + offset  # (q, 1) or (batch, 1, q, 1)
    allowed = None
    if a.get("is_causal", 0):
        allowed = j <= frontier
    left, right = a.get("left_window_size", -1), a.get("right_window_size", -1)
    if left >= 0 or right >= 0:
        diff = frontier - j
        win = np.ones(np.shape(diff), bool)
        if left >= 0:
            win = win & (diff <= left)
        if right >= 0:
            win = win & (-diff <= right)
        allowed = win if allowed is None else allowed & win
    if nonpad is not None:
        pad_ok = (np.arange(lk) < np.asarray(nonpad).reshape(-1, 1)).reshape(batch_n, 1, 1, lk)
        allowed = pad_ok if allowed is None else allowed & pad_ok
    if allowed is not None:
        extra = np.where(allowed, dt.type(0), dt.type(-np.inf)).astype(dt)
        bias = extra if bias is None else bias + extra
    hq, hk = _dims(q)[1], _dims(k)[1]
    if hq != hk and hq % hk == 0:
        reps = hq // hk
        b_, _, n_, d_ = _dims(k)
        k = np.reshape(np.broadcast_to(np.expand_dims(k, 2), (b_, hk, reps, n_, d_)), (b_, hq, n_, d_))
        dv = _dims(val)[3]
        val = np.reshape(np.broadcast_to(np.expand_dims(val, 2), (b_, hk, reps, n_, dv)), (b_, hq, n_, dv))
    scores = np.matmul(q * root, np.swapaxes(k * root, -1, -2))
    softcap = a.get("softcap", 0.0)
    if softcap and softcap > 0:
        scores = np.tanh(scores / dt.type(softcap)) * dt.type(softcap)
    mode = a.get("qk_matmul_output_mode", 0)
    qk_out = scores
    biased = scores + bias if bias is not None else scores
    if mode == 2:
        qk_out = biased
    if a.get("softmax_precision"):
        biased = biased.astype(_np_dtype(a["softmax_precision"]))
    m = np.max(biased, axis=-1, keepdims=True)
    m = np.where(m == -np.inf, np.zeros((), np.dtype(biased.dtype)), m)
    e = np.exp(biased - m)
    total = np.sum(e, axis=-1, keepdims=True)
    total = np.where(total == 0, np.ones((), np.dtype(total.dtype)), total)
    p = e / total
    if bias is not None:
        masked_row = np.max(bias, axis=-1, keepdims=True) == neg
        p = np.where(masked_row, np.zeros((), np.dtype(p.dtype)), p)
    if mode == 3:
        qk_out = p
    out = np.matmul(p.astype(dt), val)
    if three:
        out = np.reshape(np.transpose(out, (0, 2, 1, 3)), (batch, sq, -1))
    return [out, present_k, present_v, qk_out.astype(dt)]
