"""Operators on Dask arrays: a call with a ``dask.array.Array`` argument returns a lazy Dask array.

Each chunk runs the operator's compiled kernels; how the chunks are tied together follows
the operator's traced graph (see :mod:`pyasc.dask._graph`):

* pointwise and broadcasting graphs map over aligned blocks (``da.blockwise``, chunks unified
  as Dask's own elementwise operations do);
* a graph that is one ``sum``/``max``/``min``/``prod`` or mean of a pointwise expression runs per
  chunk and combines the partials in Dask's reduction tree (float sums combined in float64);
* a function that returns one ``var``/``std`` (any ``ddof``, axes, ``keepdims``) or
  ``argmax``/``argmin`` (one axis, or None: the C-order flat index) of a pointwise expression
  combines in the tree too: each chunk gives its count, mean and M2 in float64 (merged by Chan
  et al.'s parallel formula) or its extreme value and global index (NaN and then the smallest
  index win, as in NumPy); see :mod:`pyasc.dask._moments`;
* so does one ``nanmean``/``nanvar``/``nanstd``/``nanmax``/``nanmin`` of a float pointwise
  expression: each chunk gives per-element counts of the values that are not NaN with their
  float64 sum or moments, or its own NaN-skipping extreme (:mod:`pyasc.dask._nan`); a
  ``nansum`` is a sum of a pointwise expression already;
* other reductions, scans and sorts couple the axes they name: those axes are rechunked to a
  single chunk, then the blocks are mapped;
* ``a @ b`` runs pyasc's GEMM per pair of blocks and sums the partial products;
* anything else raises :class:`pyasc.UnsupportedError` naming the op.

Stencil operators use ``map_overlap`` (see :mod:`pyasc.dask._stencil`). Dask is imported only
when an argument is a Dask array, so pyasc runs without it.
"""

from __future__ import annotations

import string
import sys
from typing import Any, Sequence, Tuple

import numpy as np

from .. import _hooks
from ..errors import UnsupportedError

__all__ = ["has_dask", "is_dask_array", "call", "call_elementwise"]


def is_dask_array(x: Any) -> bool:
    """Return True for a ``dask.array.Array`` (checked without importing Dask)."""
    if not type(x).__module__.startswith("dask") or "dask.array" not in sys.modules:
        return False
    return isinstance(x, sys.modules["dask.array"].Array)


def has_dask(args: Sequence[Any]) -> bool:
    """Return True when any argument is a Dask array."""
    return any(is_dask_array(a) for a in args)


def _arrays(args: Sequence[Any]) -> Tuple[list, int]:
    """Dask arrays for array arguments (NumPy arrays become one-chunk Dask arrays), and the full rank."""
    import dask.array as da

    out = []
    for a in args:
        if is_dask_array(a):
            out.append(a)
        elif isinstance(a, np.ndarray) and a.ndim > 0:
            out.append(da.from_array(a, chunks=-1))
        else:
            out.append(a)
    rank = max((x.ndim for x in out if is_dask_array(x)), default=0)
    return out, rank


def _check_broadcast(shapes: Sequence[Tuple[Any, ...]]) -> None:
    """Raise ``ShapeError`` at the caller's line when known extents do not broadcast together."""
    rank = max((len(sh) for sh in shapes), default=0)
    for axis in range(1, rank + 1):
        known = {int(sh[-axis]) for sh in shapes if len(sh) >= axis and sh[-axis] == sh[-axis] and sh[-axis] != 1}
        if len(known) > 1:  # NaN extents (chunks Dask does not know yet) are skipped
            from ..errors import ShapeError, at_user_line

            raise at_user_line(ShapeError(
                f"the Dask array arguments of shapes {', '.join(str(tuple(sh)) for sh in shapes)} do not broadcast "
                "together"))


def _index(ndim: int, rank: int) -> str:
    return string.ascii_lowercase[rank - ndim:rank]


#: Nodes of a coupled graph that may be one var/std/argmax/argmin or NaN-skipping reduction
#: (see :mod:`pyasc.dask._moments`).
_TREE_CANDIDATES = ("sum", "max", "min", "argmax", "argmin")
_PRIMES = (5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43)


