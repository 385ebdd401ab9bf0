"""Movement ops: reshape, transpose, broadcast_to, expand_dims, squeeze, flip, indexing.

Inside an operator they are views: no data moves; the kernels that read the result read
the original memory through new strides. Outside an operator they run on arrays at once.
"""

from __future__ import annotations

import builtins
import numbers
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _pyasc
from ..errors import DTypeError, InvalidArgumentError, ShapeError, TraceError, UnsupportedError, at_user_line
from ..ops import _eager_op, _is_traced

__all__ = ["reshape", "transpose", "permute", "broadcast_to", "expand_dims", "squeeze", "flip", "swapaxes",
           "moveaxis", "pad", "concatenate", "stack", "take"]

Shape = Tuple[int, ...]


def _err(cls: type, message: str) -> Exception:
    return at_user_line(cls(message))


def _eager(name: str, fn: Any, x: Any, *params: Any) -> Any:
    return _eager_op(f"{name}:{params!r}", lambda t: fn(t, *params))(x)


def _norm_axis(a: int, nd: int) -> int:
    if not -nd <= a < nd:
        raise _err(ShapeError, f"axis {a} is out of bounds for a tensor of rank {nd}")
    return a + nd if a < 0 else a


def reshape(x: Any, shape: Union[int, Sequence[int]]) -> Any:
    """Give the same elements in C order a new shape (one extent may be -1)."""
    if not _is_traced(x):
        return _eager("reshape", reshape, x, shape)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    n = x.size
    if builtins.sum(1 for d in shape if d == -1) > 1:
        raise _err(ShapeError, "only one extent of a reshape can be -1")
    known = 1
    for d in shape:
        if d != -1:
            if d < 0:
                raise _err(ShapeError, f"negative extent {d} in reshape")
            known *= d
    if -1 in shape:
        if known == 0 or n % known:
            raise _err(ShapeError, f"cannot reshape {x.shape} into {shape}")
        shape = tuple(n // known if d == -1 else d for d in shape)
    return _pyasc.apply_view(x, "reshape", list(shape))


def transpose(x: Any, axes: Optional[Sequence[int]] = None) -> Any:
    """Permute the axes (reversed when ``axes`` is None)."""
    if not _is_traced(x):
        return _eager("transpose", transpose, x, axes)
    nd = x.ndim
    perm = list(range(nd))[::-1] if axes is None else [_norm_axis(a, nd) for a in axes]
    return _pyasc.apply_view(x, "transpose", perm)


def permute(x: Any, *axes: Any) -> Any:
    """Permute the axes (PyTorch's name for ``transpose`` with an explicit order)."""
    return transpose(x, tuple(axes[0]) if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes)


def swapaxes(x: Any, a: int, b: int) -> Any:
    """Exchange two axes."""
    if not _is_traced(x):
        return _eager("swapaxes", swapaxes, x, a, b)
    perm = list(range(x.ndim))
    a, b = _norm_axis(a, x.ndim), _norm_axis(b, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return _pyasc.apply_view(x, "transpose", perm)


def moveaxis(x: Any, source: Union[int, Sequence[int]], destination: Union[int, Sequence[int]]) -> Any:
    """Move axes to new positions, keeping the order of the others (NumPy's ``moveaxis``)."""
    if not _is_traced(x):
        return _eager("moveaxis", moveaxis, x, source, destination)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise _err(ShapeError, "moveaxis: source and destination need the same number of axes")
    src = [_norm_axis(a, x.ndim) for a in src]
    dst = [_norm_axis(a, x.ndim) for a in dst]
    perm = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return _pyasc.apply_view(x, "transpose", perm)


def broadcast_to(x: Any, shape: Union[int, Sequence[int]]) -> Any:
    """View ``x`` broadcast to ``shape`` (NumPy's rules), read only."""
    if not _is_traced(x):
        return _eager("broadcast_to", broadcast_to, x, shape)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0 for s in shape):
        raise _err(ShapeError, f"broadcast_to: the shape must be non-negative ints, not {shape!r}")
    return _pyasc.apply_view(x, "broadcast_to", [int(s) for s in shape])


def expand_dims(x: Any, axis: Union[int, Sequence[int]]) -> Any:
    """Insert axes of extent 1 at the positions ``axis`` of the result."""
    if not _is_traced(x):
        return _eager("expand_dims", expand_dims, x, axis)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = x.ndim + len(axes)
    pos = sorted(_norm_axis(a, nd) for a in axes)
    it = iter(x.shape)
    return reshape(x, tuple(1 if i in pos else next(it) for i in range(nd)))


def squeeze(x: Any, axis: Optional[Union[int, Sequence[int]]] = None) -> Any:
    """Remove axes of extent 1 (all of them, or those in ``axis``, which must have extent 1)."""
    if not _is_traced(x):
        return _eager("squeeze", squeeze, x, axis)
    if axis is None:
        drop = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        drop = {_norm_axis(a, x.ndim) for a in ((axis,) if isinstance(axis, int) else axis)}
        for a in drop:
            if x.shape[a] != 1:
                raise _err(ShapeError, f"cannot squeeze axis {a} of extent {x.shape[a]}")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in drop))


