"""``@pyasc.vectorized_operator``: a scalar Python function applied elementwise.

Like ``numba.vectorize``, the decorated function is written for one element and applied to
every element of its broadcast arguments (NumPy broadcasting, Python scalars allowed, NumPy's
result dtype rules). Unlike :func:`pyasc.operator`, the body may branch and loop on the
values: it is compiled from its source into masked SIMD code (``vectorize._compile``).

How a function runs, chosen once per argument types:

* a body without loops becomes one fused elementwise kernel through the ordinary operator
  path (branches are selects), with every operator option applying;
* a body with ``while``/``for`` loops becomes one structured tile kernel whose mask loop
  repeats until every lane of a tile is finished (``pyasc_engine::vectorized``);
* a body without value-dependent control flow that calls functions pyasc cannot compile
  lane by lane (array-level helpers such as an IoU matrix) runs as a whole-array function:
  it is called once with the arrays themselves.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import _pyasc
from ..core.decorators import validate_options
from ..dask import call_elementwise, has_dask
from ..errors import InvalidArgumentError, ShapeError, UnsupportedError, at_user_line
from . import _types as vt
from ._compile import Source, UnknownCall, compile_function, has_value_control_flow
from ._ir import form_chains

__all__ = ["vectorized_operator", "VectorizedOperator"]

_IGNORED = ("gears", "fused")


class _Compiled:
    """The compiled form of one signature of argument types."""

    def __init__(self, mode: str, builder: Any = None, result: Any = None, op: Any = None) -> None:
        self.mode = mode  # "loop", "fused" or "whole"
        self.builder = builder
        self.result = result
        self.op = op
        self.plans: Dict[Tuple[Tuple[int, ...], ...], Any] = {}
        self.chained: List[tuple] = []  # loop mode: the statements with two-op chains


def _is_device_array(a: Any) -> bool:
    return isinstance(a, _pyasc.DeviceArray)


def _arg_type(a: Any) -> Tuple[vt.VType, Any]:
    if type(a) is _pyasc.Tensor:
        return vt.strong(np.dtype(a.dtype)), a
    """Return the type of an argument and the array that carries it."""
    if type(a) is bool:  # exact types: NumPy's float64 and bool_ scalars are strong
        return vt.weak(bool), np.asarray(a)
    if type(a) is int:
        return vt.weak(int), np.asarray(a, dtype=np.int64)
    if type(a) is float:
        return vt.weak(float), np.asarray(a, dtype=np.float64)
    arr = np.asarray(a)
    return vt.strong(arr.dtype), arr


class VectorizedOperator:
    """A scalar function compiled to run elementwise over arrays (see :func:`vectorized_operator`)."""

    def __init__(self, fn: Callable[..., Any], settings: Dict[str, Any]) -> None:
        self.fn = fn
        self.settings = settings
        self.name = settings["kernel_name"] or getattr(fn, "__name__", "vectorized")
        self._src = Source(fn)
        self._cache: Dict[Tuple[vt.VType, ...], _Compiled] = {}
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<pyasc.vectorized_operator {self.name}>"

    def _compiled(self, types: Tuple[vt.VType, ...]) -> _Compiled:
        c = self._cache.get(types)
        if c is not None:
            return c
        for t in types:
            why = vt.check_supported(t)
            if why:
                raise self._src.error(self._src.node, f"argument of {why}", _dtype_error())
        try:
            builder, result = compile_function(self._src, types)
        except UnknownCall:
            if has_value_control_flow(self._src.node):
                raise
            c = _Compiled("whole")
        else:
            if builder.uses_loops():
                c = _Compiled("loop", builder, result)
                c.chained = form_chains(builder.body, builder.regs)
            else:
                c = _Compiled("fused", builder, result)
                opts = {k: v for k, v in self.settings.items() if k not in _IGNORED}
                from ..core.decorators import operator

                c.op = operator(_replay(builder, self.name), **opts)
        self._cache[types] = c
        return c

    def _prepare(self, args: Tuple[Any, ...]) -> Tuple[_Compiled, List[Any], Tuple[vt.VType, ...]]:
        if len(args) != len(self._src.params):
            raise InvalidArgumentError(f"{self.name}() takes {len(self._src.params)} arguments, {len(args)} given")
        typed = [_arg_type(a) for a in args]
        types = tuple(t for t, _ in typed)
        return self._compiled(types), [a for _, a in typed], types

    def __call__(self, *args: Any) -> Any:
        """Apply the function to every element of the broadcast arguments."""
        if has_dask(args):  # Dask arrays: mapped over their aligned blocks (see pyasc.dask)
            return call_elementwise(self, args)
        if any(type(a) is _pyasc.Tensor for a in args):
            return self._traced(args)
        c, arrays, types = self._prepare(args)
        if c.mode == "whole":
            return self.fn(*args)
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError as e:
            raise ShapeError(f"{self.name}(): the arguments do not broadcast together: {e}") from e
        scalar_out = all(a.ndim == 0 for a in arrays) and not any(_is_device_array(a) for a in args)
        device_out = any(_is_device_array(a) for a in args)
        out_dtype = c.result.t.dtype
        if c.mode == "fused":
            direct = _trivial(c, arrays, shape, out_dtype)
            if direct is not None:
                out = direct
            else:
                passed = [a if type(a) in (bool, int, float) or _is_device_array(a) else np.asarray(a)
                          for a in args]
                out = c.op(*passed)
                if device_out or not isinstance(out, np.ndarray):
                    return out
                if out.dtype != out_dtype:  # the tracer's dtype rules agree; this keeps them honest
                    out = out.astype(out_dtype)
        else:
            blocked = _blocks(arrays, shape)
            views, space = blocked if blocked is not None else (arrays, shape)
            key = tuple(a.shape for a in views)
            plan = c.plans.get(key)
            if plan is None:
                b = c.builder
                inputs = [(a.dtype.name, list(a.shape)) for a in views]
                plan = _pyasc.VectorizedPlan(self.name, inputs, out_dtype.name, list(space), b.regs, c.chained)
                c.plans[key] = plan
            out = _pyasc._host_empty(list(space), out_dtype)  # warm pool pages, not fresh ones
            plan.run([a if _viewable(a) else np.ascontiguousarray(a) for a in views], out)
            if blocked is not None:
                # Back from square blocks to C order: (..., hb, wb, B, B) -> (..., hb, B, wb, B).
                final = _pyasc._host_empty(list(shape), out_dtype)
                np.copyto(final.reshape(out.shape[:-4] + (out.shape[-4], BLOCK, out.shape[-3], BLOCK)),
                          out.swapaxes(-3, -2))
                out = final
        if device_out:
            return _pyasc.to_device(out)
        if scalar_out:
            return out[()]
        return out

    def _traced(self, args: Tuple[Any, ...]) -> Any:
        """Apply the function to traced values (inside an operator body or a gradient).

        A body without loops joins the caller's trace as its ops (fused and differentiated
        with it); a body with loops runs on arrays only.
        """
        c = self._prepare(args)[0]
        if c.mode == "fused":
            return c.op(*args)
        if c.mode == "whole":
            return self.fn(*args)
        raise at_user_line(UnsupportedError(
            f"{self.name}: a vectorized operator whose body loops runs on arrays only, so it cannot join a trace "
            "(an operator body or a gradient) and has no gradient rule; call it on arrays, outside the operator, or "
            "write the loop with pyasc ops (a gradient then follows the ops' rules), or give the enclosing function "
            "a rule with pyasc.custom_vjp (its fwd and bwd traced like any body)"))

    def mode(self, *args: Any) -> str:
        """Return how calls with arguments like ``args`` run.

        ``"fused"``: one elementwise kernel via the operator path; ``"loop"``: one tile kernel
        with mask loops; ``"whole"``: the function called once on the whole arrays.
        """
        return self._prepare(args)[0].mode

    def tile_program(self, *args: Any) -> str:
        """Return the tile program a call with ``args`` runs (loop and fused modes)."""
        c, arrays, _ = self._prepare(args)
        if c.mode == "whole":
            raise InvalidArgumentError(f"{self.name} runs as a whole-array function here; it has no tile program")
        if c.mode == "fused":
            return "\n".join(c.op.get_compiled_op(*args).tile_program(i) for i in
                             range(len(c.op.get_compiled_op(*args).kernels())))
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        b = c.builder
        inputs = [(a.dtype.name, list(a.shape)) for a in arrays]
        return _pyasc.VectorizedPlan(self.name, inputs, c.result.t.dtype.name, list(shape), b.regs,
                                     c.chained).tile_program()


def _dtype_error() -> type:
    from ..errors import DTypeError

    return DTypeError


#: Side of the square blocks a looping kernel walks a 2-D (or higher) result in.
BLOCK = 16


def _blocks(arrays: List[np.ndarray], shape: Tuple[int, ...]) -> Optional[Tuple[List[np.ndarray], Tuple[int, ...]]]:
    """Return views of ``arrays`` that walk the last two axes of ``shape`` in square blocks.

    Lanes of one tile of a looping kernel run until the slowest is done; neighbouring points
    (a block of an image) tend to need similar iteration counts, rows of 256 points less so
    (a Mandelbrot grid: 101 M lane-iterations in 16x16 blocks, 140 M in rows of 256). None when
    the last two extents are not multiples of the block or the result is small.
    """
    if len(shape) < 2 or shape[-2] % BLOCK or shape[-1] % BLOCK or shape[-2] * shape[-1] < 64 * BLOCK * BLOCK:
        return None
    nd, (h, w) = len(shape), shape[-2:]
    views = []
    for a in arrays:
        a = a.reshape((1,) * (nd - a.ndim) + a.shape)
        ah, aw = a.shape[-2:]
        hb, bh = (h // BLOCK, BLOCK) if ah == h else (1, 1)
        wb, bw = (w // BLOCK, BLOCK) if aw == w else (1, 1)
        views.append(a.reshape(a.shape[:-2] + (hb, bh, wb, bw)).swapaxes(-3, -2))
    return views, tuple(shape[:-2]) + (h // BLOCK, w // BLOCK, BLOCK, BLOCK)


def _viewable(a: np.ndarray) -> bool:
    return all(s % a.itemsize == 0 for s in a.strides) and a.dtype.isnative


def _trivial(c: _Compiled, arrays: List[np.ndarray], shape: Tuple[int, ...], dtype: np.dtype) -> Optional[np.ndarray]:
    """Return the result without a kernel when the function returns an argument or a constant."""
    stmts = c.builder.body
    if len(stmts) and stmts[-1][0] == "store":
        src = stmts[-1][1]
        _d, const = c.builder.regs[src]
        if const is not None:
            return np.full(shape, const, dtype=dtype)
        for s in stmts:
            if s[0] == "load" and s[1] == src:
                return np.array(np.broadcast_to(arrays[s[2]], shape), dtype=dtype)
    return None


def _replay(builder: Any, name: str) -> Callable[..., Any]:
    """Make a traceable function computing ``builder``'s (loop-free) statements with pyasc ops."""
    import pyasc

    regs, body = builder.regs, builder.body

    def unary(op: str) -> Callable[[Any], Any]:
        f = vt.UNARY_UFUNC.get(op)
        return f if f is not None else getattr(pyasc, op)

    def run(*xs: Any) -> Any:
        vals: Dict[int, Any] = {}
        for i, (d, const) in enumerate(regs):
            if const is not None:
                vals[i] = np.dtype(d).type(const)
        for s in body:
            k = s[0]
            if k == "load":
                vals[s[1]] = xs[s[2]]
            elif k == "unary":
                vals[s[2]] = unary(s[1])(vals[s[3]])
            elif k == "binary":
                vals[s[2]] = vt.BINARY_UFUNC[s[1]](vals[s[3]], vals[s[4]])
            elif k == "select":
                vals[s[1]] = np.where(vals[s[2]], vals[s[3]], vals[s[4]])
            elif k == "cast":
                x, d = vals[s[2]], np.dtype(regs[s[1]][0])
                vals[s[1]] = x.astype(d) if hasattr(x, "astype") else d.type(x)
            elif k == "copy":
                vals[s[1]] = vals[s[2]]
            elif k == "store":
                return vals[s[1]]
        raise AssertionError("a compiled body ends with its store")

    run.__name__ = name
    run.__qualname__ = name
    return run


