"""Differential fuzzer: random NumPy programs run by pyasc and by NumPy on the same inputs.

A program is Python source over the inputs ``a``, ``b``, ``c`` written with NumPy calls only
(``np.exp(a)``, ``np.maximum(a, b)``, ``a.sum(axis=1, keepdims=True)``, ``np.where``, ``np.clip``,
``.T``, ``.reshape(-1)``, slicing), so the same text is NumPy's reference and, inside
``@pyasc.operator``, pyasc's trace. Every unary and binary op of pyasc's op table that NumPy has
as a ufunc appears, with reductions, scans (cumsum, cumprod), where/clip and movement ops, on inputs of dtypes bool,
int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32 and float64 (8- and 16-bit
inputs sometimes over their whole range, so that arithmetic wraps; Python int constants in
range of every integer input) with 0-d, empty and size-1 dims, broadcast (zero-stride),
reversed, stepped and transposed views. Where NumPy computes a value in float16 (float
functions of bools and 8-bit integers), pyasc computes it in float32 lanes and rounds where it
stores it (or raises a typed error naming float16 for the ops it does not compute in float16 yet);
most such operands enter as numbers instead. A quarter of the programs (``ComplexGenerator``) are
over complex64/complex128 inputs with real operands: ``+ - * /``, ``**``, ``==``/``!=``,
``abs exp log sqrt sin cos tanh conj real imag angle square reciprocal``, ``sum mean prod``,
matmul and ``np.where``.

Results must have NumPy's dtype and shape. Integer and bool results must be identical. Float
and complex results must agree within ``K * ops * eps * scale`` (for complex values ``|got -
want|``, a normwise bound: each complex op is a few real ops, each within a few ulp of the
magnitudes it combines, so its error is a few eps of the largest magnitude it sees), where
``scale`` is the largest magnitude of any intermediate value (the sums of absolute values for
sum/mean and matmul) and ``K = 16``: every op is within 4 ulp of its exact value in pyasc
(2 ulp for float32 math, 1e-14 relative for float64)
and NumPy (whose float32 sums are pairwise), and the generator keeps each error from being
amplified by more than a small factor: ops that are discontinuous (floor, sign, comparisons,
argmax, modulo, casts to integers, ...) or have a restricted domain (log, sqrt, arcsin, power,
division) see only inputs, never computed values, and the arguments of exp-like ops are bounded.

Run ``python tests/fuzz_programs.py --seed 1 --count 5000`` for a longer run; each failure
prints a self-contained reproducer.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import pyasc
from pyasc import _pyasc

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]
INT_DTYPES = [d for d in DTYPES if "int" in d]
# NumPy scalars (strongly typed) that stand for a whole input of each dtype.
SCALARS = {"bool": "True", "int8": "np.int8(-7)", "int16": "np.int16(-300)", "int32": "3", "int64": "-2",
           "uint8": "np.uint8(200)", "uint16": "np.uint16(7)", "uint32": "np.uint32(5)", "uint64": "np.uint64(9)",
           "float32": "np.float32(0.5)", "float64": "1.25"}
# Python int constants the programs use; each program keeps those in range of all its integer inputs
# (a Python int outside the dtype it meets raises OverflowError in NumPy 2, as in pyasc).
INT_CONSTANTS = [2, -1, 0, 7, 100, 127, 200, 255, 1000, 40000, 70000]
# The 8- and 16-bit dtypes whose full range the inputs sometimes span, so that arithmetic wraps.
NARROW = ("int8", "int16", "uint8", "uint16")

# Unary ufuncs continuous on the reals (no domain limits): these may take computed values.
# name -> largest safe magnitude of the argument (exp-like ops overflow or amplify errors).
SMOOTH_UNARY = {"negative": None, "absolute": None, "square": 8.0, "positive": None, "exp": 8.0, "exp2": 8.0,
                "expm1": 8.0, "sin": 50.0, "cos": 50.0, "tanh": None, "arctan": None, "sinh": 8.0, "cosh": 8.0,
                "arcsinh": None, "deg2rad": None, "rad2deg": None, "cbrt": None}
# Continuous binary ufuncs of floats and ints.
SMOOTH_BINARY = ["add", "subtract", "multiply", "minimum", "maximum", "fmax", "fmin", "hypot", "logaddexp",
                 "logaddexp2"]


def _ufuncs(table) -> Dict[str, str]:
    """NumPy ufunc name -> pyasc's op-class ('float', 'arith', ...), from the extension's op table."""
    return {u: kind for _name, kind, ufuncs, _api in table for u in ufuncs}


UNARY_UFUNCS = _ufuncs(_pyasc.UNARY_OPS)
BINARY_UFUNCS = _ufuncs(_pyasc.BINARY_OPS)


@dataclass
class Leaf:
    """An input or a constant, with its kind ('b', 'i', 'u' or 'f'), dtype and largest magnitude."""

    src: str
    kind: str
    dtype: str = "float64"
    bound: float = 5.0


@dataclass
class Program:
    """Source of a random program and of the inputs it runs on."""

    inputs: List[Tuple[str, str]] = field(default_factory=list)  # (name, source building it)
    body: str = ""
    ops: int = 0

    def source(self) -> str:
        """A self-contained reproducer: the inputs, NumPy's result and pyasc's."""
        lines = ["import numpy as np, pyasc", "rng = np.random.default_rng(0)"]
        lines += [f"{n} = {s}" for n, s in self.inputs]
        names = ", ".join(n for n, _ in self.inputs)
        lines += [f"def f({names}):", f"    return {self.body}",
                  f"want = f({names})", f"got = pyasc.operator(f)({names})"]
        return "\n".join(lines)


class Generator:
    """Random programs from one seed."""

    def __init__(self, seed: int, complex_share: Optional[float] = None):
        self.r = random.Random(seed)
        self.complex_share = COMPLEX_SHARE if complex_share is None else complex_share

    def shape(self) -> Tuple[int, ...]:
        rank = self.r.choice([0, 1, 1, 2, 2, 2, 3])
        return tuple(self.r.choice([0, 1, 1, 2, 3, 4, 5]) if self.r.random() < 0.15 else self.r.choice([1, 2, 3, 4, 5])
                     for _ in range(rank))

    def array(self, shape: Tuple[int, ...], dtype: str) -> Tuple[str, float]:
        """Source of a random input of ``dtype`` broadcastable to ``shape``, and its largest magnitude."""
        r = self.r
        sub = tuple(1 if r.random() < 0.2 else d for d in shape[r.randint(0, len(shape)):])
        bound = 5.0
        if dtype == "bool":
            make = "rng.integers(0, 2, {s}).astype(bool)"
        elif dtype in NARROW and r.random() < 0.25:
            info = np.iinfo(dtype)
            make = f"rng.integers({info.min}, {info.max}, {{s}}, dtype=np.{{d}}, endpoint=True)"
            bound = float(max(-info.min, info.max))
        elif dtype.startswith("int"):
            make = "rng.integers(-5, 6, {s}).astype(np.{d})"
        elif dtype.startswith("uint"):
            make = "rng.integers(0, 11, {s}).astype(np.{d})"
            bound = 10.0
        elif dtype.startswith("complex"):
            make = "(rng.uniform(-2, 2, {s}) + 1j * rng.uniform(-2, 2, {s})).astype(np.{d})"
            bound = 2.0 * 2 ** 0.5
        else:
            make = "rng.uniform(-2, 2, {s}).astype(np.{d})"
        return self._view(sub, make, dtype), bound

    def _view(self, sub: Tuple[int, ...], make: str, dtype: str) -> str:
        r = self.r
        view = r.choice(["plain", "plain", "reversed", "stepped", "transposed", "broadcast"]) if sub else "plain"
        if view == "transposed" and len(sub) >= 2:
            return make.format(s=sub[::-1], d=dtype) + ".T"
        if view == "stepped":
            return make.format(s=(2 * sub[0],) + sub[1:], d=dtype) + "[::2]"
        if view == "broadcast":
            return f"np.broadcast_to({make.format(s=sub[1:], d=dtype)}, {sub})"
        if view == "reversed":
            return make.format(s=sub, d=dtype) + "[..., ::-1]"
        return make.format(s=sub, d=dtype)

    def program(self) -> Program:
        if self.r.random() < self.complex_share:
            return ComplexGenerator(self.r).program()
        r = self.r
        p = Program()
        shape = self.shape()
        leaves: List[Leaf] = []
        dtypes = [r.choice(DTYPES) for _ in range(r.randint(1, 3))]
        ranges = [np.iinfo(d) for d in dtypes if _kind(d) in "iu"]
        self.constants = [c for c in INT_CONSTANTS if all(i.min <= c <= i.max for i in ranges)]
        for name, dtype in zip("abc", dtypes):
            if r.random() < 0.1:
                src, bound = SCALARS[dtype], 300.0
                if src.lstrip("-").isdigit() and int(src) not in self.constants:
                    src = "2"  # a Python int argument in range of the program's integer dtypes
            else:
                src, bound = self.array(shape, dtype)
            p.inputs.append((name, src))
            leaves.append(Leaf(name, _kind(dtype), dtype, bound))
        self.leaves, self.p = leaves, p
        p.body, _ = self.expr(r.randint(1, 4))
        return p

    # -- expressions: (source, bound on |value| or None when unknown) --------------------------

    def leaf_op(self) -> Tuple[str, Optional[float]]:
        """An input, or any op of the table applied to inputs only."""
        r = self.r
        x = r.choice(self.leaves)
        y = r.choice(self.leaves)
        pick = r.random()
        if pick < 0.3:
            return x.src, x.bound
        if pick < 0.35:
            c = r.choice(self.constants + [0.5, -1.5, True])
            return repr(c), float(abs(c))
        self.p.ops += 1
        if pick < 0.65:
            u = r.choice(sorted(UNARY_UFUNCS))
            arg = x.src
            if UNARY_UFUNCS[u] in ("bitwise", "integer") and x.kind == "f":
                arg = f"np.multiply({x.src}, 1).astype(np.int32)"
            elif u in ("reciprocal", "fabs") and x.kind != "f":
                # NumPy's reciprocal of integers divides integers and its fabs of integers is float64;
                # pyasc computes the first in float64 and keeps integers in the second.
                arg = f"np.multiply({x.src}, 1.0)"
            elif x.kind == "b" and UNARY_UFUNCS[u] != "bitwise":
                # NumPy computes float functions of bools in float16 and squares them in int8,
                # dtypes outside this test; the bools enter as numbers.
                arg = f"np.multiply({x.src}, {'1.0' if UNARY_UFUNCS[u] in ('float', 'rounding') else '1'})"
            elif x.dtype in ("int8", "uint8") and UNARY_UFUNCS[u] == "float" and r.random() < 0.7:
                # NumPy computes float functions of 8-bit integers in float16, which pyasc rejects
                # (check() demands its DTypeError then); most such calls enter as numbers instead.
                arg = f"np.multiply({x.src}, 1.0)"
            return f"np.{u}({arg})", None
        if pick < 0.9:
            u = r.choice(sorted(BINARY_UFUNCS))
            a, b = x.src, y.src
            kind = BINARY_UFUNCS[u]
            if kind in ("bitwise", "integer"):
                a = a if x.kind != "f" else f"np.multiply({a}, 1).astype(np.int64)"
                b = b if y.kind != "f" else f"np.multiply({b}, 1).astype(np.int64)"
                if u in ("left_shift", "right_shift"):
                    b = f"(np.multiply({b}, 1).astype(np.int64) & 7)"
            elif u == "power":
                a = f"(np.abs({a}) + 0.5)"  # a float base: integers to negative powers are errors
            elif u == "ldexp":
                a = f"np.multiply({a}, 1).astype(np.float32)" if x.kind != "f" else a
                b = f"(np.multiply({b}, 1).astype(np.int32) & 7)"
            elif x.kind == "b" and y.kind == "b" and kind not in ("compare",):
                # bool op bool is int8 or float16 in NumPy (or an error): one operand enters as a number.
                b = f"np.multiply({b}, {'1.0' if kind == 'float' else '1'})"
            return f"np.{u}({a}, {b})", None
        axis = self.axis()
        red = r.choice(["argmax", "argmin", "any", "all"])
        if red in ("argmax", "argmin"):
            return f"np.{red}({x.src}, axis={axis if isinstance(axis, int) else -1})", None
        return f"np.{red}({x.src}, axis={axis}, keepdims={r.random() < 0.5})", None

    def axis(self):
        r = self.r
        return r.choice([None, 0, -1, (0, -1), 1])

    def expr(self, depth: int) -> Tuple[str, Optional[float]]:
        r = self.r
        if depth == 0 or r.random() < 0.2:
            return self.leaf_op()
        pick = r.random()
        if pick < 0.3:
            x, bound = self.expr(depth - 1)
            u = r.choice(sorted(SMOOTH_UNARY))
            limit = SMOOTH_UNARY[u]
            if limit is not None and (bound is None or bound > limit):
                x, bound = f"np.tanh(np.multiply({x}, 1.0))", 1.0
            self.p.ops += 1
            # times 1.0 (exact): a bool value enters as a number, not as NumPy's float16.
            return f"np.{u}(np.multiply({x}, 1.0))", None if limit is None else float(np.exp(2 * limit))
        if pick < 0.55:
            (x, _), (y, _) = self.expr(depth - 1), self.expr(depth - 1)
            u = r.choice(SMOOTH_BINARY)
            self.p.ops += 1
            if u in ("subtract",):
                return f"np.{u}({x}, np.multiply({y}, 1))", None  # never bool - bool
            if u in ("hypot", "logaddexp", "logaddexp2"):
                return f"np.{u}(np.multiply({x}, 1.0), {y})", None  # not NumPy's float16 for bools
            return f"np.{u}({x}, {y})", None
        if pick < 0.7:
            x, _ = self.expr(depth - 1)
            red = r.choice(["sum", "mean", "max", "min", "prod", "cumsum", "cumprod"])
            self.p.ops += 1
            if red in ("prod", "cumprod"):
                x = f"np.tanh(np.multiply({x}, 1.0))"
            if red.startswith("cum"):
                return f"np.{red}({x}, axis={r.choice([None, 0, -1])})", None
            return f"np.{red}({x}, axis={self.axis()}, keepdims={r.random() < 0.5})", None
        if pick < 0.8:
            cond = f"({r.choice(self.leaves).src} > {r.choice(self.leaves).src})"
            (x, _), (y, _) = self.expr(depth - 1), self.expr(depth - 1)
            self.p.ops += 1
            return f"np.where({cond}, {x}, {y})", None
        if pick < 0.85:
            x, _ = self.expr(depth - 1)
            self.p.ops += 1
            return f"np.clip({x}, -1.5, 2)", 2.0
        x, bound = self.expr(depth - 1)
        if not any(re.search(rf"\b{leaf.src}\b", x) for leaf in self.leaves):
            x = r.choice(self.leaves).src  # moving a constant would make a NumPy array, not a traced value
        move = r.choice(["np.transpose({})", "np.reshape({}, -1)", "np.reshape({}, -1)[::-1]", "np.expand_dims({}, 0)",
                         "np.reshape({}, -1)[1:]", "np.reshape({}, -1)[::2]", "np.reshape({}, (1, -1)).T"])
        return move.format(x), bound


def _kind(dtype: str) -> str:
    return {"b": "b", "i": "i", "u": "u", "f": "f", "c": "c"}[np.dtype(dtype).kind]


COMPLEX_SHARE = 0.25  # of the programs are over complex inputs (ComplexGenerator)
COMPLEX_CONSTANTS = ["1j", "(0.5-1.5j)", "2", "-0.5", "np.complex64(1-0.5j)"]
COMPLEX_SCALARS = ["np.complex64(-0.5+2j)", "np.complex128(0.25-1j)", "(1.5+0.25j)"]


class ComplexGenerator(Generator):
    """Programs over complex64/complex128 inputs (with real and Python-number operands).

    The same rules keep errors from being amplified: ``log sqrt angle / reciprocal **`` with a
    complex exponent, ``==`` and ``!=`` (branch cuts, poles, exact tests) see only inputs,
    which are uniform in ``[-2, 2]²`` and so never zero; ``tanh`` sees inputs halved, away
    from its poles at ``±iπ/2``; ``exp sin cos`` take values of magnitude at most 3 (larger
    ones are first squashed by ``z / (1 + |z|)``, whose denominator is at least 1); products
    reduce squashed values. Every op is written as a NumPy call, so ``_scale`` sees it.
    """

    def __init__(self, r: random.Random):
        self.r = r

    def program(self) -> Program:
        r = self.r
        p = Program()
        shape = self.shape()
        leaves: List[Leaf] = []
        for i, name in enumerate("abc"[: r.randint(1, 3)]):
            if i == 0 or r.random() < 0.6:
                dtype = r.choice(["complex64", "complex128"])
                if r.random() < 0.1:
                    src, bound = r.choice(COMPLEX_SCALARS), 2.1
                else:
                    src, bound = self.array(shape, dtype)
            else:
                dtype = r.choice(["float32", "float64", "int8", "int32", "bool"])
                src, bound = self.array(shape, dtype)
            p.inputs.append((name, src))
            leaves.append(Leaf(name, _kind(dtype), dtype, bound))
        self.leaves, self.p = leaves, p
        self.cplx = [leaf for leaf in leaves if leaf.kind == "c"]
        body, _ = self.expr(r.randint(1, 4))
        if not any(re.search(rf"\b{leaf.src}\b", body) for leaf in self.cplx):
            body = f"np.add({body}, {r.choice(self.cplx).src})"  # a result computed from the inputs
        last = r.random()
        if last < 0.1:
            body = f"np.abs({body})"
        elif last < 0.15:
            body = f"np.real({body})"
        elif last < 0.2:
            body = f"np.imag({body})"
        p.body = body
        return p

    def leaf_op(self) -> Tuple[str, Optional[float]]:
        """An input, a constant, or an op whose argument must be an input."""
        r = self.r
        x, y = r.choice(self.cplx).src, r.choice(self.cplx).src
        pick = r.random()
        if pick < 0.3:
            leaf = r.choice(self.leaves)
            return leaf.src, leaf.bound
        if pick < 0.38:
            return r.choice(COMPLEX_CONSTANTS), 2.0
        self.p.ops += 1
        if pick < 0.5:
            return f"np.{r.choice(['log', 'sqrt'])}({x})", 3.0
        if pick < 0.6:
            return f"np.divide({x}, {r.choice([y, x + ' * 0.5', '(1.5-0.5j)'])})", None
        if pick < 0.65:
            return f"np.reciprocal({x})", None
        if pick < 0.72:
            return f"np.tanh(np.multiply({x}, 0.5))", 3.0
        if pick < 0.78:
            exp = r.choice([y, "0.5", "(0.5+0.5j)", "2", "3", "-2", "np.float32(1.5)"])
            return f"np.power({x}, {exp})", None
        if pick < 0.84:
            return f"np.angle({x}{r.choice(['', ', deg=True'])})", 180.0
        if pick < 0.9:
            return f"np.{r.choice(['equal', 'not_equal'])}({x}, {r.choice([y, x, f'np.conj({x})', '1j'])})", 1.0
        # Python operators on inputs: + - * of a complex input and any operand.
        other = r.choice(self.leaves).src
        return f"np.positive({x} {r.choice(['+', '-', '*'])} {other})", 12.0

    def squash(self, x: str, bound: Optional[float], limit: float) -> Tuple[str, float]:
        if bound is not None and bound <= limit:
            return x, bound
        return f"np.divide({x}, np.add(1, np.abs({x})))", 1.0

    def expr(self, depth: int) -> Tuple[str, Optional[float]]:
        r = self.r
        if depth == 0 or r.random() < 0.2:
            return self.leaf_op()
        pick = r.random()
        self.p.ops += 1
        if pick < 0.3:
            x, bound = self.expr(depth - 1)
            u = r.choice(["exp", "sin", "cos", "square", "conj", "conjugate", "negative", "absolute", "power2",
                          "power3", "real", "imag", "lift"])
            if u in ("exp", "sin", "cos"):
                x, bound = self.squash(x, bound, 3.0)
                return f"np.{u}({x})", 30.0
            if u in ("square", "power2", "power3"):
                x, bound = self.squash(x, bound, 30.0)
                n = 3 if u == "power3" else 2
                return (f"np.square({x})" if u == "square" else f"np.power({x}, {n})"), bound ** n
            if u == "lift":
                return f"np.add({x}, 0j)", bound  # a real value becomes complex; a complex one stays
            return f"np.{u}({x})", bound
        if pick < 0.6:
            (x, bx), (y, by) = self.expr(depth - 1), self.expr(depth - 1)
            u = r.choice(["add", "subtract", "multiply"])
            b = None if bx is None or by is None else (bx * by if u == "multiply" else bx + by)
            return f"np.{u}({x}, {y})", b
        if pick < 0.75:
            x, bound = self.expr(depth - 1)
            red = r.choice(["sum", "mean", "prod"])
            if red == "prod":
                x, bound = self.squash(x, bound, 0.0)
            return f"np.{red}({x}, axis={self.axis()}, keepdims={r.random() < 0.5})", None
        if pick < 0.85:
            x, y = r.choice(self.cplx).src, r.choice(self.cplx).src
            cond = r.choice([f"np.not_equal({x}, np.conj({x}))", f"(np.real({x}) > np.imag({y}))"])
            (a, ba), (b, bb) = self.expr(depth - 1), self.expr(depth - 1)
            return f"np.where({cond}, {a}, {b})", None if ba is None or bb is None else max(ba, bb)
        if pick < 0.92:
            (x, _), (y, _) = self.expr(depth - 1), self.expr(depth - 1)
            # Lifted to complex: pyasc's real matmul is float32/float64 only.
            y = r.choice(["np.transpose({})", "{}"]).replace("{}", f"np.add({y}, 0j)")
            return f"np.matmul(np.add({x}, 0j), {y})", None
        x, bound = self.expr(depth - 1)
        if not any(re.search(rf"\b{leaf.src}\b", x) for leaf in self.leaves):
            x = r.choice(self.cplx).src  # moving a constant would make a NumPy array, not a traced value
        move = r.choice(["np.transpose({})", "np.reshape({}, -1)", "np.reshape({}, -1)[::-1]", "np.reshape({}, -1)[1:]",
                         "np.reshape({}, (1, -1)).T"])
        return move.format(x), bound


class Mismatch(AssertionError):
    """pyasc and NumPy disagree on a program."""


def _magnitude(a: np.ndarray) -> np.ndarray:
    """``|a|`` in float64, exact for every integer dtype (no wrapping of ``abs(int8(-128))``)."""
    return np.abs(a) if a.dtype.kind == "c" else np.abs(a.astype(np.float64))


def _scale(src: str, env: Dict[str, object]) -> Tuple[float, float, bool]:
    """The largest magnitude of any intermediate value of the program (sums of magnitudes for
    sum, mean and the terms of matmul), the largest machine epsilon among the float and complex
    dtypes it computes in, and whether NumPy computes a value in float16."""
    seen = [1.0]
    eps = [0.0]
    half = [False]
    real = {name: getattr(np, name) for name in dir(np)}

    class Spy:
        def __getattr__(self, name):
            f = real[name]
            if not callable(f) or isinstance(f, type):
                return f

            def call(*args, **kwargs):
                out = f(*args, **kwargs)
                arr = np.asarray(out)
                half[0] = half[0] or any(np.asarray(o).dtype == np.float16
                                         for o in (out if isinstance(out, tuple) else (out,)))
                for a in (arr, *map(np.asarray, args)):
                    if a.dtype.kind in "fc":
                        eps[0] = max(eps[0], float(np.finfo(a.dtype).eps))
                    if a.dtype.kind in "fiubc" and a.size:
                        m = _magnitude(a)
                        m = m[np.isfinite(m)]
                        if m.size:
                            seen.append(float(m.max()) if name not in ("sum", "mean", "cumsum") else float(m.sum()))
                if name in ("sum", "mean", "cumsum") and np.asarray(args[0]).size:
                    seen.append(float(np.nansum(_magnitude(np.asarray(args[0])))))
                if name == "matmul" and arr.size:
                    seen.append(float(np.nanmax(np.matmul(*(_magnitude(np.asarray(a)) for a in args)))))
                return out

            return call

    try:
        eval(src, {"np": Spy()}, dict(env))  # noqa: S307 - our own generated source
    except (TypeError, ValueError, OverflowError):
        pass  # NumPy raised; ``half`` says whether it had computed in float16 before
    return max(seen), eps[0], half[0]


def check(p: Program) -> None:
    """Run one program by NumPy and by pyasc and compare; raises Mismatch with a reproducer."""
    env: Dict[str, object] = {"rng": np.random.default_rng(0), "np": np}
    for name, src in p.inputs:
        env[name] = eval(src, env)  # noqa: S307 - our own generated source
    args = [env[n] for n, _ in p.inputs]
    names = [n for n, _ in p.inputs]
    fn = eval(f"lambda {', '.join(names)}: {p.body}", {"np": np})  # noqa: S307
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = np.asarray(fn(*args))
        except (TypeError, ValueError, OverflowError) as e:
            want = e
        scale, eps, half = _scale(p.body, {n: env[n] for n in names})
    before = [np.array(a, copy=True) for a in args]
    try:
        got = pyasc.operator(fn)(*args)
    except Exception as e:  # noqa: BLE001 - compared below
        if half and isinstance(e, (pyasc.UnsupportedError, pyasc.DTypeError)) and "float16" in str(e):
            return  # an op pyasc does not compute in float16 yet (scans, sorts, spacing, nextafter)
        # Where NumPy raises TypeError, ValueError or OverflowError, pyasc must raise a PyAscError of that kind.
        base = next((t for t in (TypeError, ValueError, OverflowError) if isinstance(want, t)), None)
        if base is not None and isinstance(e, pyasc.PyAscError) and isinstance(e, base):
            return
        if isinstance(want, Exception) and type(e) is type(want):
            return  # NumPy itself raised it, computing on plain numbers inside the function
        if isinstance(e, pyasc.ShapeError) and "rank 0" in str(e):
            return  # NumPy's legacy acceptance of axis 0 and -1 on 0-d arrays; pyasc calls them out of bounds
        raise Mismatch(f"pyasc raised {type(e).__name__}: {e}\nNumPy gave {want!r}\n\n{p.source()}") from None
    for a, b in zip(args, before):
        if not np.array_equal(np.asarray(a), b, equal_nan=True):
            raise Mismatch(f"pyasc modified an input\n\n{p.source()}")
    if isinstance(want, Exception):
        raise Mismatch(f"NumPy raised {type(want).__name__}: {want}; pyasc returned {got!r}\n\n{p.source()}")
    if not isinstance(got, np.ndarray) or got.dtype != want.dtype or got.shape != want.shape:
        raise Mismatch(f"got {type(got).__name__} {getattr(got, 'dtype', '')}{getattr(got, 'shape', '')}, "
                       f"want {want.dtype}{want.shape}\n\n{p.source()}")
    if want.dtype.kind not in "fc":
        if not np.array_equal(got, want):
            raise Mismatch(f"values differ (exact):\ngot  {got!r}\nwant {want!r}\n\n{p.source()}")
        return
    eps = max(eps, float(np.finfo(want.dtype).eps))
    if want.size:
        m = _magnitude(want)
        m = m[np.isfinite(m)]
        scale = max(scale, float(m.max()) if m.size else 0.0)
    tol = 16 * max(p.ops, 1) * eps * scale
    g = got.astype(np.complex128) if want.dtype.kind == "c" else got.astype(np.float64)
    w = want.astype(g.dtype)
    with np.errstate(all="ignore"):
        ok = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol)
        if half:
            # pyasc keeps float16 values in float32 between ops and rounds once where it stores
            # them: where NumPy's rounding after every op overflowed (inf, then NaN), pyasc's
            # value may be finite.
            ok |= ~np.isfinite(w)
    if not ok.all():
        i = int(np.argmin(ok.ravel()))
        raise Mismatch(f"values differ beyond {tol:.3g} (16 * {p.ops} ops * eps * scale {scale:.3g}) at flat index "
                       f"{i}: got {g.ravel()[i]!r}, want {w.ravel()[i]!r}\n\n{p.source()}")


def run(seed: int, count: int, stop: bool = False, complex_share: Optional[float] = None) -> List[str]:
    """Check ``count`` programs from ``seed``; returns the failures' reports.

    ``complex_share``: the share of programs over complex inputs (default ``COMPLEX_SHARE``).
    """
    gen = Generator(seed, complex_share)
    failures = []
    for i in range(count):
        p = gen.program()
        try:
            check(p)
        except Mismatch as e:
            failures.append(f"program {i} of seed {seed}: {e}")
        except Exception:  # noqa: BLE001 - a bug in the fuzzer or pyasc: report it with the program
            failures.append(f"program {i} of seed {seed}: {traceback.format_exc()}\n{p.source()}")
        if failures and stop:
            break
    return failures


def main(argv: Optional[List[str]] = None) -> int:
    """Command line: ``python tests/fuzz_programs.py --seed N --count M``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--stop", action="store_true", help="stop at the first failure")
    ap.add_argument("--complex-share", type=float, default=None,
                    help=f"share of programs over complex inputs (default {COMPLEX_SHARE})")
    args = ap.parse_args(argv)
    failures = run(args.seed, args.count, args.stop, args.complex_share)
    for f in failures:
        print(f, end="\n\n")
    print(f"{args.count} programs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