def flip(x: Any, axis: Optional[Union[int, Sequence[int]]] = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes when None)."""
    if not _is_traced(x):
        return _eager("flip", flip, x, axis)
    axes = set(range(x.ndim)) if axis is None else {
        _norm_axis(a, x.ndim) for a in ((axis,) if isinstance(axis, int) else axis)}
    dims = [(d - 1 if i in axes and d > 0 else 0, -1 if i in axes else 1, d) for i, d in enumerate(x.shape)]
    return _pyasc.apply_view(x, "slice", dims)


def _pad_widths(pad_width: Any, nd: int) -> list:
    import numpy as np

    try:
        raw = np.asarray(pad_width)
    except ValueError:
        raw = np.asarray([], dtype=float)
    if raw.dtype.kind not in "iu":
        raise _err(DTypeError, f"pad_width must be integers, not {pad_width!r}")
    w = raw.astype(np.int64)
    if w.ndim == 0:
        w = np.full((nd, 2), int(w))
    elif w.ndim == 1 and w.size == 1:
        w = np.full((nd, 2), int(w[0]))
    elif w.ndim == 1 and w.size == 2:
        w = np.tile(w, (nd, 1))
    elif w.ndim == 2 and w.shape == (1, 2):
        w = np.tile(w[0], (nd, 1))
    elif w.ndim == 2 and w.shape == (nd, 1):
        w = np.repeat(w, 2, axis=1)
    if w.shape != (nd, 2) or (w < 0).any():
        raise _err(ShapeError, f"pad_width {pad_width!r} does not fit a tensor of rank {nd}")
    return [(int(a), int(b)) for a, b in w]


#: The modes ``np.pad`` knows; the ones pyasc does not run yet raise UnsupportedError.
_NUMPY_PAD_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum", "reflect",
                    "symmetric", "wrap", "empty")


def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    """``np.pad``: modes constant (with ``constant_values``), edge, reflect, wrap."""
    if not _is_traced(x):
        return _eager("pad", pad, x, pad_width, mode, constant_values)
    if not isinstance(mode, str) or mode not in _NUMPY_PAD_MODES:
        raise _err(InvalidArgumentError, f"pad: mode {mode!r} is not a mode of np.pad")
    if not isinstance(constant_values, (int, float, bool)):
        raise _err(UnsupportedError, "pad: constant_values must be one number")
    return _pyasc.apply_pad(x, _pad_widths(pad_width, x.ndim), mode, constant_values)


def concatenate(arrays: Sequence[Any], axis: Optional[int] = 0) -> Any:
    """Join arrays along an existing axis (``axis=None`` flattens them first), NumPy's rules."""
    arrays = list(arrays)
    if not arrays:
        raise _err(InvalidArgumentError, "need at least one array to concatenate")
    if not any(_is_traced(a) for a in arrays):
        n = len(arrays)
        return _eager_op(f"concatenate:{n}:{axis!r}", lambda *t: concatenate(t, axis))(*arrays)
    like = next(a for a in arrays if _is_traced(a))
    # Arrays made inside the function (or literals) join as constants of the trace.
    arrays = [a if _is_traced(a) or np.ndim(a) == 0 else _pyasc.apply_constant_array(like, np.asarray(a))
              for a in arrays]
    if axis is None:
        arrays = [reshape(a, (-1,)) if _is_traced(a) else np.ravel(a) for a in arrays]
        axis = 0
    return _pyasc.apply_concat(arrays, _norm_axis(axis, like.ndim if axis is not None else 1))


def stack(arrays: Sequence[Any], axis: int = 0) -> Any:
    """Join arrays of one shape along a new axis."""
    arrays = list(arrays)
    if not arrays:
        raise _err(InvalidArgumentError, "need at least one array to stack")
    if not any(_is_traced(a) for a in arrays):
        n = len(arrays)
        return _eager_op(f"stack:{n}:{axis}", lambda *t: stack(t, axis))(*arrays)
    nd = next(a for a in arrays if _is_traced(a)).ndim + 1
    ax = _norm_axis(axis, nd)
    return concatenate([expand_dims(a, ax) if _is_traced(a) else np.expand_dims(a, ax) for a in arrays], ax)


