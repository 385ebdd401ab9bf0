"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ._base import _same, op


def _nll(logp: Any, target: Any, weight: Optional[Any], a: Dict[str, Any]) -> Any:
    ignore = a.get("ignore_index")
    tgt = target if ignore is None else np.where(target == ignore, np.zeros((), np.dtype(target.dtype)), target)
    picked = np.take_along_axis(logp, np.expand_dims(tgt, 1), axis=1)
    picked = np.squeeze(picked, 1)
    dt = np.dtype(logp.dtype)
    w = None
    if weight is not None:
        w = np.take(weight, tgt)
    if ignore is not None:
        keep = (target != ignore).astype(dt)
        w = keep if w is None else w * keep
    loss = -picked if w is None else -picked * w
    red = a.get("reduction", "mean")
    if red == "none":
        return loss
    if red == "sum":
        return np.sum(loss)
    if w is None:
        return np.mean(loss)
    return np.sum(loss) / np.sum(w)


@op("NegativeLogLikelihoodLoss")
def _nll_loss(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [_same(_nll(x[0], x[1], x[2] if len(x) > 2 else None, a), x[0])]


@op("SoftmaxCrossEntropyLoss")
def _sce_loss(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    m = np.max(t, axis=1, keepdims=True)
    logp = (t - m) - np.log(np.sum(np.exp(t - m), axis=1, keepdims=True))
    return [_same(_nll(logp, x[1], x[2] if len(x) > 2 else None, a), t), logp]
