"""Calls inside a vectorized operator: which Python functions become which lane-wise ops.

Supported: the builtins ``abs``, ``min``, ``max`` (Python's semantics: ``min(a, b)`` is
``b if b < a else a``, so NaN handling matches a scalar call), ``float``, ``int``, ``bool``;
``math`` functions (computed in float64 and weakly typed, as Python floats); NumPy ufuncs
with a pyasc op, ``np.where``, ``np.clip`` and NumPy scalar types (casts); ``pyasc``'s
elementwise functions. Any other callable raises ``UnknownCall``.
"""

from __future__ import annotations

import ast
import builtins
import math
from typing import TYPE_CHECKING, Any, Dict, List, Tuple

import numpy as np

from . import _types as vt
from ._ir import Value

if TYPE_CHECKING:
    from ._compile import Compiler

_MATH_UNARY = {"sqrt": "sqrt", "exp": "exp", "expm1": "expm1", "log2": "log2", "log10": "log10", "log1p": "log1p",
               "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
               "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh",
               "atanh": "arctanh", "fabs": "abs", "erf": "erf", "erfc": "erfc", "degrees": "rad2deg",
               "radians": "deg2rad", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite"}
_MATH_INT = {"floor": "floor", "ceil": "ceil", "trunc": "trunc"}
_MATH_BINARY = {"pow": "pow", "atan2": "arctan2", "hypot": "hypot", "copysign": "copysign", "fmod": "fmod"}


def _table() -> Dict[int, Tuple[str, Any]]:
    """id(callable) -> (kind, detail) for every callable with a lane-wise meaning."""
    t: Dict[int, Tuple[str, Any]] = {}
    for name, op in _MATH_UNARY.items():
        t[id(getattr(math, name))] = ("math1", op)
    for name, op in _MATH_INT.items():
        t[id(getattr(math, name))] = ("mathint", op)
    for name, op in _MATH_BINARY.items():
        t[id(getattr(math, name))] = ("math2", op)
    t[id(math.log)] = ("mathlog", None)
    t[id(builtins.abs)] = ("unary", "abs")
    t[id(builtins.min)] = ("minmax", "lt")
    t[id(builtins.max)] = ("minmax", "gt")
    t[id(builtins.float)] = ("pycast", float)
    t[id(builtins.int)] = ("pycast", int)
    t[id(builtins.bool)] = ("pycast", bool)
    for uname, (kind, op) in vt.UFUNC_OP.items():
        uf = getattr(np, uname, None)
        if isinstance(uf, np.ufunc):
            t.setdefault(id(uf), (kind, op))
    t[id(np.where)] = ("where", None)
    t[id(np.clip)] = ("clip", None)
    for d in vt.SUPPORTED:
        t[id(d.type)] = ("npcast", d)
    import pyasc  # the package, imported by now

    for name in vt.UNARY_KIND:
        f = getattr(pyasc, name, None)
        if callable(f):
            t.setdefault(id(f), ("unary", name))
    for name, op in (("minimum", "minimum"), ("maximum", "maximum")):
        f = getattr(pyasc, name, None)
        if callable(f):
            t.setdefault(id(f), ("binary", op))
    for name, kind2 in (("where", "where"), ("clip", "clip")):
        f = getattr(pyasc, name, None)
        if callable(f):
            t.setdefault(id(f), (kind2, None))
    return t


_TABLE: Dict[int, Tuple[str, Any]] = {}


def _lookup(fn: Any) -> Any:
    if not _TABLE:
        _TABLE.update(_table())
    return _TABLE.get(id(fn))


def _arity(c: Compiler, node: ast.Call, args: List[Value], n: int, name: str) -> None:
    if len(args) != n:
        raise c.src.error(node, f"{name}() takes {n} argument{'s' if n != 1 else ''} here, not {len(args)}")


def resolve_call(c: Compiler, fn: Any, args: List[Value], node: ast.Call) -> Value:
    """Compile ``fn(*args)`` per lane (``UnknownCall`` when ``fn`` has no lane-wise meaning)."""
    from ._compile import UnknownCall

    entry = _lookup(fn)
    name = getattr(fn, "__name__", repr(fn))
    if entry is None:
        raise c.src.error(node, f"{name}() is not an elementwise function pyasc can compile into a vectorized "
                                "operator (use math.*, np.* ufuncs, pyasc.* elementwise functions, abs, min, max, "
                                "float, int, bool)", UnknownCall)
    kind, op = entry
    f64 = vt.strong(np.float64)

    def to_f64(v: Value) -> Value:
        return c.cast(v, f64, node)

    def weaken(v: Value) -> Value:
        return Value(v.reg, vt.VType(v.t.dtype, v.t.dtype.kind != "b"), v.const)

    if kind == "unary":
        _arity(c, node, args, 1, name)
        return c.unary(op, args[0], node)
    if kind == "binary":
        _arity(c, node, args, 2, name)
        return c.binary(op, args[0], args[1], node)
    if kind == "math1":
        _arity(c, node, args, 1, name)
        return weaken(c.unary(op, to_f64(args[0]), node))
    if kind == "mathint":
        _arity(c, node, args, 1, name)
        r = c.unary(op, to_f64(args[0]), node)
        return c.cast(r, vt.weak(int), node)
    if kind == "math2":
        _arity(c, node, args, 2, name)
        return weaken(c.binary(op, to_f64(args[0]), to_f64(args[1]), node))
    if kind == "mathlog":
        if len(args) not in (1, 2):
            _arity(c, node, args, 1, name)
        r = c.unary("log", to_f64(args[0]), node)
        if len(args) == 2:
            r = c.binary("div", r, c.unary("log", to_f64(args[1]), node), node)
        return weaken(r)
    if kind == "minmax":
        if len(args) < 2:
            raise c.src.error(node, f"{name}() of one value per lane needs at least two arguments")
        acc = args[0]
        for b in args[1:]:
            acc = c.select(c.binary(op, b, acc, node), b, acc, node)
        return acc
    if kind == "pycast":
        _arity(c, node, args, 1, name)
        v = args[0]
        if op is bool:
            return c.truth(v, node)
        if op is int and v.t.dtype.kind == "f":
            v = c.unary("trunc", v, node)
        return c.cast(v, vt.weak(op), node)
    if kind == "npcast":
        _arity(c, node, args, 1, name)
        return c.cast(args[0], vt.strong(op), node)
    if kind == "where":
        _arity(c, node, args, 3, name)
        return c.select(c.truth(args[0], node), args[1], args[2], node)
    if kind == "clip":
        _arity(c, node, args, 3, name)
        return c.binary("minimum", c.binary("maximum", args[0], args[1], node), args[2], node)
    raise c.src.error(node, f"{name}() cannot be compiled", UnknownCall)  # pragma: no cover


__all__ = ["resolve_call"]
