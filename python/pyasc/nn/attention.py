"""Fused scaled dot-product attention with PyTorch's conventions.

``scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None)`` computes
``softmax(q @ k^T * scale + mask) @ v`` as one library kernel (a flash-attention loop: blocks of
query rows against blocks of keys with an online softmax), so the ``Lq x Lk`` score matrix is
never stored. Inside an operator, the same formula written out (``softmax(q @ k.T / c) @ v``,
with an optional additive mask or ``where(mask, scores, -inf)``) is rewritten into this kernel
when the intermediate scores are used nowhere else (``op_break_level`` 3).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Tuple

import numpy as np

from .. import _pyasc
from ..core import _eager
from ..core._axes import err
from ..errors import DTypeError, InvalidArgumentError, ShapeError

__all__ = ["scaled_dot_product_attention"]


def _is_float(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "f" or str(np.dtype(dtype)) == "bfloat16"


def _array(x: Any) -> Any:
    if x is None or _eager.traced(x) or isinstance(x, (np.ndarray, _pyasc.DeviceArray)):
        return x
    return np.asarray(x)


def _broadcast(name: str, shapes: Tuple[Tuple[int, ...], ...], what: str) -> Tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise err(ShapeError, f"{name}: {what} do not broadcast: {', '.join(str(s) for s in shapes)}") from None


def _traced(q: Any, k: Any, v: Any, m: Any = None, *, scale: float, causal: bool, kind: str) -> Any:
    ref = next(x for x in (q, k, v, m) if x is not None and _eager.traced(x))
    q, k, v = (_eager.lift(ref, x) for x in (q, k, v))
    if m is not None:
        m = _eager.lift(ref, m)
    return _pyasc.apply_attention(q, k, v, m, scale, causal, kind)


def scaled_dot_product_attention(q: Any, k: Any, v: Any, mask: Optional[Any] = None, is_causal: bool = False,
                                 scale: Optional[float] = None) -> Any:
    """``softmax(q @ k^T * scale + mask) @ v`` in one fused kernel (``torch``'s SDPA conventions).

    ``q`` is ``(..., Lq, D)``, ``k`` ``(..., Lk, D)`` and ``v`` ``(..., Lk, Dv)``; leading
    (batch, head) dimensions broadcast and the result is ``(..., Lq, Dv)``. ``scale`` defaults
    to ``1 / sqrt(D)``. ``mask`` broadcasts to ``(..., Lq, Lk)``: a boolean mask keeps the
    scores where it is ``True``, a float mask is added to them. ``is_causal`` keeps key ``j``
    for query ``i`` only when ``j <= i`` (the top-left aligned lower triangle), and the blocks
    above the diagonal are skipped. A query whose every key is masked gets NaN, as
    ``softmax(where(mask, s, -inf)) @ v`` does; with no keys at all (``Lk = 0``) the result is
    zeros. Computes in float32 for float32, bfloat16 and float16 inputs (16-bit results are
    rounded once where stored) and in float64 for float64 ones; the result has the inputs'
    promoted dtype. Works on NumPy arrays and on traced tensors inside operators.
    """
    name = "scaled_dot_product_attention"
    q, k, v, mask = _array(q), _array(k), _array(v), _array(mask)
    for a, role in ((q, "query"), (k, "key"), (v, "value")):
        if a.ndim < 2:
            raise err(ShapeError, f"{name}: the {role} must have rank 2 or more, not shape {tuple(a.shape)}")
        if not _is_float(a.dtype):
            raise err(DTypeError, f"{name}: the {role} has dtype {a.dtype}; attention takes float dtypes")
    qs, ks, vs = tuple(q.shape), tuple(k.shape), tuple(v.shape)
    if qs[-1] != ks[-1]:
        raise err(ShapeError, f"{name}: the query's last dimension ({qs[-1]}) differs from the key's ({ks[-1]}); "
                              f"query {qs}, key {ks}")
    if ks[-2] != vs[-2]:
        raise err(ShapeError, f"{name}: the key has {ks[-2]} positions but the value {vs[-2]}; key {ks}, value {vs}")
    batch = _broadcast(name, (qs[:-2], ks[:-2], vs[:-2]), "the leading dimensions of query, key and value")
    kind = "bool"
    if mask is not None:
        if mask.dtype != np.bool_ and not _is_float(mask.dtype):
            raise err(DTypeError, f"{name}: the mask has dtype {mask.dtype}; it must be boolean or float")
        kind = "bool" if mask.dtype == np.bool_ else "additive"
        scores = batch + (qs[-2], ks[-2])
        joint = _broadcast(name, (tuple(mask.shape), scores), "the mask and the scores")
        if joint[-2:] != scores[-2:]:
            raise err(ShapeError, f"{name}: the mask of shape {tuple(mask.shape)} does not broadcast to the "
                                  f"scores' shape {scores}")
    if not isinstance(is_causal, (bool, np.bool_)):
        raise err(InvalidArgumentError, f"{name}: is_causal must be a bool, not {is_causal!r}")
    if scale is None:
        s = 1.0 / math.sqrt(qs[-1]) if qs[-1] > 0 else 1.0
    elif isinstance(scale, numbers.Real) and not isinstance(scale, (bool, np.bool_)):
        s = float(scale)
    else:
        raise err(InvalidArgumentError, f"{name}: scale must be a real number or None, not {scale!r}")
    arrays = [q, k, v] if mask is None else [q, k, v, mask]
    return _eager.run(name, _traced, arrays, scale=s, causal=bool(is_causal), kind=kind)
