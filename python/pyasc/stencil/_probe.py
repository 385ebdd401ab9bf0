"""Field proxies of a stencil body: relative reads recorded, mapped to slices, or evaluated.

A stencil body reads its fields at constant relative offsets (``u[-1, 0]``). The same body is
run with three kinds of proxy: :class:`ProbeField` records the offsets and NumPy's result dtype
on one-element arrays; :class:`SliceField` maps each read to the shifted slice of a real array
(a traced pyasc tensor inside the core kernel, or a NumPy array for the thin border boxes).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError, TraceError, at_user_line

Offsets = Tuple[int, ...]
Neighborhood = Tuple[Tuple[int, int], ...]


def offsets_of(key: Any, ndim: int, neighborhood: Optional[Neighborhood]) -> Offsets:
    """Check one relative index of a field read and return it as a tuple of ints."""
    parts = key if isinstance(key, tuple) else (key,)
    for p in parts:
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)):
            raise at_user_line(TraceError(
                f"stencil offsets must be constant integers, not {type(p).__name__} {p!r} in {key!r}; "
                "index other arrays as usual by naming them in standard_indexing"))
    if len(parts) != ndim:
        raise at_user_line(TraceError(
            f"a stencil field of {ndim} dimension(s) takes {ndim} relative offset(s), got {len(parts)} in {key!r}"))
    offs = tuple(int(p) for p in parts)
    if neighborhood is not None:
        for axis, (d, (lo, hi)) in enumerate(zip(offs, neighborhood)):
            if not lo <= d <= hi:
                raise at_user_line(InvalidArgumentError(
                    f"offset {d} on axis {axis} of {offs} lies outside the neighborhood ({lo}, {hi})"))
    return offs


class ProbeField:
    """A field read during the probe run: records offsets, returns a one-element array."""

    def __init__(self, dtype: np.dtype, ndim: int, seen: List[Offsets], neighborhood: Optional[Neighborhood]):
        self._value = np.ones((1,) * ndim, dtype=dtype)
        self._ndim = ndim
        self._seen = seen
        self._neighborhood = neighborhood
        self.shape = (1,) * ndim
        self.ndim = ndim
        self.dtype = dtype

    def __getitem__(self, key: Any) -> np.ndarray:
        self._seen.append(offsets_of(key, self._ndim, self._neighborhood))
        return self._value


class SliceField:
    """A field whose read at offset ``d`` is the slice ``a[lo + d : n - hi + d]`` on every axis."""

    def __init__(self, array: Any, lo: Sequence[int], hi: Sequence[int]):
        self._array = array
        self._lo = lo
        self._hi = hi
        self._shape = tuple(int(n) for n in array.shape)
        self.ndim = len(self._shape)
        self.shape = tuple(n - a - b for n, a, b in zip(self._shape, lo, hi))
        self.dtype = array.dtype

    def __getitem__(self, key: Any) -> Any:
        offs = offsets_of(key, self.ndim, None)
        index = tuple(slice(a + d, n - b + d) for n, a, b, d in zip(self._shape, self._lo, self._hi, offs))
        return self._array[index]


def call_body(fn: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any], fields: Sequence[int],
              make: Callable[[int, Any], Any]) -> Any:
    """Call the stencil body with each field argument (by position) replaced by ``make(i, arg)``."""
    wrapped = [make(i, a) if i in fields else a for i, a in enumerate(args)]
    return fn(*wrapped, **kwargs)


def probe(fn: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any], fields: Sequence[int],
          ndim: int, neighborhood: Optional[Neighborhood]) -> Tuple[List[Offsets], np.dtype]:
    """Run the body on one-element fields; return the offsets it reads and its result dtype."""
    seen: List[Offsets] = []
    with np.errstate(all="ignore"):
        out = call_body(fn, args, kwargs, fields, lambda i, a: ProbeField(a.dtype, ndim, seen, neighborhood))
    if not seen:
        raise at_user_line(TraceError("a stencil body must read its field at least once (u[0, 0] is the centre)"))
    # A traced parameter (inside an operator) makes the result a tracer: its dtype is known.
    dtype = np.dtype(out.dtype) if hasattr(out, "dtype") and not isinstance(out, np.ndarray) else np.asarray(out).dtype
    if dtype.kind == "O":
        raise at_user_line(TraceError(f"a stencil body must return a number per cell, not {type(out).__name__}"))
    return seen, dtype


def halo(seen: Sequence[Offsets], ndim: int, neighborhood: Optional[Neighborhood]) -> Tuple[Offsets, Offsets]:
    """Return the halo ``(lo, hi)`` per axis: cells needed before and after each output cell."""
    lo = [max(0, -min(o[a] for o in seen)) for a in range(ndim)]
    hi = [max(0, max(o[a] for o in seen)) for a in range(ndim)]
    if neighborhood is not None:
        lo = [max(x, -n[0]) for x, n in zip(lo, neighborhood)]
        hi = [max(x, n[1]) for x, n in zip(hi, neighborhood)]
    return tuple(lo), tuple(hi)
