"""Compiling a scalar Python function's source into masked SSA (``vectorize._ir``).

The function is read with ``inspect.getsource`` and walked with ``ast``. Every lane of a tile
runs the same instructions; Python control flow on values becomes masks:

* ``if``/``elif``/``else`` and conditional expressions: both sides are computed, under the
  masks of the lanes that take them, and variables are merged with selects afterwards;
* ``and``/``or``/``not`` and comparison chains: masks combined lane by lane (nothing raises,
  so evaluating the right side on every lane is safe: ``x != 0 and 1 / x > 2`` is fine);
* ``return``: the value is selected into a result register for the lanes still running,
  which then count as done (a ``done`` mask) and skip the rest;
* ``while`` and ``for i in range(...)``: a mask loop that repeats while any lane of the tile
  is still looping; finished lanes keep their values (selects) until the slowest is done.

A construct that has no lane-wise meaning raises :class:`~pyasc.errors.TraceError` naming the
file and line. Types follow NumPy's rules with Python numbers weak
(``vectorize._types``); the types of loop state and of the result are found by compiling
again with the previous pass's types until they stop changing.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
import textwrap
from collections import ChainMap
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import DTypeError, TraceError
from . import _types as vt
from ._calls import resolve_call
from ._ir import Builder, Value, coalesce_copies, eliminate_dead, narrow_floats

#: Marks the lanes that no longer run (after a return on every lane).
DEAD = "dead"
_RESULT, _DONE = "%result", "%done"

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
           ast.LShift: "left_shift", ast.RShift: "right_shift"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}


class UnknownCall(TraceError):
    """A call the compiler cannot turn into lane-wise instructions."""


class Source:
    """A function's parsed source and where it lives."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise TraceError(f"the source of {getattr(fn, '__name__', fn)!r} is not available to compile: {e}") from e
        self.filename = inspect.getsourcefile(fn) or "<unknown>"
        self.first = first
        tree = ast.parse(textwrap.dedent("".join(lines)))
        defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not defs or isinstance(defs[0], ast.AsyncFunctionDef):
            raise TraceError(f"{self.filename}:{first}: a vectorized operator must be a plain def function")
        self.node: ast.FunctionDef = defs[0]
        self.fn = fn
        # Looked up when a signature is compiled: globals defined after the decorator count.
        nonlocals = inspect.getclosurevars(fn).nonlocals
        self.names = ChainMap(nonlocals, getattr(fn, "__globals__", {}), vars(builtins))
        a = self.node.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            raise TraceError(f"{self.where(self.node)}: a vectorized operator takes plain positional arguments")
        self.params = [p.arg for p in a.posonlyargs + a.args]

    def line(self, node: ast.AST) -> int:
        """Return the file line of ``node``."""
        return self.first + getattr(node, "lineno", 1) - 1

    def where(self, node: ast.AST) -> str:
        """``file:line`` of ``node``."""
        return f"{self.filename}:{self.line(node)}"

    def error(self, node: ast.AST, msg: str, cls: type = TraceError) -> TraceError:
        """Make a typed error naming ``node``'s line."""
        e = cls(f"{self.where(node)}: {msg}")
        e.filename, e.lineno = self.filename, self.line(node)
        return e


def has_value_control_flow(node: ast.AST) -> bool:
    """Tell whether a function body branches or loops (if, while, for, and/or, conditional expressions)."""
    flow = (ast.If, ast.While, ast.For, ast.IfExp, ast.BoolOp, ast.Try, ast.With)
    return any(isinstance(n, flow) for n in ast.walk(node))


def _assigned(stmts: Sequence[ast.stmt]) -> List[str]:
    out: List[str] = []
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in out:
                out.append(n.id)
    return out


def _has_return(stmts: Sequence[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))


