"""Variance, standard deviation, argmax/argmin and NaN-skipping reductions of a pointwise expression in Dask's tree.

``np.var(x * 2 + y, axis=0)`` traces into sums, differences and products that cannot be read
off the graph chunk by chunk, so the function is traced again in two companion operators
(see :mod:`pyasc.core._moment_trace`): one returns the call's operand, whose graph must be
pointwise on the arguments' full shape (no captured arrays), the other returns the
per-chunk partials, and runs on every chunk with pyasc's kernels:

* ``var``/``std``: the chunk's count, mean and M2 (sum of squared deviations from the chunk's
  mean) in float64. Partials combine by Chan et al.'s parallel formula, ``n = sum n_i``,
  ``mean = sum n_i mean_i / n``, ``M2 = sum M2_i + sum n_i (mean_i - mean)**2``, and the
  aggregate divides M2 by ``n - ddof`` as NumPy does (inf or nan where ``ddof >= n``), takes the
  square root for ``std`` and casts to the operator's dtype.
* ``nanvar``/``nanstd``: the same partials of the values that are not NaN, the count per output
  element; the aggregate gives NaN where ``n - ddof <= 0``, as ``np.nanvar`` does.
* ``nanmean``/``nanmax``/``nanmin``: see :mod:`pyasc.dask._nan`.
* ``argmax``/``argmin``: the chunk's extreme value and its index, made global with the chunk's
  offsets (lazy ``arange`` arrays chunked like the arguments); over every axis the index is the
  C-order flat one, which the partials compute even for n-d arrays, where pyasc's operator on
  NumPy arrays needs an axis. Partials combine by the extreme value, NaN first (NumPy's rule),
  then the smallest index, so ties across chunk boundaries give NumPy's first index.

The companions are built once per process from the user's operator (which pickles to workers
as it always does); the user's operator and its cache are not touched.
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from ..core import _moment_trace

__all__ = ["plan"]

_LOCK = threading.Lock()
_COMPANIONS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_local = threading.local()
#: Per-chunk variance partials, all float64.
MOMENTS = np.dtype([("n", "f8"), ("mean", "f8"), ("m2", "f8")])


def _make(op: Any, mode: str) -> Any:
    """Return a plain operator of ``op``'s function traced in ``mode`` (the call it made is kept per thread)."""
    from .. import _pyasc

    func = op.__wrapped__

    @functools.wraps(func)
    def traced(*args: Any) -> Any:
        result, call = _moment_trace.run(mode, func, args)
        _local.call = call
        return result

    if hasattr(op, "_make"):  # a geared operator: its unpadded companion
        return op._make(traced, False)
    opts = {**op.options, "fused": False}
    return _pyasc.Operator(traced, op.__name__, opts["device_type"], opts["op_break_level"], opts)


def partials_operator(op: Any) -> Any:
    """Return the operator that gives ``op``'s per-chunk partials, built once per process."""
    with _LOCK:
        comp = _COMPANIONS.get(op)
    if comp is None:
        comp = _make(op, "partials")
        with _LOCK:
            comp = _COMPANIONS.setdefault(op, comp)
    return comp


def _full_shape(shapes: Sequence[Tuple[int, ...]], rank: int) -> Tuple[int, ...]:
    full = np.broadcast_shapes(*shapes) if shapes else ()
    return (1,) * (rank - len(full)) + tuple(full)


def _block_extents(blocks: Sequence[Any], rank: int) -> Tuple[int, ...]:
    return _full_shape([np.shape(b) for b in blocks if isinstance(b, np.ndarray)], rank)


