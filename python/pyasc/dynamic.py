"""Dynamic shapes: ``dynamic_shape=True`` and gears, and ``pyasc.get_context()``.

With ``dynamic_shape=True`` an operator is traced once per rank and dtype signature; a call
with new extents reuses that trace (only shape inference and kernel planning run again,
microseconds) unless the function read a traced shape, in which case it is traced again.

With ``gears`` (``{dim: [sizes]}`` or ``"pow2"`` for dimension 0) the geared dimensions of
every array argument are zero-padded up to the next gear, as Ascend's dynamic-dims profiles
do; the function is traced once per gear and ``get_context().get_max_dim(d)`` gives the gear.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Sequence, Union

import numpy as np

from .errors import InvalidArgumentError, ShapeError

__all__ = ["get_context", "Context", "GearedOperator"]

_local = threading.local()


def _stack(name: str) -> List[Any]:
    s = getattr(_local, name, None)
    if s is None:
        s = []
        setattr(_local, name, s)
    return s


def _enter_trace(tensors: tuple) -> None:
    _stack("traces").append(tensors)


def _exit_trace() -> None:
    _stack("traces").pop()


class Context:
    """What a traced function may ask about its call: the maximum extent of each dimension."""

    def get_max_dim(self, dim: int) -> int:
        """Return the gear of dimension ``dim`` of the first argument (its extent without gears)."""
        gears = _stack("gears")
        if gears and dim in gears[-1]:
            return gears[-1][dim]
        traces = _stack("traces")
        if not traces or not traces[-1]:
            raise InvalidArgumentError("get_max_dim() is available while an operator with arguments is traced")
        return int(traces[-1][0].shape[dim])


def get_context() -> Context:
    """Return the context of the operator being traced (see :class:`Context`)."""
    return Context()


def _gear_for(size: int, sizes: Union[str, Sequence[int]], dim: int) -> int:
    if sizes == "pow2":
        return 1 if size <= 1 else 1 << (size - 1).bit_length()
    for g in sorted(sizes):
        if g >= size:
            return g
    raise ShapeError(f"dimension {dim} has extent {size}, larger than every gear {sorted(sizes)}")


class GearedOperator:
    """An operator whose geared dimensions are padded up to fixed gear sizes before each call."""

    def __init__(self, inner: Any, gears: Union[str, Dict[int, Sequence[int]]]) -> None:
        self._inner = inner
        self._gears: Dict[int, Any] = {0: "pow2"} if gears == "pow2" else dict(gears)
        self.__wrapped__ = inner.__wrapped__
        self.__name__ = inner.__name__

    def _pad(self, args: tuple) -> tuple:
        """Pad the geared dims of the first array argument and the matching axes of the others.

        Axes align from the right, as broadcasting aligns them; another argument's axis of
        extent 1 (a broadcast) or missing axis is left alone.
        """
        ref = next((a for a in args if isinstance(a, np.ndarray) and a.ndim), None)
        gears: Dict[int, int] = {}
        if ref is not None:
            for d, sizes in self._gears.items():
                if d < ref.ndim:
                    gears[d] = _gear_for(ref.shape[d], sizes, d)
        out = []
        for a in args:
            if isinstance(a, np.ndarray) and a.ndim and ref is not None:
                widths = [(0, 0)] * a.ndim
                for d, g in gears.items():
                    ax = d - (ref.ndim - a.ndim)
                    if ax >= 0 and a.shape[ax] == ref.shape[d] and (a is ref or a.shape[ax] != 1):
                        widths[ax] = (0, g - a.shape[ax])
                if any(w[1] for w in widths):
                    a = np.pad(a, widths)
            out.append(a)
        _stack("gears").append(gears)
        return tuple(out)

    def __call__(self, *args: Any) -> Any:
        """Pad the geared dimensions, then run the operator for that gear."""
        padded = self._pad(args)
        try:
            return self._inner(*padded)
        finally:
            _stack("gears").pop()

    def get_compiled_op(self, *args: Any) -> Any:
        """Return the plan for the gear these example arguments fall in."""
        padded = self._pad(args)
        try:
            return self._inner.get_compiled_op(*padded)
        finally:
            _stack("gears").pop()

    def cache_info(self) -> Any:
        """Cache statistics of the geared operator (one compile per gear)."""
        return self._inner.cache_info()

    def cache_clear(self) -> None:
        """Drop every compiled gear."""
        self._inner.cache_clear()

    @property
    def options(self) -> Dict[str, Any]:
        """The validated options."""
        return self._inner.options

    @property
    def device(self) -> str:
        """The device kind name."""
        return self._inner.device

    def __repr__(self) -> str:
        return f"<pyasc.operator {self.__name__} with gears {self._gears}>"
