"""Reductions and matmul of pyasc operators over Dask arrays, combined in Dask's reduction tree.

Each chunk runs the operator's own kernels (its reduction, or its GEMM on a pair of blocks);
the per-chunk partials are combined by ``dask.array.reduction``. Float sums and products
are combined in float64 and cast to the operator's dtype at the end, as pyasc's own float32
sums accumulate in float64.
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

_REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


def _accumulator(name: str, dtype: np.dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if name in ("sum", "prod") and dtype.kind == "f":
        return np.dtype(np.float64)
    return dtype


class _Partial:
    """The operator on one set of blocks, its result reshaped to keep the reduced axes (size 1)."""

    def __init__(self, op: Any, axes: Tuple[int, ...], rank: int, acc: np.dtype):
        self.op, self.axes, self.rank, self.acc = op, axes, rank, acc

    def __call__(self, *blocks: Any) -> np.ndarray:
        shapes = [np.shape(b) for b in blocks if isinstance(b, np.ndarray)]
        full = np.broadcast_shapes(*shapes) if shapes else ()
        full = (1,) * (self.rank - len(full)) + tuple(full)
        keep = tuple(1 if i in self.axes else n for i, n in enumerate(full))
        return np.asarray(self.op(*blocks)).reshape(keep).astype(self.acc, copy=False)


class _Combine:
    def __init__(self, name: str, dtype: Any = None):
        self.fn, self.dtype = _REDUCE[name], dtype

    def __call__(self, x: Any, axis: Any = None, keepdims: bool = False, **_: Any) -> np.ndarray:
        r = self.fn(x, axis=axis, keepdims=keepdims)
        return r if self.dtype is None else np.asarray(r).astype(self.dtype)


def reduction(op: Any, arrays: Sequence[Any], rank: int, dtype: Any, s: Any) -> Any:
    """Run a graph that is one ``sum``/``max``/``min``/``prod`` of a pointwise expression, over chunks."""
    import dask.array as da

    from .dask_array import _blockwise, _index

    acc = _accumulator(s.reduce, dtype)
    idx = _index(rank, rank)
    partial = _blockwise(_Partial(op, s.reduce_axes, rank, acc), arrays, rank, acc,
                         {idx[i]: 1 for i in s.reduce_axes})
    return da.reduction(partial, chunk=_Combine(s.reduce), combine=_Combine(s.reduce),
                        aggregate=_Combine(s.reduce, np.dtype(dtype)), axis=s.reduce_axes, keepdims=s.keepdims,
                        dtype=np.dtype(dtype), meta=np.empty((0,) * (rank if s.keepdims else rank - len(
                            s.reduce_axes)), dtype=dtype))


class _BlockProduct:
    """pyasc's GEMM on one pair of blocks, with a unit axis for the contraction's block index."""

    def __init__(self, op: Any, acc: np.dtype):
        self.op, self.acc = op, acc

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(self.op(a, b))[:, None, :].astype(self.acc, copy=False)


def matmul(op: Any, a: Any, b: Any, dtype: Any) -> Any:
    """``op(a, b) == a @ b`` over 2-D Dask arrays: a GEMM per block pair, partial products summed."""
    import dask.array as da

    dtype = np.dtype(dtype)
    acc = _accumulator("sum", dtype)
    _, (a, b) = da.core.unify_chunks(a, "ij", b, "jk")
    parts = da.blockwise(_BlockProduct(op, acc), "ijk", a, "ij", b, "jk", adjust_chunks={"j": 1}, dtype=acc,
                         meta=np.empty((0, 0, 0), dtype=acc))
    return parts.sum(axis=1, dtype=acc).astype(dtype)
