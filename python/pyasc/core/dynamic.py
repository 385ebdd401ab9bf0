"""Dynamic shapes: ``dynamic_shape=True`` and gears, and ``pyasc.get_context()``.

With ``dynamic_shape=True`` an operator is traced once per rank and dtype signature; a call
with new extents reuses that trace (only shape inference and kernel planning run again,
microseconds) unless the function read a traced shape, in which case it is traced again.

With ``gears`` (``{dim: [sizes]}`` or ``"pow2"`` for dimension 0) the geared dimensions of
every array argument (NumPy arrays and DeviceArrays) are zero-padded up to the next gear, as
Ascend's dynamic-dims profiles do; the function is traced once per gear and
``get_context().get_max_dim(d)`` gives the gear. Results have the gear's extents, and padding
never changes a value at an unpadded position: a reduction over a padded dimension (``sum``,
``max``, ``mean``, ``argmax``, ``softmax``, a matmul contracting it, ...) reads the padding as
its identity, through a mask built from the valid extents, which are run-time inputs (a new
extent within a gear never recompiles). Where the function moves data across a padded
dimension (a reshape or slice across it, ``pad``, ``concatenate``, ``take``), that call runs
unpadded instead, with the same results.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _hooks, _pyasc
from ..api import updates
from ..dask import has_dask
from ..errors import InvalidArgumentError, ShapeError
from ._binding import bind
from .pytree import call as pytree_call
from .pytree import clear as clear_companions
from .pytree import companion_infos, has_structure, tree_leaves

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
    updates.begin(tensors)


def _exit_trace() -> None:
    _stack("traces").pop()
    updates.end()


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


def _is_array(a: Any) -> bool:
    return isinstance(a, (np.ndarray, _pyasc.DeviceArray)) and a.ndim > 0


def _pad_array(a: Any, widths: List[Tuple[int, int]]) -> Any:
    """Return ``a`` zero-padded after each axis by ``widths`` (on the device for a DeviceArray)."""
    if isinstance(a, np.ndarray):
        return np.pad(a, widths)
    out = _pyasc.zeros(tuple(n + w for n, (_, w) in zip(a.shape, widths)), dtype=a.dtype)
    out[tuple(slice(0, n) for n in a.shape)].copy_from(a)
    return out


_NO_ARG = object()


class _GearFallback(Exception):
    """Raised inside a geared trace whose padding cannot be kept out of the results."""


class GearedOperator:
    """An operator whose geared dimensions are padded up to fixed gear sizes before each call.

    Padding never changes a result at an unpadded position (see the module's notes); the
    valid extents are passed to the plan at run time, so each gear compiles once.
    """

    def __init__(self, func: Callable[..., Any], make: Callable[[Callable[..., Any], bool], Any],
                 gears: Union[str, Dict[int, Sequence[int]]]) -> None:
        self._func = func
        self._make = make
        self._gears: Dict[int, Any] = {0: "pow2"} if gears == "pow2" else dict(gears)
        # One traced operator per padding pattern (which axes of which arguments are padded).
        self._inners: Dict[tuple, Any] = {}
        self._unpadded: Optional[Any] = None
        self._fallback: set = set()
        self._last: Optional[Any] = None
        self.__wrapped__ = func
        self.__name__ = getattr(func, "__name__", "operator")

    def _pad(self, args: tuple) -> Tuple[tuple, tuple, Dict[int, int], List[int]]:
        """Pad the geared dims of the first array argument and the matching axes of the others.

        Axes align from the right, as broadcasting aligns them; another argument's axis of
        extent 1 (a broadcast) or missing axis is left alone. Returns the padded arguments,
        the padding pattern (per argument, per axis: the gear's index or None), the gears by
        dimension and the valid extent of each gear.
        """
        ref = next((a for a in args if _is_array(a)), None)
        dims = sorted(d for d in self._gears if ref is not None and d < ref.ndim)
        gears = {d: _gear_for(ref.shape[d], self._gears[d], d) for d in dims}
        valid = [int(ref.shape[d]) for d in dims]
        out, pattern = [], []
        for a in args:
            flags: List[Optional[int]] = []
            if _is_array(a) and ref is not None:
                flags = [None] * a.ndim
                widths = [(0, 0)] * a.ndim
                for gi, d in enumerate(dims):
                    ax = d - (ref.ndim - a.ndim)
                    if ax >= 0 and a.shape[ax] == ref.shape[d] and (a is ref or a.shape[ax] != 1):
                        widths[ax] = (0, gears[d] - a.shape[ax])
                        flags[ax] = gi
                if any(w[1] for w in widths):
                    a = _pad_array(a, widths)
            out.append(a)
            pattern.append(tuple(flags))
        return tuple(out), tuple(pattern), gears, valid

    def _inner(self, pattern: tuple, ngears: int) -> Any:
        op = self._inners.get(pattern)
        if op is None:
            func = self._func

            def traced(first: Any = _NO_ARG, *rest: Any) -> Any:
                # One named parameter, so that the operator keeps its latest plan for
                # ``get_compiled_op()``.
                args = () if first is _NO_ARG else (first, *rest)
                user, valid = args[:len(args) - ngears], args[len(args) - ngears:]
                padded = [(t, list(f)) for t, f in zip(user, pattern) if any(v is not None for v in f)]
                if valid:
                    _pyasc.gears_begin(list(valid), padded)
                _stack("valid").append(valid)
                try:
                    result = func(*user)
                except ShapeError as e:
                    if not valid:
                        raise
                    # Padding may break a shape rule the unpadded call keeps (`w @ x` with a
                    # padded `x`): that call runs unpadded, which raises any real shape error.
                    raise _GearFallback(str(e)) from None
                finally:
                    _stack("valid").pop()
                outs = tree_leaves(result)
                why = _pyasc.gears_unsupported(outs) if valid else None
                if why:
                    raise _GearFallback(why)
                return result

            traced.__name__ = traced.__qualname__ = self.__name__
            op = self._inners[pattern] = self._make(traced, True)
        return op

    def _run(self, method: str, args: tuple, kwargs: dict) -> Any:
        if kwargs:
            args = bind(self._func, args, kwargs)
        padded, pattern, gears, valid = self._pad(args)
        key = (pattern, tuple(gears.values()))
        if key not in self._fallback:
            inner = self._inner(pattern, len(valid))
            _stack("gears").append(gears)
            try:
                result = getattr(inner, method)(*padded, *valid)
                self._last = inner
                return result
            except _GearFallback:
                self._fallback.add(key)
            finally:
                _stack("gears").pop()
        # The function moves data across a padded dimension: run this call unpadded (traced
        # per shape, with get_max_dim() still giving the gear).
        if self._unpadded is None:
            self._unpadded = self._make(self._func, False)
        self._last = self._unpadded
        _stack("gears").append(gears)
        try:
            return getattr(self._unpadded, method)(*args)
        finally:
            _stack("gears").pop()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Pad the geared dimensions, then run the operator for that gear."""
        if has_dask(args) or has_dask(tuple(kwargs.values())):  # a lazy Dask array (see pyasc.dask)
            from ..dask import call

            return call(self, bind(self._func, args, kwargs) if kwargs else args)
        if has_structure(args) or has_structure(tuple(kwargs.values())):
            # Nested arguments: a geared companion over the flat leaves (see `pyasc.core.pytree`).
            return pytree_call(self, bind(self._func, args, kwargs) if kwargs else args)
        return self._run("__call__", args, kwargs)

    def _with_function(self, func: Callable[..., Any]) -> GearedOperator:
        """Return a geared operator of ``func`` with the same options."""
        return GearedOperator(func, self._make, self._gears)

    def get_compiled_op(self, *args: Any, **kwargs: Any) -> Any:
        """Return the plan for the gear these example arguments fall in.

        With no arguments, the plan compiled most recently.
        """
        if not args and not kwargs:
            if self._last is None:
                raise InvalidArgumentError(f"{self.__name__} has not been compiled yet: call it once or pass "
                                           "example arguments")
            return self._last.get_compiled_op()
        return self._run("get_compiled_op", args, kwargs)

    def _ops(self) -> List[Any]:
        return list(self._inners.values()) + ([self._unpadded] if self._unpadded is not None else [])

    def check_accuracy(self, *args: Any) -> Any:
        """Compare a call on ``args`` with the same function in float64 (``pyasc.check_accuracy``)."""
        from .accuracy import check_accuracy

        return check_accuracy(self, *args)

    def cache_info(self) -> Any:
        """Cache statistics of the geared operator (one compile per gear), summed over its plans."""
        from ._types import CacheInfo

        infos = [op.cache_info() for op in self._ops()] + companion_infos(self)
        return CacheInfo(*(sum(getattr(i, f) for i in infos) for f in CacheInfo._fields))

    def cache_clear(self) -> None:
        """Drop every compiled gear."""
        for op in self._ops():
            op.cache_clear()
        self._fallback.clear()
        clear_companions(self)

    @property
    def options(self) -> Dict[str, Any]:
        """The validated options."""
        return self._make(self._func, True).options

    @property
    def device(self) -> str:
        """The device kind name."""
        return self._make(self._func, False).device

    def __repr__(self) -> str:
        return f"<pyasc.operator {self.__name__} with gears {self._gears}>"


def _valid_extents() -> Optional[tuple]:
    """Return the traced valid extents of the geared trace in progress (None outside one)."""
    s = _stack("valid")
    return s[-1] if s else None


_hooks.register("enter_trace", _enter_trace)
_hooks.register("exit_trace", _exit_trace)
