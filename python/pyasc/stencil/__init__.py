"""The ``@pyasc.stencil_operator`` decorator: relative indexing, boundary modes, time stepping.

``u[-1, 0]`` in the body reads the north neighbour of the cell being computed. The first
argument and every array argument of its shape are such fields; other arguments (and those
named in ``standard_indexing``) are indexed as usual, as with ``numba.stencil``.

One application computes the interior (cells whose whole neighbourhood is inside the grid) as
one fused kernel over shifted views of the input, then the thin border boxes by the boundary
mode. ``iterations=N`` applies the stencil N times in one call; float32/float64 bodies of
arithmetic run in the sweep kernel with temporal blocking (:mod:`pyasc.stencil._sweep`).
Called on traced values (inside an operator, under ``pyasc.grad``) the steps become array ops
of the trace (:mod:`pyasc.stencil._traced`), so stencils fuse and have gradients.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..core import _eager
from ..core._live import register
from ..core.decorators import validate_options
from ..dask import has_dask
from ..errors import DTypeError, InvalidArgumentError, ShapeError, UnsupportedError, at_user_line
from . import _border as border
from . import _sweep as sweep
from . import _traced as traced
from ._expr import record
from ._probe import Neighborhood, SliceField, call_body, halo, probe

__all__ = ["stencil_operator", "StencilOperator", "BOUNDARY_MODES"]

#: Accepted ``boundary`` values and what each does with the cells near the grid's edge.
BOUNDARY_MODES: Dict[str, str] = {
    "fill": "border outputs are cval, not computed (numba.stencil)",
    "constant": "the input is padded with cval (scipy.ndimage mode='constant')",
    "nearest": "the input is padded with its edge values (NumPy pad mode='edge')",
    "reflect": "mirrored with the edge repeated, d c b a | a b c d (scipy.ndimage 'reflect', NumPy 'symmetric')",
    "wrap": "periodic (NumPy pad mode='wrap', scipy.ndimage 'grid-wrap')",
    "skip": "border cells keep the input's values (u_new = u.copy(); u_new[1:-1, 1:-1] = ...)",
    "valid": "only the interior is returned: the output shrinks by the halo",
}
_PADDED = ("constant", "nearest", "reflect", "wrap")


def _neighborhood(value: Any) -> Optional[Neighborhood]:
    if value is None:
        return None
    ok = isinstance(value, (tuple, list)) and all(
        isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                           for v in p) and p[0] <= 0 <= p[1] for p in value)
    if not ok or not value:
        raise InvalidArgumentError(f"neighborhood must be a tuple of (min, max) int pairs with min <= 0 <= max "
                                   f"per axis, such as ((-1, 1), (-1, 1)), not {value!r}")
    return tuple((int(a), int(b)) for a, b in value)


def _iterations(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgumentError(f"iterations must be a whole number of at least 1, not {value!r}")
    return int(value)


class StencilOperator:
    """A stencil operator made by :func:`stencil_operator`; call it like the function."""

    def __init__(self, fn: Callable[..., Any], boundary: str, cval: Any, neighborhood: Optional[Neighborhood],
                 standard_indexing: Tuple[str, ...], iterations: int, settings: Dict[str, Any]):
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "stencil")
        self.__doc__ = fn.__doc__
        self.boundary = boundary
        self.cval = cval
        self.neighborhood = neighborhood
        self.standard_indexing = standard_indexing
        self.iterations = iterations
        self.options = dict(settings, boundary=boundary, cval=cval, neighborhood=neighborhood,
                            standard_indexing=standard_indexing, iterations=iterations)
        self._settings = settings
        self._params = list(inspect.signature(fn).parameters)
        unknown = [n for n in standard_indexing if n not in self._params]
        if unknown:
            raise InvalidArgumentError(f"standard_indexing names {unknown}, which {self.__name__} does not take "
                                       f"(its arguments: {self._params})")
        self._cores: Dict[Any, Any] = {}

    def __repr__(self) -> str:
        return f"<pyasc.StencilOperator {self.__name__} boundary={self.boundary!r}>"

    # -- call ---------------------------------------------------------------------------------

    def __call__(self, *args: Any, iterations: Optional[int] = None, out: Optional[np.ndarray] = None,
                 **kwargs: Any) -> np.ndarray:
        """Apply the stencil (``iterations`` times) to the fields; ``out=`` receives the result."""
        if has_dask(args):  # Dask array fields: a lazy Dask array (see pyasc.dask._stencil)
            from ..dask._stencil import call

            return call(self, args, kwargs, iterations, out)
        steps = self.iterations if iterations is None else _iterations(iterations)
        if _eager.traced(*args):  # inside an operator body or a gradient: array ops of the trace
            if out is not None:
                raise at_user_line(InvalidArgumentError("out= takes a NumPy array; a traced call returns its result"))
            return traced.run(self, args, kwargs, steps)
        arrays, fields, ndim = self._arguments(args)
        if self.neighborhood is not None and len(self.neighborhood) != ndim:
            raise at_user_line(InvalidArgumentError(
                f"neighborhood {self.neighborhood} has {len(self.neighborhood)} axes, the field has {ndim}"))
        if steps > 1 and self.boundary == "valid":
            raise at_user_line(InvalidArgumentError(
                "boundary='valid' shrinks the grid, so it cannot be applied iterations > 1 times"))
        recorded = record(self.__wrapped__, arrays, kwargs, fields, ndim, self.neighborhood)
        if recorded is not None:
            seen, root = recorded
            dtype = root.dtype
        else:
            seen, dtype = probe(self.__wrapped__, arrays, kwargs, fields, ndim, self.neighborhood)
        lo, hi = halo(seen, ndim, self.neighborhood)
        first = arrays[0]
        if steps > 1 and (dtype != first.dtype):
            raise at_user_line(DTypeError(
                f"iterations={steps} feeds each step's output back as the first field, but the body turns "
                f"{first.dtype} into {dtype}; cast the result with .astype({str(first.dtype)!r}) in the body"))
        if recorded is not None and sweep.applies(self.boundary, first.shape, lo, hi):
            result = sweep.run(self, arrays, kwargs, fields, recorded[1], lo, hi, steps)
        else:
            result = self._step(arrays, kwargs, fields, lo, hi, dtype)
            for _ in range(steps - 1):
                arrays = [result] + list(arrays[1:])
                result = self._step(arrays, kwargs, fields, lo, hi, dtype)
        if out is not None:
            return self._write_out(out, result)
        return result

    def _arguments(self, args: Sequence[Any]) -> Tuple[List[Any], Tuple[int, ...], int]:
        if not args:
            raise at_user_line(InvalidArgumentError(f"{self.__name__} takes its field as the first argument"))
        arrays = list(args)
        first = arrays[0]
        if not isinstance(first, np.ndarray):
            first = np.asarray(first)
        if first.ndim not in (1, 2, 3) or first.dtype.kind == "O":
            raise at_user_line(UnsupportedError(
                f"a stencil field is a 1-D, 2-D or 3-D numeric array, not {first.ndim}-D {first.dtype}"))
        arrays[0] = first
        fields = [0]
        for i, a in enumerate(arrays[1:], start=1):
            name = self._params[i] if i < len(self._params) else f"argument {i}"
            if name in self.standard_indexing or not hasattr(a, "shape") or not hasattr(a, "dtype"):
                continue
            if tuple(a.shape) == first.shape:
                arrays[i] = np.asarray(a)
                fields.append(i)
            elif len(a.shape) == first.ndim and first.ndim > 1:
                raise at_user_line(ShapeError(
                    f"{name} has shape {tuple(a.shape)} but the field {self._params[0] if self._params else 'u'} "
                    f"has {first.shape}: fields must share one shape; name {name!r} in standard_indexing to "
                    "index it as usual"))
        return arrays, tuple(fields), first.ndim

    @staticmethod
    def _write_out(out: Any, result: np.ndarray) -> np.ndarray:
        if not isinstance(out, np.ndarray):
            raise at_user_line(InvalidArgumentError(f"out= takes a NumPy array, not {type(out).__name__}"))
        if out.shape != result.shape:
            raise at_user_line(ShapeError(f"out= has shape {out.shape}, the result has {result.shape}"))
        if out.dtype != result.dtype:
            raise at_user_line(DTypeError(f"out= has dtype {out.dtype}, the result has {result.dtype}"))
        np.copyto(out, result)
        return out

    # -- one application ----------------------------------------------------------------------

    def _core(self, fields: Tuple[int, ...], lo: Tuple[int, ...], hi: Tuple[int, ...]) -> Any:
        """Return the interior kernel: the body over shifted views, one pyasc operator per halo."""
        key = (fields, lo, hi)
        core = self._cores.get(key)
        if core is None:
            from .. import _pyasc

            fn = self.__wrapped__

            def interior(*args: Any) -> Any:
                return call_body(fn, args, {}, fields, lambda i, a: SliceField(a, lo, hi))

            interior.__name__ = self.__name__
            opts = dict(self._settings)
            core = _pyasc.Operator(interior, opts["kernel_name"] or self.__name__, opts["device_type"],
                                   opts["op_break_level"], opts)
            self._cores[key] = core
        return core

    def _step(self, arrays: Sequence[Any], kwargs: Dict[str, Any], fields: Tuple[int, ...],
              lo: Tuple[int, ...], hi: Tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        first = arrays[0]
        shape = first.shape
        inner = tuple(max(0, n - a - b) for n, a, b in zip(shape, lo, hi))
        core_out = None
        if all(inner):
            core_out = self._interior(arrays, kwargs, fields, lo, hi)
            dtype = core_out.dtype
        mode = self.boundary
        if mode == "valid":
            return core_out if core_out is not None else np.empty(inner, dtype)
        if mode == "fill":
            result = np.full(shape, self.cval, dtype=dtype)
        elif mode == "skip":
            result = first.astype(dtype, copy=True)
        else:
            result = np.empty(shape, dtype)
        if core_out is not None:
            result[tuple(slice(a, n - b) for n, a, b in zip(shape, lo, hi))] = core_out
        self._border(result, arrays, kwargs, fields, lo, hi)
        return result

    def _border(self, result: np.ndarray, arrays: Sequence[Any], kwargs: Dict[str, Any], fields: Tuple[int, ...],
                lo: Tuple[int, ...], hi: Tuple[int, ...]) -> None:
        """Compute the border boxes of a padded boundary mode into ``result`` (others: nothing)."""
        mode = self.boundary
        if mode not in _PADDED:
            return
        for box in border.border_boxes(result.shape, lo, hi):
            def gathered(i: int, a: np.ndarray, box: border.Box = box) -> SliceField:
                return SliceField(border.gather(np.asarray(a), box, lo, hi, mode, self.cval), lo, hi)

            with np.errstate(all="ignore"):
                value = call_body(self.__wrapped__, arrays, kwargs, fields, gathered)
            result[border.box_slices(box)] = value

    def _interior(self, arrays: Sequence[Any], kwargs: Dict[str, Any], fields: Tuple[int, ...],
                  lo: Tuple[int, ...], hi: Tuple[int, ...]) -> np.ndarray:
        if kwargs:
            bound = inspect.signature(self.__wrapped__).bind(*arrays, **kwargs)
            bound.apply_defaults()
            arrays = list(bound.args)
        return np.asarray(self._core(fields, lo, hi)(*arrays))


def stencil_operator(fn: Optional[Callable[..., Any]] = None, *, boundary: str = "fill", cval: Any = 0.0,
                     neighborhood: Any = None, standard_indexing: Union[str, Sequence[str]] = (),
                     iterations: int = 1, **options: Any) -> Any:
    """Turn a function of relative reads into a stencil operator.

    ``u[-1, 0]`` in the body is the cell one row up from the one being computed. The first
    argument, and every other array argument of the same shape, is read at relative offsets;
    other arguments (``parameters[0]``) and those named in ``standard_indexing`` are indexed
    as usual. Offsets must be constant integers (loops over constant ``range`` unroll).

    Options: ``boundary`` (see ``BOUNDARY_MODES``; default ``"fill"``), ``cval`` (default 0),
    ``neighborhood`` (``((min, max), ...)`` per axis, may be wider than the reads),
    ``standard_indexing``, ``iterations`` (apply N times per call; also a call-time keyword),
    and the options of :func:`pyasc.operator` for the interior kernel. A call also takes
    ``out=`` (an array of the result's shape and dtype, written and returned).
    """
    if not isinstance(boundary, str) or boundary.lower() not in BOUNDARY_MODES:
        raise InvalidArgumentError(f"boundary must be one of {', '.join(map(repr, BOUNDARY_MODES))}, "
                                   f"not {boundary!r}")
    if not isinstance(cval, (int, float, np.number, bool, np.bool_)):
        raise InvalidArgumentError(f"cval must be a number, not {cval!r}")
    hood = _neighborhood(neighborhood)
    names = (standard_indexing,) if isinstance(standard_indexing, str) else tuple(standard_indexing)
    if not all(isinstance(n, str) for n in names):
        raise InvalidArgumentError(f"standard_indexing takes argument names, not {standard_indexing!r}")
    steps = _iterations(iterations)
    settings = validate_options(options)
    if settings["dynamic_shape"] or settings["fused"] or settings["debug"]:
        raise InvalidArgumentError("stencil operators take no dynamic_shape, fused or debug option")

    def wrap(func: Callable[..., Any]) -> StencilOperator:
        if not callable(func):
            raise InvalidArgumentError(f"@pyasc.stencil_operator decorates a function, not {type(func).__name__}")
        return register(StencilOperator(func, boundary.lower(), cval, hood, names, steps, settings))

    if fn is not None:
        return wrap(fn)
    return wrap