def take(x: Any, indices: Any, axis: Optional[int] = None, out: Any = None, mode: str = "raise") -> Any:
    """Elements of ``x`` at integer ``indices`` along ``axis`` (flattened when None).

    ``mode``: ``'raise'`` (bad indices raise), ``'wrap'`` or ``'clip'``, as in NumPy.
    """
    if out is not None:
        raise at_user_line(UnsupportedError("np.take(..., out=) is not supported inside operators"))
    if mode not in ("raise", "wrap", "clip"):
        raise at_user_line(InvalidArgumentError(f"np.take: mode must be 'raise', 'wrap' or 'clip', not {mode!r}"))
    if not _is_traced(x):
        return _eager_op(f"take:{axis!r}:{mode}", lambda t, i: take(t, i, axis, mode=mode))(x, np.asarray(indices))
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = _norm_axis(axis, x.ndim)
    if mode != "raise":
        n = x.shape[axis]
        if n == 0:
            raise at_user_line(ShapeError("cannot do a non-empty take from an empty axis"))
        indices = np.mod(indices, n) if mode == "wrap" else np.clip(indices, 0, n - 1)
    scalar = (getattr(indices, "ndim", None) == 0) or isinstance(indices, (int, np.integer))
    if scalar:
        # A single index drops the axis, as in NumPy: take a one-element index, then squeeze.
        indices = reshape(indices, (1,)) if _is_traced(indices) else np.asarray(indices).reshape(1)
        return squeeze(_pyasc.apply_take(x, indices, axis), axis)
    return _pyasc.apply_take(x, indices, axis)


def getitem(x: Any, key: Any) -> Any:
    """``x[key]`` for ints, slices (any step), ``...`` and ``None`` as a view; integer arrays take."""
    import numpy as np

    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if isinstance(k, _pyasc.Tensor) or (isinstance(k, (list, np.ndarray)) and not isinstance(k, str)):
            if any(isinstance(k, _pyasc.Tensor) and k.dtype == np.bool_ for k in items):
                from . import updates

                if updates.in_augmented_subscript():
                    return updates.MaskedRead(x, key)  # y[mask] op= v
                raise _err(TraceError,
                           "boolean-mask indexing gives a data-dependent shape and cannot be traced; use where() "
                           "(or y[mask] = v, or pyasc.nonzero(mask, size=n) for a static size)")
            arrays = [i for i, k in enumerate(items) if isinstance(k, (_pyasc.Tensor, list, np.ndarray))]
            rest = [k for i, k in enumerate(items) if i not in arrays]
            if (len(arrays) != 1 or any(not (isinstance(k, slice) and k == slice(None)) for k in rest)
                    or (not isinstance(items[arrays[0]], _pyasc.Tensor)
                        and np.asarray(items[arrays[0]]).dtype == np.bool_)):
                from . import updates

                # Several index arrays, arrays mixed with other indices, masks known when traced.
                return updates.gather(x, key)
            return take(x, items[arrays[0]], arrays[0])
    n_real = builtins.sum(1 for k in items if k is not None and k is not Ellipsis)
    if builtins.sum(1 for k in items if k is Ellipsis) > 1:
        raise _err(InvalidArgumentError, "an index can only have a single ellipsis")
    if n_real > x.ndim:
        raise _err(ShapeError, f"too many indices for a tensor of rank {x.ndim}")
    dims, out_shape = [], []
    axis = 0
    for k in items:
        if k is None:
            out_shape.append(1)
        elif k is Ellipsis:
            for _ in range(x.ndim - n_real):
                d = x.shape[axis]
                dims.append((0, 1, d))
                out_shape.append(d)
                axis += 1
        elif isinstance(k, slice):
            start, stop, step = k.indices(x.shape[axis])
            length = len(range(start, stop, step))
            dims.append((start if length else 0, step, length))
            out_shape.append(length)
            axis += 1
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            d = x.shape[axis]
            i = int(k)
            if not -d <= i < d:
                raise _err(ShapeError, f"index {i} is out of bounds for axis {axis} with size {d}")
            dims.append((i % d, 1, 1))
            axis += 1
        else:
            raise _err(UnsupportedError, f"indexing with {type(k).__name__} is not supported inside operators")
    while axis < x.ndim:
        d = x.shape[axis]
        dims.append((0, 1, d))
        out_shape.append(d)
        axis += 1
    v = _pyasc.apply_view(x, "slice", dims)
    if tuple(out_shape) != tuple(v.shape):
        v = _pyasc.apply_view(v, "reshape", out_shape)
    return v


def _args(args: tuple) -> tuple:
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def _method_transpose(x: Any, args: tuple) -> Any:
    return transpose(x, _args(args) or None)


def _method_reshape(x: Any, args: tuple) -> Any:
    return reshape(x, _args(args))


def _method_ravel(x: Any, args: tuple) -> Any:
    return reshape(x, (-1,))


def _method_squeeze(x: Any, args: tuple) -> Any:
    return squeeze(x, _args(args) or None)


def _method_permute(x: Any, args: tuple) -> Any:
    return transpose(x, _args(args))


def _method_swapaxes(x: Any, args: tuple) -> Any:
    return swapaxes(x, *args)