def vectorized_operator(
    fn: Optional[Callable[..., Any]] = None, **options: Any
) -> Union[VectorizedOperator, Callable[[Callable[..., Any]], VectorizedOperator]]:
    """Compile a scalar function into an elementwise operator over arrays.

    Use as ``@pyasc.vectorized_operator`` or ``@pyasc.vectorized_operator(device_type="npu")``.
    The body is written for one element (like ``numba.vectorize``) and may use ``if``/``elif``/
    ``else``, conditional expressions, ``and``/``or``/``not``, early ``return``, ``while`` loops
    and ``for i in range(...)``, local variables, ``math.*``/``np.*``/``pyasc.*`` elementwise
    functions, ``abs``, ``min``, ``max``. It is compiled from its source into masked SIMD code,
    never called per element. Arguments broadcast as in NumPy; Python numbers are weakly typed;
    the result dtype follows NumPy's rules. A construct without an elementwise meaning raises
    :class:`pyasc.TraceError` naming its line; a body without control flow that calls other
    (array-level) functions is called once on the whole arrays instead.

    Options are those of :func:`pyasc.operator` (``device_type``, ``kernel_name``,
    ``precision_mode``, ``debug``, ...), applied where the body compiles to an ordinary fused
    kernel; ``gears`` and ``fused`` do not apply and are rejected.
    """
    for k in _IGNORED:
        if k in options:
            raise InvalidArgumentError(f"the option {k!r} does not apply to a vectorized operator")
    settings = validate_options(options)

    def wrap(f: Callable[..., Any]) -> VectorizedOperator:
        if not callable(f):
            raise InvalidArgumentError(f"@pyasc.vectorized_operator decorates a function, not {type(f).__name__}")
        return VectorizedOperator(f, settings)

    if fn is not None:
        return wrap(fn)
    return wrap
