"""QuantizeLinear and DequantizeLinear: per tensor, per axis and blocked."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from ...errors import UnsupportedError
from ._base import _axis, _count, _dims, _np_dtype, _rank, op


def _per_axis(p: Any, like: Any, axis: int, block: int) -> Any:
    """Return a scale or zero point shaped to broadcast against ``like``.

    One value for the whole tensor, one per index of ``axis``, or (with ``block``) one per
    block of ``block`` indices along it.
    """
    rank = _rank(like)
    if _rank(p) == 0 or _count(p) == 1 and _rank(p) <= 1 or rank == 0:
        return np.reshape(p, ())
    axis = _axis(axis, rank)
    if block:
        dims = _dims(p)
        e = np.expand_dims(p, axis + 1)
        full = dims[:axis + 1] + (block,) + dims[axis + 1:]
        p = np.reshape(np.broadcast_to(e, full), dims[:axis] + (dims[axis] * block,) + dims[axis + 1:])
        idx = [slice(None)] * rank
        idx[axis] = slice(0, _dims(like)[axis])
        return p[tuple(idx)]
    shape = [1] * rank
    shape[axis] = -1
    return np.reshape(p, shape)


@op("DequantizeLinear")
def _dequantize(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale = x[0], x[1]
    zp = x[2] if len(x) > 2 and x[2] is not None else None
    axis, block = a.get("axis", 1), a.get("block_size", 0)
    q = t.astype(np.float32)
    if zp is not None:
        q = q - _per_axis(zp, t, axis, block).astype(np.float32)
    out_dt = np.dtype(scale.dtype) if a.get("output_dtype", 0) == 0 else _np_dtype(a["output_dtype"])
    return [(q * _per_axis(scale, t, axis, block).astype(np.float32)).astype(out_dt)]


@op("QuantizeLinear")
def _quantize(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale = x[0], x[1]
    zp = x[2] if len(x) > 2 and x[2] is not None else None
    axis, block = a.get("axis", 1), a.get("block_size", 0)
    out_dt = np.dtype(zp.dtype) if zp is not None else (
        _np_dtype(a["output_dtype"]) if a.get("output_dtype", 0) else np.dtype(np.uint8))
    if out_dt.kind not in "iu":
        raise UnsupportedError(f"QuantizeLinear to {out_dt} is not supported")
    q = np.round(t.astype(np.float32) / _per_axis(scale, t, axis, block).astype(np.float32))
    if zp is not None:
        q = q + _per_axis(zp, t, axis, block).astype(np.float32)
    info = np.iinfo(out_dt)
    return [np.clip(q, float(info.min), float(info.max)).astype(out_dt)]