def _stand_in(x: Any, by_extent: Any = None) -> Any:
    """Return a tiny array of x's dtype: distinct extents per axis, or per distinct extent of ``by_extent``."""
    if not is_dask_array(x):
        return x
    if by_extent is not None:
        shape = tuple(1 if n == 1 else by_extent[n] for n in x.shape)
    else:
        shape = tuple(1 if n == 1 else _PRIMES[len(_PRIMES) - x.ndim + i] for i, n in enumerate(x.shape))
    return np.ones(shape, dtype=x.dtype)


def _compiled(op: Any, arrays: Sequence[Any]) -> Tuple[Any, list]:
    """Compile ``op`` for tiny stand-ins of the arguments: per-axis extents, else per-extent (matmul)."""
    extents = sorted({n for a in arrays if is_dask_array(a) for n in a.shape if n != 1})
    table = dict(zip(extents, _PRIMES)) if len(extents) <= len(_PRIMES) else None
    attempts = [lambda a: _stand_in(a), lambda a: _stand_in(a, table),
                # Captured arrays tie extents to the real ones: the first block's shape.
                lambda a: np.ones(tuple(c[0] for c in a.chunks), a.dtype) if is_dask_array(a) else a]
    error: Exception = UnsupportedError("no stand-in arguments")
    for make in attempts if table is not None else attempts[::2]:
        probe = [make(a) for a in arrays]
        try:
            return op.get_compiled_op(*probe), probe
        except Exception as e:  # a stand-in shape the function cannot take: try the next
            error = e
    raise UnsupportedError(f"{op.__name__}: cannot trace it on blocks of its Dask arguments ({error}); an array "
                           "the function captures needs the axes it spans whole in every chunk: rechunk them, "
                           "compute the arrays first (np.asarray) or call the operator per block with map_blocks")


def _meta(dtype: Any, ndim: int) -> np.ndarray:
    return np.empty((0,) * ndim, dtype=dtype)


def _blockwise(fn: Any, args: Sequence[Any], rank: int, dtype: Any, adjust: dict = None, token: str = None) -> Any:
    import dask.array as da

    _check_broadcast([a.shape for a in args if is_dask_array(a)])
    pairs = []
    for a in args:
        pairs += [a, _index(a.ndim, rank)] if is_dask_array(a) else [a, None]
    out = _index(rank, rank)
    return da.blockwise(fn, out, *pairs, dtype=dtype, meta=_meta(dtype, rank), adjust_chunks=adjust or None,
                        align_arrays=True, token=token)


def call_elementwise(op: Any, args: Sequence[Any], dtype: Any = None) -> Any:
    """Map an elementwise operator over the aligned blocks of its (broadcast) Dask array arguments."""
    arrays, rank = _arrays(args)
    if dtype is None:
        dtype = np.asarray(op(*[_stand_in(a) for a in arrays])).dtype
    return _blockwise(op, arrays, rank, dtype)


def call(op: Any, args: Sequence[Any]) -> Any:
    """Run a ``@pyasc.operator`` on arguments among which some are Dask arrays; return a Dask array."""
    from . import _graph as graph
    from ._pickle import ensure_registered

    ensure_registered()
    arrays, rank = _arrays(args)
    # A geared operator pads its inputs: its plain companion shows the graph on the true shapes.
    try:
        compiled, probe = _compiled(op._make(op._func, False) if hasattr(op, "_make") else op, arrays)
    except UnsupportedError:
        # argmax/argmin over every axis of an n-d array traces only as per-chunk partials.
        from ._moments import plan_flat_arg

        tree = plan_flat_arg(op, arrays, rank)
        if tree is None:
            raise
        return tree
    outputs = compiled.outputs
    if len(outputs) != 1 or compiled.returns_tuple:
        raise UnsupportedError(f"{op.__name__}: an operator with several results cannot run on Dask arrays; "
                               "return one array")
    dtype = outputs[0][1]
    s = graph.classify(compiled.graph_ir(True), rank, len(arrays))
    if s.kind == "coupled" and any(n.name in _TREE_CANDIDATES for n in s.nodes):
        from ._moments import plan

        tree = plan(op, arrays, rank, probe, dtype, len(arrays))
        if tree is not None:
            return tree
    if hasattr(op, "_make"):
        op = _Cropped(op, rank, s, tuple(outputs[0][0]), probe)
    if s.kind == "pointwise":
        return _blockwise(op, arrays, rank, dtype)
    if s.kind == "matmul":
        from ._reduce import matmul

        return matmul(op, arrays[0], arrays[1], dtype)
    if s.kind == "reduction":
        from ._reduce import reduction

        return reduction(op, arrays, rank, dtype, s)
    if s.kind == "coupled":
        return _coupled(op, arrays, rank, dtype, s, tuple(outputs[0][0]), probe)
    node = s.nodes[0]
    where = f" ({node.line})" if node.line else ""
    raise UnsupportedError(f"{op.__name__}: {s.why}{where} does not split into chunks; compute the Dask array "
                           "first (np.asarray) or call the operator on each block with map_blocks")


