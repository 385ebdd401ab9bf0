"""A stencil applied to traced values: inside an operator body, or under ``pyasc.grad``.

Each application is the body over shifted slices of the fields (:class:`SliceField`), with the
boundary mode written as array ops: ``fill`` and ``skip`` pad the interior result (``skip``
takes the border from the first field), the padded modes pad the fields first. The steps of
``iterations=N`` chain in the trace, so the compiler fuses each step and the gradient rules
of slices, pads and elementwise ops give the adjoint stencil, steps in reverse order.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from ..api import movement
from ..errors import InvalidArgumentError, ShapeError, at_user_line
from ._probe import SliceField, call_body, halo, probe

#: The ``np.pad`` mode each padded boundary mode reads its border from.
_PAD_MODE = {"constant": "constant", "nearest": "edge", "wrap": "wrap", "reflect": "symmetric"}


def _fields(op: Any, args: Sequence[Any]) -> List[int]:
    first = args[0]
    fields = [0]
    for i, a in enumerate(args[1:], start=1):
        name = op._params[i] if i < len(op._params) else f"argument {i}"
        if name in op.standard_indexing or not hasattr(a, "shape") or not hasattr(a, "dtype"):
            continue
        if tuple(a.shape) == tuple(first.shape):
            fields.append(i)
    return fields


def _symmetric(x: Any, lo: Sequence[int], hi: Sequence[int]) -> Any:
    """``np.pad(x, ..., mode='symmetric')`` from slices: the edge cells mirrored, edge repeated."""
    for axis, (a, b) in enumerate(zip(lo, hi)):
        n = int(x.shape[axis])
        if a > n or b > n:
            raise at_user_line(ShapeError(f"boundary='reflect' needs a halo of at most {n} cells on axis {axis}"))
        parts = []
        if a:
            parts.append(x[(slice(None),) * axis + (slice(a - 1, None, -1) if a < n else slice(None, None, -1),)])
        parts.append(x)
        if b:
            parts.append(x[(slice(None),) * axis + (slice(n - 1, n - b - 1 if n > b else None, -1),)])
        x = movement.concatenate(parts, axis=axis) if len(parts) > 1 else x
    return x


def _pad(x: Any, lo: Sequence[int], hi: Sequence[int], mode: str, cval: Any) -> Any:
    widths = list(zip(lo, hi))
    if mode == "symmetric":
        return _symmetric(x, lo, hi)
    if mode == "constant":
        return movement.pad(x, widths, "constant", float(cval) if np.dtype(x.dtype).kind == "f" else cval)
    return movement.pad(x, widths, mode)


def _step(op: Any, arrays: List[Any], kwargs: Dict[str, Any], fields: Sequence[int], lo: Tuple[int, ...],
          hi: Tuple[int, ...]) -> Any:
    mode = op.boundary
    body = op.__wrapped__
    if mode in _PAD_MODE:
        padded = [_pad(a, lo, hi, _PAD_MODE[mode], op.cval) if i in fields else a for i, a in enumerate(arrays)]
        return call_body(body, padded, kwargs, fields, lambda i, a: SliceField(a, lo, hi))
    core = call_body(body, arrays, kwargs, fields, lambda i, a: SliceField(a, lo, hi))
    if mode == "valid":
        return core
    widths = list(zip(lo, hi))
    if mode == "fill":
        return movement.pad(core, widths, "constant", op.cval)
    # skip: the border keeps the first field's values.
    inside = np.pad(np.ones(tuple(int(n) for n in core.shape), dtype=bool), widths)
    return np.where(inside, movement.pad(core, widths, "constant", 0), arrays[0])


def run(op: Any, args: Sequence[Any], kwargs: Dict[str, Any], steps: int) -> Any:
    """Apply ``op`` (a :class:`~pyasc.StencilOperator`) ``steps`` times to traced fields."""
    first = args[0]
    ndim = len(first.shape)
    if ndim not in (1, 2, 3):
        raise at_user_line(ShapeError(f"a stencil field is 1-D, 2-D or 3-D, not {ndim}-D"))
    if steps > 1 and op.boundary == "valid":
        raise at_user_line(InvalidArgumentError(
            "boundary='valid' shrinks the grid, so it cannot be applied iterations > 1 times"))
    fields = _fields(op, args)
    seen, _ = probe(op.__wrapped__, args, kwargs, fields, ndim, op.neighborhood)
    lo, hi = halo(seen, ndim, op.neighborhood)
    if any(int(n) <= a + b for n, a, b in zip(first.shape, lo, hi)):
        raise at_user_line(ShapeError(f"the field {tuple(first.shape)} has no interior inside the halo {lo}/{hi}"))
    arrays = list(args)
    for _ in range(steps):
        arrays[0] = _step(op, arrays, kwargs, fields, lo, hi)
    return arrays[0]