class _VarPartial:
    """One set of blocks' count, mean and M2 (float64), the reduced axes kept as 1.

    ``var``/``std`` count the chunk's extents; ``nanvar``/``nanstd`` partials bring their own
    count per output element (the values that are not NaN).
    """

    def __init__(self, op: Any, axes: Tuple[int, ...], rank: int):
        self.op, self.axes, self.rank = op, axes, rank

    def __call__(self, *blocks: Any) -> np.ndarray:
        full = _block_extents(blocks, self.rank)
        keep = tuple(1 if i in self.axes else n for i, n in enumerate(full))
        out = np.zeros(keep, MOMENTS)
        if 0 in full:  # an empty chunk: a count of 0, which the tree skips
            return out
        parts = partials_operator(self.op)(*blocks)
        if len(parts) == 3:
            n, mean, m2 = parts
            out["n"] = np.asarray(n).reshape(keep)
        else:
            mean, m2 = parts
            out["n"] = float(np.prod([full[i] for i in self.axes]))
        out["mean"] = np.asarray(mean).reshape(keep)
        out["m2"] = np.asarray(m2).reshape(keep)
        return out


def _var_combine(x: np.ndarray, axis: Any = None, keepdims: bool = True, computing_meta: bool = False,
                 **_: Any) -> np.ndarray:
    """Chan et al.'s parallel formula over the partials along ``axis``."""
    if computing_meta:  # Dask's probe of the result type: the partials' fields are no array type of their own
        return np.empty((0,) * np.ndim(x), np.float64)
    n_i = x["n"]
    some = n_i > 0
    mean_i = np.where(some, x["mean"], 0.0)
    n = n_i.sum(axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (n_i * mean_i).sum(axis=axis, keepdims=True) / n
        spread = np.where(some, n_i * (mean_i - mean) ** 2, 0.0)
    m2 = np.where(some, x["m2"], 0.0).sum(axis=axis, keepdims=True) + spread.sum(axis=axis, keepdims=True)
    out = np.empty(n.shape, MOMENTS)
    out["n"], out["mean"], out["m2"] = n, mean, m2
    return out if keepdims else out.squeeze(axis)


class _VarAggregate:
    """M2 / (n - ddof) (NumPy's divisor, never below 0), its square root for std, in the result dtype.

    With ``nan_dof`` (``nanvar``/``nanstd``) the result is NaN where ``n - ddof <= 0``.
    """

    def __init__(self, root: bool, ddof: Any, dtype: Any, nan_dof: bool = False):
        self.root, self.ddof, self.dtype, self.nan_dof = root, ddof, np.dtype(dtype), nan_dof

    def __call__(self, x: np.ndarray, axis: Any = None, keepdims: bool = False, **_: Any) -> np.ndarray:
        t = _var_combine(x, axis, keepdims)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = t["m2"] / np.maximum(t["n"] - self.ddof, 0)
            if self.nan_dof:
                v = np.where(t["n"] - self.ddof <= 0, np.nan, v)
            if self.root:
                v = np.sqrt(v)
        return v.astype(self.dtype)


def _loser(dtype: np.dtype, high: bool) -> Any:
    """Return the value of ``dtype`` that every other value beats (the lowest for argmax)."""
    if dtype.kind == "f":
        return -np.inf if high else np.inf
    if dtype.kind == "b":
        return not high
    info = np.iinfo(dtype)
    return info.min if high else info.max


class _ArgPartial:
    """One set of blocks' extreme value and its global index, the reduced axes kept as 1.

    One reduced axis: the index along it plus the block's offset. Every axis (``axis=None``):
    the block's C-order flat index, unravelled in the block, shifted by the block's offsets and
    ravelled in the whole array's shape. The offsets are the first values of the ``arange``
    blocks that follow the operator's arguments, one per reduced axis.
    """

    def __init__(self, op: Any, axes: Tuple[int, ...], rank: int, nargs: int, value_dtype: Any, high: bool,
                 shape: Tuple[int, ...]):
        self.op, self.axes, self.rank, self.nargs, self.high, self.shape = op, axes, rank, nargs, high, shape
        self.dtype = np.dtype([("v", np.dtype(value_dtype)), ("i", "i8")])

    def __call__(self, *blocks: Any) -> np.ndarray:
        args, offsets = blocks[:self.nargs], [int(b[0]) if len(b) else 0 for b in blocks[self.nargs:]]
        full = _block_extents(args, self.rank)
        keep = tuple(1 if i in self.axes else n for i, n in enumerate(full))
        out = np.empty(keep, self.dtype)
        if any(full[a] == 0 for a in self.axes):  # an empty chunk: a value that never wins, at the largest index
            out["v"], out["i"] = _loser(self.dtype["v"], self.high), np.iinfo(np.int64).max
            return out
        local, value = partials_operator(self.op)(*args)
        local = np.asarray(local).reshape(keep).astype(np.int64)
        out["v"] = np.asarray(value).reshape(keep)
        if len(self.axes) == 1:
            out["i"] = local + offsets[0]
        else:
            at = np.unravel_index(local, [full[a] for a in self.axes])
            out["i"] = np.ravel_multi_index(tuple(p + o for p, o in zip(at, offsets)),
                                            [self.shape[a] for a in self.axes])
        return out


class _ArgCombine:
    """The extreme value along ``axis`` (NaN first, as NumPy) and the smallest index holding it."""

    def __init__(self, high: bool, dtype: Any = None):
        self.high, self.dtype = high, None if dtype is None else np.dtype(dtype)

    def __call__(self, x: np.ndarray, axis: Any = None, keepdims: bool = True, computing_meta: bool = False,
                 **_: Any) -> np.ndarray:
        if computing_meta:  # Dask's probe of the result type (see _var_combine)
            return np.empty((0,) * np.ndim(x), np.float64)
        v, i = x["v"], x["i"]
        best = (np.max if self.high else np.min)(v, axis=axis, keepdims=True)
        hit = v == best
        if v.dtype.kind in "fc":
            hit |= np.isnan(v)  # the extreme is NaN exactly where some value is NaN
        first = np.where(hit, i, np.iinfo(np.int64).max).min(axis=axis, keepdims=True)
        if self.dtype is not None:
            r = first.astype(self.dtype)
            return r if keepdims else r.squeeze(axis)
        out = np.empty(best.shape, x.dtype)
        out["v"], out["i"] = best, first
        return out if keepdims else out.squeeze(axis)


def _operand_call(op: Any, probe: Sequence[Any]) -> Tuple[Any, Any]:
    """Trace a fresh operand companion on the stand-ins: its graph and the call it recorded."""
    _local.call = None
    compiled = _make(op, "operand").get_compiled_op(*probe)
    return compiled, _local.call


def plan(op: Any, arrays: Sequence[Any], rank: int, probe: Sequence[Any], dtype: Any, nargs: int) -> Optional[Any]:
    """Return the lazy tree reduction of an operator that is one var/std/argmax/argmin of a pointwise expression.

    Also one NaN-skipping reduction (``nanmean``/``nanvar``/``nanstd``/``nanmax``/``nanmin``).

    None when the operator is not one (the caller rechunks the reduced axes instead).
    """
    from . import _graph as graph
    from . import is_dask_array

    if rank == 0 or not any(is_dask_array(a) for a in arrays):
        return None
    try:
        compiled, call = _operand_call(op, probe)
        if call is None or graph.classify(compiled.graph_ir(True), rank, nargs).kind != "pointwise":
            return None
        full = _full_shape([p.shape for p in probe if isinstance(p, np.ndarray)], rank)
        if call.shape != full:
            return None  # the operand does not span the arguments' broadcast shape
        partials = partials_operator(op).get_compiled_op(*probe)
        value_dtype = partials.outputs[1][1] if call.kind in ("argmax", "argmin") else None
    except Exception:  # the function is not one such call of a pointwise expression
        return None
    axes = tuple(range(rank)) if call.axes is None else tuple(call.axes)
    dask_arrays = [a for a in arrays if is_dask_array(a)]
    if call.kind in ("var", "std", "nanvar", "nanstd"):
        return _variance(op, arrays, rank, dtype, call, axes)
    unknown = any(np.isnan(c) for a in dask_arrays for axis_chunks in a.chunks for c in axis_chunks)
    shape = None if unknown else _full_shape([a.shape for a in dask_arrays], rank)
    if call.kind != "nanmean" and shape is not None and any(shape[a] == 0 for a in axes):
        return None  # an extreme of nothing: NumPy's error for an empty sequence comes from the operator itself
    if call.kind in _moment_trace.NAN_KINDS:
        from ._nan import tree

        return tree(op, arrays, rank, dtype, call, axes)
    if shape is None:
        return None  # unknown chunk sizes: no offsets to make the indices global
    return _arg(op, arrays, rank, dtype, call, axes, nargs, value_dtype, shape)


def plan_flat_arg(op: Any, arrays: Sequence[Any], rank: int) -> Optional[Any]:
    """Return the tree reduction of an ``argmax``/``argmin`` over every axis of an n-d pointwise expression.

    pyasc's own operator cannot trace that call (it needs a flattening reshape); its per-chunk
    partials can. None for any other function.
    """
    from . import _compiled

    try:
        _, probe = _compiled(_make(op, "operand"), arrays)
        _, call = _operand_call(op, probe)
        if call is None or call.kind not in ("argmax", "argmin") or call.axes is not None:
            return None
        dtype = partials_operator(op).get_compiled_op(*probe).outputs[0][1]
    except Exception:  # not such a call: the caller raises its own error
        return None
    return plan(op, arrays, rank, probe, dtype, len(arrays))


def _variance(op: Any, arrays: Sequence[Any], rank: int, dtype: Any, call: Any, axes: Tuple[int, ...]) -> Any:
    import dask.array as da

    from . import _blockwise, _index

    idx = _index(rank, rank)
    partial = _blockwise(_VarPartial(op, axes, rank), arrays, rank, MOMENTS, {idx[i]: 1 for i in axes},
                         token=f"pyasc-{call.kind}-partials")
    out_rank = rank if call.keepdims else rank - len(axes)
    return da.reduction(partial, chunk=_var_combine, combine=_var_combine, name=f"pyasc-{call.kind}",
                        aggregate=_VarAggregate(call.kind.endswith("std"), call.ddof, dtype,
                                                call.kind.startswith("nan")), axis=axes,
                        keepdims=call.keepdims, dtype=np.dtype(dtype), meta=np.empty((0,) * out_rank, dtype))


def _arg(op: Any, arrays: Sequence[Any], rank: int, dtype: Any, call: Any, axes: Tuple[int, ...], nargs: int,
         value_dtype: Any, shape: Tuple[int, ...]) -> Any:
    import dask.array as da

    from . import _check_broadcast, _index, _meta, is_dask_array

    _check_broadcast([a.shape for a in arrays if is_dask_array(a)])
    idx = _index(rank, rank)
    pairs: list = []
    for a in arrays:
        pairs += [a, _index(a.ndim, rank)] if is_dask_array(a) else [a, None]
    for axis in axes:
        # The global index along the axis, chunked like an array that spans it.
        chunks = next((a.chunks[axis - (rank - a.ndim)] for a in arrays if is_dask_array(a)
                       and a.ndim >= rank - axis and a.shape[axis - (rank - a.ndim)] == shape[axis]), (shape[axis],))
        pairs += [da.arange(shape[axis], chunks=(chunks,)), idx[axis]]
    high = call.kind == "argmax"
    part = _ArgPartial(op, axes, rank, nargs, value_dtype, high, shape)
    partial = da.blockwise(part, idx, *pairs, dtype=part.dtype, meta=_meta(part.dtype, rank),
                           adjust_chunks={idx[a]: 1 for a in axes}, align_arrays=True,
                           token=f"pyasc-{call.kind}-partials")
    out_rank = rank if call.keepdims else rank - len(axes)
    return da.reduction(partial, chunk=_ArgCombine(high), combine=_ArgCombine(high), name=f"pyasc-{call.kind}",
                        aggregate=_ArgCombine(high, dtype), axis=axes, keepdims=call.keepdims,
                        dtype=np.dtype(dtype), meta=np.empty((0,) * out_rank, dtype))
