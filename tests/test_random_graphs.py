"""Differential tests on random expression graphs: random shapes, broadcasts, dtypes, Python and
NumPy constants and ops. Each graph is traced and run by pyasc and evaluated twice by NumPy:
natively (the expected dtype, shape and integer results) and in float64 (the expected float
values). Comparisons, rounding and where-conditions only see leaves, so float32 rounding never
flips a discontinuity between pyasc and the float64 reference."""

from __future__ import annotations

import math

import numpy as np
import pyasc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_erf = np.frompyfunc(math.erf, 1, 1)


def _np_float(x):
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _np_erf(x):
    x = _np_float(np.asarray(x))
    return np.asarray(_erf(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def _np_sigmoid(x):
    x = _np_float(np.asarray(x))
    with np.errstate(over="ignore"):
        return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


# name -> (pyasc function, NumPy function); all continuous on their inputs.
SMOOTH = {
    "neg": (lambda x: -x, np.negative),
    "abs": (abs, np.abs),
    "exp": (pyasc.exp, np.exp),
    "tanh": (pyasc.tanh, np.tanh),
    "sin": (np.sin, np.sin),
    "cos": (pyasc.cos, np.cos),
    "sigmoid": (pyasc.sigmoid, _np_sigmoid),
    "erf": (pyasc.erf, _np_erf),
    "square": (np.square, np.square),
    "relu": (pyasc.relu, lambda x: np.maximum(x, 0)),
}
LEAF_UNARY = {
    "floor": (pyasc.floor, np.floor),
    "round": (np.round, np.round),
    "sign": (pyasc.sign, np.sign),
}
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "min": (pyasc.minimum, np.minimum),
    "max": (np.maximum, np.maximum),
}
COMPARE = {
    "lt": (lambda a, b: a < b, lambda a, b: a < b),
    "ge": (lambda a, b: a >= b, lambda a, b: a >= b),
    "eq": (lambda a, b: a == b, lambda a, b: a == b),
}

DTYPES = ["bool", "int32", "int64", "float32", "float64"]


class Node:
    """An expression: evaluates on pyasc tensors, on native NumPy values and in float64."""

    def __init__(self, kind, name=None, children=(), value=None, bound=1.0):
        self.kind, self.name, self.children, self.value, self.bound = kind, name, children, value, bound

    def run(self, env, mode):
        k = self.kind
        if k == "input":
            x = env[self.name]
            return x.astype(np.float64) if mode == "f64" and x.dtype.kind in "fiu" and x.dtype != np.bool_ else x
        if k == "const":
            return self.value
        vals = [c.run(env, mode) for c in self.children]
        if k == "astype":
            v = vals[0] if isinstance(vals[0], (np.ndarray, pyasc.Tensor)) else np.asarray(vals[0])
            return v.astype(self.name) if mode != "f64" or self.name == "bool" else v.astype(np.float64)
        if k == "where":
            if mode == "pyasc":
                return pyasc.where(*vals)
            return np.where(*vals)
        table = {"smooth": SMOOTH, "leaf": LEAF_UNARY, "binary": BINARY, "compare": COMPARE}[k]
        f = table[self.name][0 if mode == "pyasc" else 1]
        return f(*vals)


def _leaf(draw, inputs):
    choice = draw(st.integers(0, 3 * len(inputs)))
    if choice < 3 * len(inputs):
        name, dtype = inputs[choice % len(inputs)]
        bound = 1.0 if dtype == "bool" else 2.0 if dtype.startswith("float") else 5.0
        return Node("input", name, bound=bound), dtype.startswith("float32")
    kind = draw(st.sampled_from(["pyfloat", "pyint", "pybool", "np32"]))
    if kind == "pyfloat":
        v = draw(st.floats(-2, 2, allow_nan=False, width=32))
        return Node("const", value=v, bound=2.0), False
    if kind == "pyint":
        return Node("const", value=draw(st.integers(-3, 3)), bound=3.0), False
    if kind == "pybool":
        return Node("const", value=draw(st.booleans()), bound=1.0), False
    return Node("const", value=np.float32(draw(st.floats(-2, 2, width=32))), bound=2.0), True


def _expr(draw, inputs, depth):
    """Returns (node, bool_valued, uses_float32)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        node, f32 = _leaf(draw, inputs)
        return node, False, f32
    kind = draw(st.sampled_from(["smooth", "smooth", "binary", "binary", "where", "leaf", "compare"]))
    if kind in ("leaf", "compare", "where"):
        a, fa = _leaf(draw, inputs)
        if kind == "leaf":
            name = draw(st.sampled_from(sorted(LEAF_UNARY)))
            return Node("leaf", name, (Node("astype", "float64", (a,), bound=a.bound),), bound=a.bound + 1), False, fa
        b, fb = _leaf(draw, inputs)
        cmp = Node("compare", draw(st.sampled_from(sorted(COMPARE))), (a, b), bound=1.0)
        if kind == "compare":
            return cmp, True, fa or fb
        x, _, fx = _expr(draw, inputs, depth - 1)
        y, _, fy = _expr(draw, inputs, depth - 1)
        return Node("where", None, (cmp, x, y), bound=max(x.bound, y.bound)), False, fa or fb or fx or fy
    if kind == "smooth":
        x, xb, fx = _expr(draw, inputs, depth - 1)
        name = draw(st.sampled_from(sorted(SMOOTH)))
        # Keep values small enough that float32 rounding stays far from overflow.
        x = Node("astype", "float32" if fx else "float64", (x,), bound=x.bound)
        if name in ("exp", "square") and x.bound > 4:
            x = Node("smooth", "tanh", (x,), bound=1.0)
        bound = {"exp": math.exp(x.bound), "square": x.bound ** 2, "sigmoid": 1.0, "erf": 1.0, "tanh": 1.0,
                 "sin": 1.0, "cos": 1.0}.get(name, x.bound)
        return Node("smooth", name, (x,), bound=bound), False, fx
    x, xb, fx = _expr(draw, inputs, depth - 1)
    y, yb, fy = _expr(draw, inputs, depth - 1)
    name = draw(st.sampled_from(sorted(BINARY)))
    if xb and yb and name == "sub":
        name = "add"  # NumPy rejects bool - bool
    bound = {"add": x.bound + y.bound, "sub": x.bound + y.bound, "mul": x.bound * y.bound}.get(
        name, max(x.bound, y.bound))
    node = Node("binary", name, (x, y), bound=bound)
    if bound > 50:
        node = Node("smooth", "tanh", (Node("astype", "float32" if fx or fy else "float64", (node,),
                                            bound=bound),), bound=1.0)
    return node, False, fx or fy


@st.composite
def graphs(draw):
    rank = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 3]))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    n = draw(st.integers(1, 3))
    inputs, env = [], {}
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    for i in range(n):
        dtype = draw(st.sampled_from(DTYPES))
        drop = draw(st.integers(0, len(shape)))
        sub = tuple(1 if draw(st.booleans()) else d for d in shape[drop:])
        if dtype == "bool":
            v = rng.integers(0, 2, sub).astype(bool)
        elif dtype.startswith("int"):
            v = rng.integers(-5, 6, sub).astype(dtype)
        else:
            v = rng.uniform(-2, 2, sub).astype(dtype)
        if draw(st.booleans()) and v.ndim >= 1 and v.shape[-1] > 1:
            v = v[..., ::-1]  # a negatively strided view
        name = f"x{i}"
        inputs.append((name, dtype))
        env[name] = v
    expr, _, f32 = _expr(draw, inputs, draw(st.integers(1, 5)))
    return inputs, env, expr, f32


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_graphs_match_numpy(case):
    inputs, env, expr, f32 = case
    names = [n for n, _ in inputs]

    def fn(*args):
        return expr.run(dict(zip(names, args)), "pyasc")

    args = [env[n] for n in names]
    with np.errstate(all="ignore"):
        try:
            want = np.asarray(expr.run(env, "native"))
        except TypeError:
            # NumPy rejects the dtypes (e.g. bool - bool): pyasc must reject them too, with a typed error.
            with pytest.raises(pyasc.DTypeError):
                pyasc.operator(fn)(*args)
            return
        ref = np.asarray(expr.run(env, "f64"))
    got = pyasc.operator(fn)(*args)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        scale = max(1.0, min(expr.bound, 1e6))
        tol = 2e-5 if (f32 or want.dtype == np.float32) else 1e-12
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=tol, atol=tol * scale,
                                   equal_nan=True)
