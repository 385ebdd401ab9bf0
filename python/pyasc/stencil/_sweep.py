"""Stencil bodies of float arithmetic run by the sweep kernel, with temporal blocking.

The recorded program (:mod:`pyasc.stencil._expr`) is run by ``pyasc-kernels``'s stencil sweep
over C-contiguous fields. ``fill`` and ``skip`` keep the cells within the halo of an edge fixed
(``cval``, or the input's own values), so N steps are one call with temporal blocking.
``constant`` pads the fields with ``cval`` once and sweeps the padded grid the same way. The
other padded modes read an edge that changes every step, so they sweep one step at a time and
fill the border boxes as the general path does.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import numpy as np

from .. import _pyasc
from ._expr import Node, compile_program


def applies(boundary: str, shape: Tuple[int, ...], lo: Sequence[int], hi: Sequence[int]) -> bool:
    """Whether the sweep runs this stencil: a grid with an interior on every axis, not ``valid``."""
    return boundary != "valid" and all(n > a + b for n, a, b in zip(shape, lo, hi))


def run(op: Any, arrays: Sequence[Any], kwargs: Dict[str, Any], fields: Tuple[int, ...], root: Node,
        lo: Tuple[int, ...], hi: Tuple[int, ...], steps: int) -> np.ndarray:
    """Apply the recorded body ``steps`` times; the result has the first field's shape and dtype."""
    instrs, tmps = compile_program(root)
    dtype = root.dtype
    fs = [np.ascontiguousarray(arrays[i]) for i in fields]
    shape = fs[0].shape
    mode = op.boundary
    cval = float(dtype.type(op.cval))
    if mode in ("fill", "skip"):
        out = _pyasc._host_empty(shape, dtype)
        _pyasc.stencil_sweep(fs, out, fs[0] if mode == "skip" else None, cval, instrs, tmps, list(lo), list(hi), steps)
        return out
    if mode == "constant" and steps > 1:
        padded = [np.pad(f, list(zip(lo, hi)), constant_values=cval) for f in fs]
        out = _pyasc._host_empty(padded[0].shape, dtype)
        _pyasc.stencil_sweep(padded, out, None, cval, instrs, tmps, list(lo), list(hi), steps)
        return out[tuple(slice(a, a + n) for a, n in zip(lo, shape))].copy()
    current = list(arrays)
    out = fs[0]
    for _ in range(steps):
        out = _pyasc._host_empty(shape, dtype)
        _pyasc.stencil_sweep(fs, out, None, cval, instrs, tmps, list(lo), list(hi), 1)
        op._border(out, current, kwargs, fields, lo, hi)
        current[0] = out
        fs[0] = out
    return out
