"""Reductions and matmul of pyasc operators over Dask arrays, combined in Dask's reduction tree.

Each chunk runs the operator's own kernels (its reduction, or its GEMM on a pair of blocks);
the per-chunk partials are combined by ``dask.array.reduction``. Float sums and products
are combined in float64 and cast to the operator's dtype at the end, as pyasc's own float32
sums accumulate in float64. A mean (a sum divided by the count it sums) runs per chunk too:
each block's mean times its count is its sum, and the float64 totals of sums and counts are
divided at the end.
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


def _extents(blocks: Sequence[Any], axes: Tuple[int, ...], rank: int) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """Return the blocks' broadcast shape (``rank`` axes) and that shape with the reduced axes set to 1."""
    shapes = [np.shape(b) for b in blocks if isinstance(b, np.ndarray)]
    full = np.broadcast_shapes(*shapes) if shapes else ()
    full = (1,) * (rank - len(full)) + tuple(full)
    return full, tuple(1 if i in axes else n for i, n in enumerate(full))


class _Partial:
    """The operator on one set of blocks, its result reshaped to keep the reduced axes (size 1).

    For a mean (``weighted``) the block's mean is multiplied by the number of values it
    averaged, giving the block's sum in float64 for the tree to add up.
    """

    def __init__(self, op: Any, axes: Tuple[int, ...], rank: int, acc: np.dtype, weighted: bool = False):
        self.op, self.axes, self.rank, self.acc, self.weighted = op, axes, rank, acc, weighted

    def __call__(self, *blocks: Any) -> np.ndarray:
        full, keep = _extents(blocks, self.axes, self.rank)
        r = np.asarray(self.op(*blocks)).reshape(keep).astype(self.acc, copy=False)
        if self.weighted:
            r = r * float(np.prod([full[i] for i in self.axes]))
        return r


class _Count:
    """The number of values a block contributes to each position of a mean (float64)."""

    def __init__(self, axes: Tuple[int, ...], rank: int):
        self.axes, self.rank = axes, rank

    def __call__(self, *blocks: Any) -> np.ndarray:
        full, keep = _extents(blocks, self.axes, self.rank)
        return np.full(keep, float(np.prod([full[i] for i in self.axes])))


class _Combine:
    def __init__(self, name: str, dtype: Any = None):
        self.fn, self.dtype = _REDUCE[name], dtype

    def __call__(self, x: Any, axis: Any = None, keepdims: bool = False, **_: Any) -> np.ndarray:
        r = self.fn(x, axis=axis, keepdims=keepdims)
        return r if self.dtype is None else np.asarray(r).astype(self.dtype)


def reduction(op: Any, arrays: Sequence[Any], rank: int, dtype: Any, s: Any) -> Any:
    """Run a graph that is one ``sum``/``max``/``min``/``prod``, or a mean, of a pointwise expression over chunks."""
    import dask.array as da

    from . import _blockwise, _index

    mean = s.reduce == "mean"
    acc = np.dtype(np.float64) if mean else _accumulator(s.reduce, dtype)
    idx = _index(rank, rank)
    partial = _blockwise(_Partial(op, s.reduce_axes, rank, acc, weighted=mean), arrays, rank, acc,
                         {idx[i]: 1 for i in s.reduce_axes})
    out_rank = rank if s.keepdims else rank - len(s.reduce_axes)
    if mean:
        # Block sums and block counts, each added up in the tree; the counts come from the blocks'
        # extents, so chunks whose sizes Dask learns only when computing work too.
        counts = _blockwise(_Count(s.reduce_axes, rank), arrays, rank, np.float64,
                            {idx[i]: 1 for i in s.reduce_axes})
        total, n = (da.reduction(p, chunk=_Combine("sum"), combine=_Combine("sum"), aggregate=_Combine("sum"),
                                 axis=s.reduce_axes, keepdims=s.keepdims, dtype=np.float64,
                                 meta=np.empty((0,) * out_rank, np.float64)) for p in (partial, counts))
        return (total / n).astype(np.dtype(dtype))
    return da.reduction(partial, chunk=_Combine(s.reduce), combine=_Combine(s.reduce),
                        aggregate=_Combine(s.reduce, np.dtype(dtype)), axis=s.reduce_axes, keepdims=s.keepdims,
                        dtype=np.dtype(dtype), meta=np.empty((0,) * out_rank, dtype=dtype))


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