def whole(arrays: Sequence[Any], axes: Any, rank: int) -> list:
    """Rechunk the given full-rank axes of every Dask array to a single chunk."""
    out = []
    for a in arrays:
        if is_dask_array(a):
            spec = {i - (rank - a.ndim): -1 for i in axes if i - (rank - a.ndim) >= 0}
            a = a.rechunk(spec) if spec else a
        out.append(a)
    return out


def _coupled(op: Any, arrays: Sequence[Any], rank: int, dtype: Any, s: Any, out_probe: Tuple[int, ...],
             probe: Sequence[Any]) -> Any:
    """Rechunk the coupled axes to one chunk, then map blocks (the result keeps or drops axes)."""
    arrays = whole(arrays, s.coupled, rank)
    full = np.broadcast_shapes(*(p.shape for p in probe if isinstance(p, np.ndarray)))
    if len(out_probe) == rank:
        adjust = {_index(rank, rank)[i]: 1 for i in range(rank) if out_probe[i] == 1 and full[i] != 1}
        if all(out_probe[i] in (1, full[i]) for i in range(rank)):
            return _blockwise(op, arrays, rank, dtype, adjust)
    else:
        kept = [i for i in range(rank) if full[i] in out_probe]
        if tuple(full[i] for i in kept) == out_probe and all(full[i] != 1 for i in kept):
            dropped = [i for i in range(rank) if i not in kept]
            return _drop(op, arrays, rank, dtype, dropped)
    raise UnsupportedError(f"{op.__name__}: its result of shape {out_probe} for arguments of shape {full} does not "
                           "map onto the arguments' axes; compute the Dask array first (np.asarray)")


def _drop(op: Any, arrays: Sequence[Any], rank: int, dtype: Any, dropped: Sequence[int]) -> Any:
    import dask.array as da

    idx = _index(rank, rank)
    out = "".join(c for i, c in enumerate(idx) if i not in dropped)
    pairs = []
    for a in arrays:
        pairs += [a, _index(a.ndim, rank)] if is_dask_array(a) else [a, None]
    return da.blockwise(op, out, *pairs, dtype=dtype, meta=_meta(dtype, len(out)), concatenate=True,
                        align_arrays=True)


class _Cropped:
    """A geared operator on one set of blocks, its result cut from the gear's extents to the blocks'."""

    def __init__(self, op: Any, rank: int, s: Any, out_probe: Tuple[int, ...], probe: Sequence[Any]):
        self.op, self.rank, self.matmul = op, rank, s.kind == "matmul"
        self.__name__ = getattr(op, "__name__", "operator")
        full = np.broadcast_shapes(*(p.shape for p in probe if isinstance(p, np.ndarray))) if not self.matmul else ()
        if self.matmul or len(out_probe) == rank:
            self.kept = list(range(rank))
        else:
            self.kept = [i for i in range(rank) if full[i] in out_probe]

    def __call__(self, *blocks: Any) -> np.ndarray:
        out = np.asarray(self.op(*blocks))
        arrays = [b for b in blocks if isinstance(b, np.ndarray)]
        if self.matmul:
            extents = (arrays[0].shape[0], arrays[1].shape[1])
        else:
            full = np.broadcast_shapes(*(a.shape for a in arrays))
            full = (1,) * (self.rank - len(full)) + tuple(full)
            extents = tuple(full[i] for i in self.kept)
        if len(extents) != out.ndim:
            return out
        return out[tuple(slice(0, n) for n in extents)]


def _no_plans(op: Any) -> Tuple[int, int, int, int]:
    return (0, 0, 0, 0)


def _nothing_to_clear(op: Any) -> None:
    return None


_hooks.register_companion("dask", order=0, accepts=has_dask, call=call, cache_info=_no_plans,
                          cache_clear=_nothing_to_clear)
