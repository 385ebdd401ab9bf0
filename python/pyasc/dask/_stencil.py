"""Stencil operators on Dask arrays: ``map_overlap`` with the operator's halo and boundary mode.

Every block is extended by ``depth = k * halo`` cells of its neighbours (``k`` steps per halo
exchange), the operator runs ``k`` steps on the extended block with its own boundary mode, and
the extension is cut off again. Sides on the grid's edge get no extension, so the operator's
boundary mode applies there exactly as on the whole array ("fill" borders only at the global
border); "wrap" exchanges periodic halos on every side instead. "valid" computes the full grid
and cuts the halo off the whole result. ``iterations=N`` runs as ``ceil(N / k)`` exchanges.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError, UnsupportedError
from . import is_dask_array

__all__ = ["call", "halo_of"]

# The largest stand-in extent per axis used to infer the halo, by rank.
_PROBE = {1: 4096, 2: 128, 3: 24}


def halo_of(op: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Tuple[Tuple[int, ...], Tuple[int, ...], Any]:
    """Return the halo (cells read below and above per axis) and result dtype, from small stand-in fields."""
    from ..stencil._expr import record
    from ..stencil._probe import halo, probe

    first = args[0]
    cap = _PROBE.get(first.ndim, 16)
    small = tuple(min(n, cap) for n in first.shape)
    stand = [np.ones(small, a.dtype) if is_dask_array(a) and a.shape == first.shape else a for a in args]
    arrays, fields, ndim = op._arguments(stand)
    recorded = record(op.__wrapped__, arrays, kwargs, fields, ndim, op.neighborhood)
    if recorded is not None:
        seen = recorded[0]
    else:
        seen, _ = probe(op.__wrapped__, arrays, kwargs, fields, ndim, op.neighborhood)
    lo, hi = halo(seen, ndim, op.neighborhood)
    dtype = np.asarray(op(*stand, iterations=1, **kwargs)).dtype
    return lo, hi, dtype


class _Block:
    """Run ``steps`` stencil steps on one extended block and cut its extension off."""

    def __init__(self, op: Any, args: List[Any], fields: List[int], steps: int, depth: Tuple[int, ...],
                 kwargs: Dict[str, Any], everywhere: bool):
        self.op, self.args, self.fields, self.steps = op, args, fields, steps
        self.depth, self.kwargs, self.everywhere = depth, kwargs, everywhere

    def __call__(self, *blocks: np.ndarray, block_info: Optional[Dict[Any, Any]] = None) -> np.ndarray:
        args = list(self.args)
        for i, b in zip(self.fields, blocks):
            args[i] = b
        out = np.asarray(self.op(*args, iterations=self.steps, **self.kwargs))
        loc = block_info[0]["chunk-location"] if block_info else (0,) * out.ndim
        num = block_info[0]["num-chunks"] if block_info else (1,) * out.ndim
        cut = []
        for ax, d in enumerate(self.depth):
            low = d if (self.everywhere or loc[ax] > 0) else 0
            high = d if (self.everywhere or loc[ax] < num[ax] - 1) else 0
            cut.append(slice(low, out.shape[ax] - high))
        return out[tuple(cut)]


def _steps_per_exchange(chunks: Tuple[Tuple[int, ...], ...], reach: Tuple[int, ...], total: int) -> int:
    room = min((min(c) // (4 * r) for c, r in zip(chunks, reach) if r > 0), default=total)
    return max(1, min(total, room))


def call(op: Any, args: Sequence[Any], kwargs: Dict[str, Any], iterations: Optional[int], out: Any,
         steps_per_exchange: Optional[int] = None) -> Any:
    """Apply a stencil operator to Dask array fields; returns a lazy Dask array."""
    import dask.array as da

    from ..stencil import _iterations

    if out is not None:
        raise InvalidArgumentError("out= takes a NumPy array; with Dask array fields the result is a Dask array "
                                   "(store it with dask.array.store)")
    first = args[0]
    if not is_dask_array(first):
        raise UnsupportedError(f"{op.__name__}: with Dask arrays the first field must be a Dask array, not "
                               f"{type(first).__name__}")
    steps = op.iterations if iterations is None else _iterations(iterations)
    if steps > 1 and op.boundary == "valid":
        raise InvalidArgumentError("boundary='valid' shrinks the grid, so it cannot be applied iterations > 1 times")
    args = list(args)
    fields = [i for i, a in enumerate(args) if is_dask_array(a) and a.shape == first.shape]
    for i, a in enumerate(args):
        if is_dask_array(a) and i not in fields:
            raise UnsupportedError(f"{op.__name__}: argument {i} is a Dask array of shape {a.shape}, not a field of "
                                   f"shape {first.shape}; pass it as a NumPy array")
    lo, hi, dtype = halo_of(op, args, kwargs)
    if steps > 1 and np.dtype(dtype) != first.dtype:
        op(*[np.ones((3,) * first.ndim, first.dtype)], iterations=steps, **kwargs)  # raises pyasc's DTypeError
    reach = tuple(max(a, b) for a, b in zip(lo, hi))
    minimum = {ax: r for ax, r in enumerate(reach) if r > 0}
    grid = [a.rechunk({ax: da.overlap.ensure_minimum_chunksize(r, a.chunks[ax]) for ax, r in minimum.items()})
            if fields and i in fields else a for i, a in enumerate(args)]
    grid = [a.rechunk(grid[0].chunks) if i in fields[1:] else a for i, a in enumerate(grid)]
    per = steps_per_exchange or _steps_per_exchange(grid[0].chunks, reach, steps)
    run = op
    if op.boundary == "valid":
        from ..stencil import StencilOperator

        run = StencilOperator(op.__wrapped__, "skip", op.cval, op.neighborhood, op.standard_indexing, 1,
                              op._settings)
    everywhere = op.boundary == "wrap"
    done = 0
    while done < steps:
        k = min(per, steps - done)
        depth = tuple(k * r for r in reach)
        wide = {ax: da.overlap.ensure_minimum_chunksize(d, grid[0].chunks[ax]) for ax, d in enumerate(depth) if d}
        grid = [a.rechunk(wide) if i in fields else a for i, a in enumerate(grid)]
        expanded = [da.overlap.overlap(grid[i], depth=dict(enumerate(depth)),
                                       boundary="periodic" if everywhere else "none") for i in fields]
        chunks = grid[0].chunks
        fn = _Block(run, [None if i in fields else a for i, a in enumerate(grid)], fields, k, depth, kwargs,
                    everywhere)
        result = da.map_blocks(fn, *expanded, dtype=dtype, chunks=chunks, meta=np.empty((0,) * first.ndim, dtype))
        grid = [result if i == 0 else a for i, a in enumerate(grid)]
        done += k
    result = grid[0]
    if op.boundary == "valid":
        result = result[tuple(slice(a, n - b) for n, a, b in zip(first.shape, lo, hi))]
    return result
