"""``nanmean``/``nanmax``/``nanmin`` of a pointwise expression in Dask's reduction tree.

The per-chunk partials come from the companion operator of :mod:`pyasc.dask._moments` (traced
by :mod:`pyasc.core._moment_trace`); ``nanvar``/``nanstd`` share the variance's tree there, with a
count per output element. Here:

* ``nanmean``: each chunk gives, per output element, how many of its values are not NaN and
  their float64 sum; the tree adds both and the end divides them (NaN where every value is
  NaN, as pyasc's operator gives without a warning), cast to the operator's dtype;
* ``nanmax``/``nanmin``: each chunk gives its own NaN-skipping extreme in the operand's dtype
  (NaN where the chunk has only NaN there); the tree keeps the extreme of the values that are
  not NaN, NaN where all are.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

__all__ = ["SUMS", "tree"]

#: Per-chunk ``nanmean`` partials: the count of values that are not NaN and their sum (float64).
SUMS = np.dtype([("n", "f8"), ("s", "f8")])


def _extents(blocks: Any, rank: int, axes: Tuple[int, ...]) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    from ._moments import _block_extents

    full = _block_extents(blocks, rank)
    return full, tuple(1 if i in axes else n for i, n in enumerate(full))


class _MeanPartial:
    """One set of blocks' count of values that are not NaN and their sum, the reduced axes kept as 1."""

    def __init__(self, op: Any, axes: Tuple[int, ...], rank: int):
        self.op, self.axes, self.rank = op, axes, rank

    def __call__(self, *blocks: Any) -> np.ndarray:
        from ._moments import partials_operator

        full, keep = _extents(blocks, self.rank, self.axes)
        out = np.zeros(keep, SUMS)
        if 0 in full:  # an empty chunk adds nothing
            return out
        n, s = partials_operator(self.op)(*blocks)
        out["n"], out["s"] = np.asarray(n).reshape(keep), np.asarray(s).reshape(keep)
        return out


def _mean_combine(x: np.ndarray, axis: Any = None, keepdims: bool = True, computing_meta: bool = False,
                  **_: Any) -> np.ndarray:
    """Add up the counts and the sums along ``axis``."""
    if computing_meta:  # Dask's probe of the result type: the partials' fields are no array type of their own
        return np.empty((0,) * np.ndim(x), np.float64)
    n = x["n"].sum(axis=axis, keepdims=keepdims)
    out = np.empty(n.shape, SUMS)
    out["n"], out["s"] = n, x["s"].sum(axis=axis, keepdims=keepdims)
    return out


class _MeanAggregate:
    """The sum over the count in the result dtype (NaN for a count of 0)."""

    def __init__(self, dtype: Any):
        self.dtype = np.dtype(dtype)

    def __call__(self, x: np.ndarray, axis: Any = None, keepdims: bool = False, **_: Any) -> np.ndarray:
        t = _mean_combine(x, axis, keepdims)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (t["s"] / t["n"]).astype(self.dtype)


class _ExtremePartial:
    """One set of blocks' NaN-skipping extreme, the reduced axes kept as 1 (NaN for an empty chunk)."""

    def __init__(self, op: Any, axes: Tuple[int, ...], rank: int, dtype: Any):
        self.op, self.axes, self.rank, self.dtype = op, axes, rank, np.dtype(dtype)

    def __call__(self, *blocks: Any) -> np.ndarray:
        from ._moments import partials_operator

        full, keep = _extents(blocks, self.rank, self.axes)
        if 0 in full:
            return np.full(keep, np.nan, self.dtype)
        return np.asarray(partials_operator(self.op)(*blocks)).reshape(keep).astype(self.dtype, copy=False)


class _ExtremeCombine:
    """The extreme along ``axis`` of the partials that are not NaN; NaN where every partial is NaN."""

    def __init__(self, high: bool, dtype: Any):
        self.high, self.dtype = high, np.dtype(dtype)

    def __call__(self, x: np.ndarray, axis: Any = None, keepdims: bool = True, computing_meta: bool = False,
                 **_: Any) -> np.ndarray:
        if computing_meta:
            return np.empty((0,) * np.ndim(x), self.dtype)
        nan = np.isnan(x)
        filled = np.where(nan, -np.inf if self.high else np.inf, x)
        best = (np.max if self.high else np.min)(filled, axis=axis, keepdims=keepdims)
        return np.where(nan.all(axis=axis, keepdims=keepdims), np.nan, best).astype(self.dtype)


def tree(op: Any, arrays: Any, rank: int, dtype: Any, call: Any, axes: Tuple[int, ...]) -> Any:
    """Return the lazy tree reduction of one ``nanmean``/``nanmax``/``nanmin`` call (``call.kind``)."""
    import dask.array as da

    from . import _blockwise, _index

    idx = _index(rank, rank)
    adjust = {idx[i]: 1 for i in axes}
    token = f"pyasc-{call.kind}-partials"
    dtype = np.dtype(dtype)
    if call.kind == "nanmean":
        partial = _blockwise(_MeanPartial(op, axes, rank), arrays, rank, SUMS, adjust, token=token)
        chunk: Any = _mean_combine
        aggregate: Any = _MeanAggregate(dtype)
    else:
        high = call.kind == "nanmax"
        partial = _blockwise(_ExtremePartial(op, axes, rank, dtype), arrays, rank, dtype, adjust, token=token)
        chunk = _ExtremeCombine(high, dtype)
        aggregate = chunk
    out_rank = rank if call.keepdims else rank - len(axes)
    return da.reduction(partial, chunk=chunk, combine=chunk, aggregate=aggregate, name=f"pyasc-{call.kind}",
                        axis=axes, keepdims=call.keepdims, dtype=dtype, meta=np.empty((0,) * out_rank, dtype))