class Compiler:
    """One compilation pass over a function for one signature of argument types."""

    def __init__(self, src: Source, args: Sequence[vt.VType], hints: Dict[Any, vt.VType]) -> None:
        self.src = src
        self.b = Builder()
        self.hints = hints
        self.seen: Dict[Any, vt.VType] = {}
        self.env: Dict[str, Value] = {}
        self.cur: Any = None  # None: every lane; DEAD; or a bool Value
        self.loop_depth = 0
        if len(args) != len(src.params):
            raise TraceError(f"{src.where(src.node)}: {src.node.name}() takes {len(src.params)} arguments, "
                             f"{len(args)} given")
        for i, (name, t) in enumerate(zip(src.params, args)):
            reg = self.b.new(t.dtype)
            self.b.emit(("load", reg, i))
            self.env[name] = Value(reg, t)

    # ----- values -------------------------------------------------------------------------
    def reg(self, v: Value, dtype: np.dtype, node: ast.AST) -> int:
        """``v`` as a register of ``dtype`` (constants placed, other dtypes cast)."""
        dtype = np.dtype(dtype)
        if v.reg is None:
            try:
                return self.b.const(dtype, v.const)
            except (OverflowError, ValueError) as e:
                raise self.src.error(node, f"the constant {v.const!r} does not fit {dtype}: {e}", DTypeError) from e
        if v.t.dtype == dtype:
            return v.reg
        return self.b.op("cast", None, dtype, v.reg)

    def as_type(self, v: Value, t: vt.VType, node: ast.AST) -> Value:
        """``v`` converted to type ``t``."""
        return Value(self.reg(v, t.dtype, node), t)

    def check(self, t: vt.VType, node: ast.AST) -> vt.VType:
        why = vt.check_supported(t)
        if why:
            raise self.src.error(node, why, DTypeError)
        return t

    def binary(self, op: str, a: Value, b: Value, node: ast.AST) -> Value:
        try:
            operand, res = vt.binary(op, a.t, b.t)
        except (TypeError, KeyError) as e:
            raise self.src.error(node, f"{op} is not defined for {a.t.dtype} and {b.t.dtype}", DTypeError) from e
        self.check(res, node)
        self.check(vt.strong(operand), node)
        ra, rb = self.reg(a, operand, node), self.reg(b, operand, node)
        return Value(self.b.op("binary", op, res.dtype, ra, rb), res)

    def unary(self, op: str, a: Value, node: ast.AST) -> Value:
        try:
            operand, res = vt.unary(op, a.t)
        except (TypeError, KeyError) as e:
            raise self.src.error(node, f"{op} is not defined for {a.t.dtype}", DTypeError) from e
        self.check(res, node)
        self.check(vt.strong(operand), node)
        return Value(self.b.op("unary", op, res.dtype, self.reg(a, operand, node)), res)

    def cast(self, v: Value, t: vt.VType, node: ast.AST) -> Value:
        return Value(self.reg(v, self.check(t, node).dtype, node), t)

    def truth(self, v: Value, node: ast.AST) -> Value:
        """``bool(v)`` per lane."""
        if v.t.dtype.kind == "b":
            return v
        return self.binary("ne", v, Value(None, vt.weak(int), 0), node)

    def select(self, c: Value, a: Value, b: Value, node: ast.AST) -> Value:
        t = vt.join(a.t, b.t)
        self.check(t, node)
        ra, rb = self.reg(a, t.dtype, node), self.reg(b, t.dtype, node)
        return Value(self.b.op("select", None, t.dtype, self.reg(c, np.dtype(bool), node), ra, rb), t)

    def logic(self, op: str, a: Value, b: Value, node: ast.AST) -> Value:
        return self.binary(op, self.truth(a, node), self.truth(b, node), node)

    def mask_and(self, m: Any, c: Value, node: ast.AST) -> Any:
        if m is DEAD:
            return DEAD
        return c if m is None else self.logic("and", m, c, node)

    def mask_or(self, a: Any, b: Any, node: ast.AST) -> Any:
        if a is DEAD:
            return b
        if b is DEAD:
            return a
        if a is None or b is None:
            return None
        return self.logic("or", a, b, node)

    def mask_not(self, m: Value, node: ast.AST) -> Value:
        return self.unary("not", self.truth(m, node), node)

    # ----- expressions --------------------------------------------------------------------
    def expr(self, n: ast.expr) -> Value:
        meth = getattr(self, "e_" + type(n).__name__, None)
        if meth is None:
            raise self.src.error(n, f"{type(n).__name__} expressions are not supported in a vectorized operator "
                                    "(only numbers, arithmetic, comparisons, and/or/not, conditional expressions "
                                    "and calls of elementwise functions)")
        return meth(n)

    def e_Constant(self, n: ast.Constant) -> Value:
        if isinstance(n.value, (bool, int, float)):
            return Value(None, vt.weak(type(n.value)), n.value)
        raise self.src.error(n, f"the constant {n.value!r} is not a number")

    def e_Name(self, n: ast.Name) -> Value:
        if n.id in self.env:
            return self.env[n.id]
        obj = self.src.names.get(n.id, _MISSING)
        if obj is _MISSING:
            raise self.src.error(n, f"name {n.id!r} is not defined (or not set on every path before this line)")
        return self.constant(obj, n)

    def constant(self, obj: Any, n: ast.AST) -> Value:
        if isinstance(obj, (bool, int, float)):
            return Value(None, vt.weak(type(obj)), obj)
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            return Value(None, self.check(vt.strong(obj.dtype), n), obj.item())
        raise self.src.error(n, f"{type(obj).__name__} values cannot be used in a vectorized operator")

    def e_Attribute(self, n: ast.Attribute) -> Value:
        obj = self.static(n)
        return self.constant(obj, n)

    def static(self, n: ast.expr) -> Any:
        """Return the Python object a name or attribute chain outside the function refers to."""
        if isinstance(n, ast.Name):
            if n.id in self.env:
                raise self.src.error(n, f"{n.id!r} is a value here, not a function or module")
            if n.id not in self.src.names:
                raise self.src.error(n, f"name {n.id!r} is not defined")
            return self.src.names[n.id]
        if isinstance(n, ast.Attribute):
            base = self.static(n.value)
            try:
                return getattr(base, n.attr)
            except AttributeError as e:
                raise self.src.error(n, f"{ast.unparse(n)} does not exist") from e
        raise self.src.error(n, f"{ast.unparse(n)} is not a function or module name")

    def e_BinOp(self, n: ast.BinOp) -> Value:
        op = _BINOPS.get(type(n.op))
        if op is None:
            raise self.src.error(n, f"the operator {type(n.op).__name__} is not supported")
        return self.binary(op, self.expr(n.left), self.expr(n.right), n)

    def e_UnaryOp(self, n: ast.UnaryOp) -> Value:
        v = self.expr(n.operand)
        if isinstance(n.op, ast.Not):
            return self.unary("not", self.truth(v, n), n)
        if isinstance(n.op, ast.USub):
            if v.reg is None and not isinstance(v.const, bool):
                return Value(None, v.t, -v.const)
            return self.unary("neg", v, n)
        if isinstance(n.op, ast.UAdd):
            return v
        return self.unary("not", v, n)  # ~x: bitwise on integers and bools

    def e_Compare(self, n: ast.Compare) -> Value:
        left = self.expr(n.left)
        out: Optional[Value] = None
        for op, right_node in zip(n.ops, n.comparators):
            name = _CMPOPS.get(type(op))
            if name is None:
                raise self.src.error(n, f"the comparison {type(op).__name__} is not supported")
            right = self.expr(right_node)
            c = self.binary(name, left, right, n)
            out = c if out is None else self.logic("and", out, c, n)
            left = right
        assert out is not None
        return out

    def e_BoolOp(self, n: ast.BoolOp) -> Value:
        acc = self.expr(n.values[0])
        for nxt in n.values[1:]:
            b = self.expr(nxt)
            if acc.t.dtype.kind == "b" and b.t.dtype.kind == "b":
                acc = self.logic("and" if isinstance(n.op, ast.And) else "or", acc, b, n)
                continue
            t = self.truth(acc, n)
            acc = self.select(t, b, acc, n) if isinstance(n.op, ast.And) else self.select(t, acc, b, n)
        return acc

    def e_IfExp(self, n: ast.IfExp) -> Value:
        c = self.truth(self.expr(n.test), n)
        return self.select(c, self.expr(n.body), self.expr(n.orelse), n)

    def e_Call(self, n: ast.Call) -> Value:
        if n.keywords:
            raise self.src.error(n, "keyword arguments are not supported in calls inside a vectorized operator")
        try:
            fn = self.static(n.func)
        except TraceError as e:
            raise self.src.error(n, str(e).split(": ", 1)[-1], UnknownCall) from e
        return resolve_call(self, fn, [self.expr(a) for a in n.args], n)

    # ----- statements ---------------------------------------------------------------------
    def block(self, stmts: Sequence[ast.stmt]) -> None:
        for s in stmts:
            if self.cur is DEAD:
                return
            meth = getattr(self, "s_" + type(s).__name__, None)
            if meth is None:
                raise self.src.error(s, f"{type(s).__name__} statements are not supported in a vectorized operator")
            meth(s)

    def s_Pass(self, s: ast.Pass) -> None:
        pass

    def s_Expr(self, s: ast.Expr) -> None:
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # a docstring
        raise self.src.error(s, "an expression statement has no effect in a vectorized operator")

    def assign_to(self, target: ast.expr, v: Value) -> None:
        if not isinstance(target, ast.Name):
            raise self.src.error(target, "only plain names can be assigned in a vectorized operator")
        self.env[target.id] = v

    def s_Assign(self, s: ast.Assign) -> None:
        for target in s.targets:
            if isinstance(target, ast.Tuple) and isinstance(s.value, ast.Tuple):
                if len(target.elts) != len(s.value.elts):
                    raise self.src.error(s, "tuple assignment with different lengths")
                vals = [self.expr(e) for e in s.value.elts]
                for t, v in zip(target.elts, vals):
                    self.assign_to(t, v)
            else:
                self.assign_to(target, self.expr(s.value))

    def s_AnnAssign(self, s: ast.AnnAssign) -> None:
        if s.value is not None:
            self.assign_to(s.target, self.expr(s.value))

    def s_AugAssign(self, s: ast.AugAssign) -> None:
        if not isinstance(s.target, ast.Name):
            raise self.src.error(s, "only plain names can be assigned in a vectorized operator")
        op = _BINOPS.get(type(s.op))
        if op is None:
            raise self.src.error(s, f"the operator {type(s.op).__name__} is not supported")
        self.env[s.target.id] = self.binary(op, self.e_Name(ast.Name(s.target.id, ast.Load(), lineno=s.lineno)),
                                            self.expr(s.value), s)

    def s_Return(self, s: ast.Return) -> None:
        if s.value is None:
            raise self.src.error(s, "a vectorized operator must return a number")
        if isinstance(s.value, ast.Tuple):
            raise self.src.error(s, "a vectorized operator returns one number per element, not a tuple")
        v = self.expr(s.value)
        self.seen[_RESULT] = vt.join(self.seen.get(_RESULT, v.t), v.t)
        rt = self.hints.get(_RESULT, v.t)
        v = self.cast(v, rt, s)
        if self.cur is None:
            self.env[_RESULT] = v
            self.env[_DONE] = Value(None, vt.strong(bool), True)
        else:
            old = self.env.get(_RESULT)
            self.env[_RESULT] = v if old is None else self.select(self.cur, v, old, s)
            done = self.env.get(_DONE)
            self.env[_DONE] = self.cur if done is None else self.logic("or", done, self.cur, s)
        self.cur = DEAD

    def s_If(self, s: ast.If) -> None:
        c = self.truth(self.expr(s.test), s)
        start, env0 = self.cur, dict(self.env)
        self.cur = self.mask_and(start, c, s)
        self.block(s.body)
        then_env, then_cur = self.env, self.cur
        self.env, self.cur = dict(env0), start
        if s.orelse:
            self.cur = self.mask_and(start, self.mask_not(c, s), s)
            self.block(s.orelse)
        else_env, else_cur = self.env, self.cur
        if not s.orelse:
            else_cur = self.mask_and(start, self.mask_not(c, s), s) if _has_return(s.body) else start
        self.env = self.merge(c, then_env, then_cur is DEAD, else_env, else_cur is DEAD, s)
        if _has_return(s.body) or _has_return(s.orelse):
            self.cur = self.mask_or(then_cur, else_cur, s)
        else:
            self.cur = start

    def merge(self, c: Value, a: Dict[str, Value], a_dead: bool, b: Dict[str, Value], b_dead: bool,
              node: ast.AST) -> Dict[str, Value]:
        out: Dict[str, Value] = {}
        for name in list(dict.fromkeys([*a, *b])):
            va, vb = a.get(name), b.get(name)
            if name == _DONE:
                if va is None or vb is None or va is vb:
                    out[name] = va or vb  # type: ignore[assignment]
                else:
                    out[name] = self.logic("or", va, vb, node)
                continue
            if name != _RESULT and (a_dead or b_dead):
                keep = vb if a_dead else va
                if keep is not None:
                    out[name] = keep
                continue
            if va is None or vb is None or va is vb:
                out[name] = va or vb  # type: ignore[assignment]
            else:
                out[name] = self.select(c, va, vb, node)
        return out

    def s_While(self, s: ast.While) -> None:
        if s.orelse:
            raise self.src.error(s, "while ... else is not supported in a vectorized operator")
        self.loop(s, s.body, lambda: self.expr(s.test), None, None)

    def s_For(self, s: ast.For) -> None:
        if s.orelse:
            raise self.src.error(s, "for ... else is not supported in a vectorized operator")
        it = s.iter
        ok = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
            and self.src.names.get("range") is range and 1 <= len(it.args) <= 3 and not it.keywords
        if not ok or not isinstance(s.target, ast.Name):
            raise self.src.error(s, "only `for name in range(...)` loops are supported in a vectorized operator")
        args = [self.expr(a) for a in it.args]  # type: ignore[union-attr]
        start = args[0] if len(args) > 1 else Value(None, vt.weak(int), 0)
        stop = args[1] if len(args) > 1 else args[0]
        step = 1
        if len(args) == 3:
            st = args[2]
            if st.reg is not None or isinstance(st.const, bool) or not isinstance(st.const, int) or st.const == 0:
                raise self.src.error(s, "the step of range() must be a nonzero integer constant")
            step = st.const
        for v in (start, stop):
            if v.t.dtype.kind not in "iub":
                raise self.src.error(s, f"range() takes integers, not {v.t.dtype}", DTypeError)
        counter = f"%for{s.lineno}.{s.col_offset}"
        self.env[counter] = start
        stop_name = counter + ".stop"
        self.env[stop_name] = stop
        def test() -> Value:
            return self.binary("lt" if step > 0 else "gt", self.env[counter], self.env[stop_name], s)

        self.loop(s, s.body, test, (s.target.id, counter), step)
        del self.env[stop_name]

    def loop(self, s: ast.stmt, body: List[ast.stmt], test: Callable[[], Value],
             counter: Optional[Tuple[str, str]], step: Optional[int]) -> None:
        for n in ast.walk(s):
            if isinstance(n, (ast.Break, ast.Continue)):
                raise self.src.error(n, f"{type(n).__name__.lower()} is not supported in a vectorized operator; "
                                        "put the condition in the loop's test")
        m0 = self.cur
        returns = _has_return(body)
        names = [n for n in _assigned(body) if n in self.env or (("loop", s.lineno, s.col_offset, n) in self.hints)]
        if counter:
            names = [counter[1], *[n for n in names if n != counter[1]]]
            if counter[0] not in names and (counter[0] in self.env or ("loop", s.lineno, s.col_offset,
                                                                         counter[0]) in self.hints):
                names.append(counter[0])
        if returns:
            names += [_RESULT, _DONE]
        live = self.live_after(s)
        carried: Dict[str, Tuple[int, vt.VType]] = {}
        for name in names:
            key = ("loop", s.lineno, s.col_offset, name)
            init = self.env.get(name)
            if init is None:
                hint = self.hints.get(_RESULT) if name == _RESULT else self.hints.get(key)
                init = self.zero(hint or (vt.strong(bool) if name == _DONE else None), name)
                if init is None:
                    continue
            t = vt.join(init.t, self.hints[key]) if key in self.hints else init.t
            if name == _RESULT and _RESULT in self.hints:
                t = self.hints[_RESULT]
            reg = self.b.new(self.check(t, s).dtype)
            self.b.emit(("copy", reg, self.reg(init, t.dtype, s)))
            carried[name] = (reg, t)
            self.env[name] = Value(reg, t)
        c = self.truth(test(), s)
        forever = c.reg is None and bool(c.const)  # `while True`: lanes leave by returning only
        first = self.mask_and(m0, c, s)
        active = self.b.new(np.dtype(bool))
        self.b.emit(("copy", active, self.reg(first, np.dtype(bool), s) if first is not DEAD
                     else self.b.const(np.dtype(bool), False)))
        act = Value(active, vt.strong(bool))
        self.b.stack.append([])
        self.cur = act
        self.loop_depth += 1
        if counter:
            self.env[counter[0]] = self.env[counter[1]]
        self.block(body)
        self.loop_depth -= 1
        end_cur = self.cur
        if counter and end_cur is not DEAD:
            self.env[counter[1]] = self.binary("add", self.env[counter[1]], Value(None, vt.weak(int), step), s)
        updates = []
        for name, (reg, t) in carried.items():
            key = ("loop", s.lineno, s.col_offset, name)
            new = self.env.get(name)
            if new is None or new.reg == reg:
                continue
            self.seen[key] = vt.join(self.seen.get(key, new.t), vt.join(t, new.t))
            r = self.reg(new, t.dtype, s)
            if name in (_RESULT, _DONE) or name not in live:
                updates.append((reg, r))
            else:
                updates.append((reg, self.b.op("select", None, t.dtype, active, r, reg)))
        for name in _assigned(body) + ([counter[0]] if counter else []):
            if name not in carried and name in self.env and name in live:
                self.seen[("loop", s.lineno, s.col_offset, name)] = self.env[name].t
        for reg, r in updates:
            self.b.emit(("copy", reg, r))
        for name, (reg, t) in carried.items():
            self.env[name] = Value(reg, t)
        nxt = self.mask_and(end_cur, self.truth(test(), s), s) if end_cur is not DEAD else DEAD
        nreg = self.reg(nxt, np.dtype(bool), s) if nxt is not DEAD else self.b.const(np.dtype(bool), False)
        self.b.emit(("copy", active, nreg))
        loop_body = self.b.stack.pop()
        regs = [reg for reg, _ in carried.values()] + [active]
        self.b.emit(("while", active, regs, loop_body))
        for name, (reg, t) in carried.items():
            self.env[name] = Value(reg, t)
        if counter:
            del self.env[counter[1]]
        if forever:
            self.cur = DEAD
        elif returns and m0 is not DEAD:
            notdone = self.mask_not(self.env[_DONE], s)
            self.cur = notdone if m0 is None else self.logic("and", m0, notdone, s)
        else:
            self.cur = m0

    def zero(self, t: Optional[vt.VType], name: str) -> Optional[Value]:
        if t is None:
            return None
        return Value(None, t, False if t.dtype.kind == "b" else 0)

    def live_after(self, loop: ast.stmt) -> set:
        """Names a loop's state may be read under after the loop (all of them in nested loops)."""
        inside = {id(n) for n in ast.walk(loop)}
        if self.loop_depth > 0:
            return set(_assigned([loop])) | {n.id for n in ast.walk(self.src.node) if isinstance(n, ast.Name)}
        return {n.id for n in ast.walk(self.src.node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in inside}

    def run(self) -> Value:
        """Compile the function's body; returns the result value."""
        self.block(self.src.node.body)
        if self.cur is not DEAD:
            last = self.src.node.body[-1]
            raise self.src.error(last, "a vectorized operator must return a value on every path "
                                       "(this function can reach its end without a return)")
        return self.env[_RESULT]


_MISSING = object()


def compile_function(src: Source, args: Sequence[vt.VType]) -> Tuple[Builder, Value]:
    """Compile ``src`` for arguments of types ``args``; returns the builder and the result."""
    hints: Dict[Any, vt.VType] = {}
    for _ in range(8):
        c = Compiler(src, args, hints)
        result = c.run()
        new = dict(hints)
        for k, t in c.seen.items():
            new[k] = vt.join(hints[k], t) if k in hints else t
        if new == hints:
            c.b.emit(("store", c.reg(result, result.t.dtype, src.node)))
            c.b.stack[0] = coalesce_copies(eliminate_dead(narrow_floats(c.b.body, c.b.regs)))
            return c.b, result
        hints = new
    raise src.error(src.node, "the types of this function's variables do not settle (a loop keeps widening them)")


__all__ = ["Source", "Compiler", "compile_function", "has_value_control_flow", "UnknownCall", "math"]
