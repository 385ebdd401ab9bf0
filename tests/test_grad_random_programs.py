"""pyasc.grad on random small programs, against jax.grad and central finite differences in float64.

Hypothesis draws a program: one or two float64 inputs of small shapes that may broadcast
against each other, and a chain of 2 to 6 steps, each an op that fits the current value's shape:
smooth elementwise ops (NumPy ufuncs on the traced value and pyasc's activations), broadcasting
binary ops against an input or the value itself, reductions over a random axis with and without
keepdims (sum, mean, max, logsumexp), softmax and log_softmax over a random axis, movement ops
(transposes, flatten, strided and reversed slices, concatenate) and matmul (``v @ v.T`` and
against an input). Every non-elementwise op is the focus of its own case, so each is sure to be
drawn; the steps around it are random. The last value is reduced to a scalar against a fixed
random weight, so the cotangent is not all ones.

Each table entry holds the pyasc form and the JAX form of an op, so one program runs in both
libraries: its value and ``pyasc.grad`` with respect to every input must equal JAX's to float64
rounding, and ``pyasc.check_grads`` compares its jvp and vjp with finite differences. A second
test takes grad-of-grad of random chains of the elementwise ops (``pyasc.grad(pyasc.grad(f))``
on a 0-d input, the gradient of a weighted sum of the gradient on arrays), against JAX and
against ``check_grads(order=2)``. Data come from seeded generators and are continuous, so max
and maximum never see ties between different values, and every case is deterministic.
"""

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

jax.config.update("jax_enable_x64", True)

SHAPES = [(4,), (3, 4), (2, 3, 4), (3, 1), (1, 4)]

# name -> (pyasc form, JAX form); smooth on all of R (the data never land on clip's corners).
UNARY = {
    "sin": (np.sin, jnp.sin),
    "cos": (np.cos, jnp.cos),
    "tanh": (np.tanh, jnp.tanh),
    "arctan": (np.arctan, jnp.arctan),
    "exp_clipped": (lambda v: np.exp(np.clip(v, -3.0, 3.0)), lambda v: jnp.exp(jnp.clip(v, -3.0, 3.0))),
    "log_sq1": (lambda v: np.log(v * v + 1), lambda v: jnp.log(v * v + 1)),
    "sqrt_sq1": (lambda v: np.sqrt(v * v + 1), lambda v: jnp.sqrt(v * v + 1)),
    "rational": (lambda v: v / (v * v + 1), lambda v: v / (v * v + 1)),
    "sigmoid": (pyasc.sigmoid, jax.nn.sigmoid),
    "gelu": (pyasc.gelu, lambda v: jax.nn.gelu(v, approximate=False)),
    "silu": (pyasc.silu, jax.nn.silu),
    "softplus": (pyasc.softplus, jax.nn.softplus),
    "erf": (pyasc.erf, jsp.erf),
    "neg_half": (lambda v: -0.5 * v, lambda v: -0.5 * v),
}

# name -> (pyasc form, JAX form) of f(a, b), broadcasting a against b.
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / (b * b + 1), lambda a, b: a / (b * b + 1)),
    "maximum": (np.maximum, jnp.maximum),
}

# name -> (pyasc form, JAX form) of f(v, axis, keepdims).
REDUCE = {
    "sum": (lambda v, axis, keepdims: np.sum(v, axis=axis, keepdims=keepdims), jnp.sum),
    "mean": (lambda v, axis, keepdims: v.mean(axis=axis, keepdims=keepdims), jnp.mean),
    "max": (pyasc.max, jnp.max),
    "logsumexp": (pyasc.logsumexp, jsp.logsumexp),
}

# name -> (pyasc form, JAX form) of f(v, axis).
NORMALIZE = {
    "softmax": (pyasc.softmax, jax.nn.softmax),
    "log_softmax": (pyasc.log_softmax, jax.nn.log_softmax),
}

# name -> (pyasc form, JAX form, whether it applies to a value of this shape).
MOVE = {
    "transpose": (lambda v: v.T, lambda v: v.T, lambda s: len(s) >= 2),
    "np_transpose": (np.transpose, jnp.transpose, lambda s: len(s) >= 2),
    "flatten": (lambda v: v.reshape(-1), lambda v: v.reshape(-1), lambda s: len(s) >= 2),
    "step_slice": (lambda v: v[::2], lambda v: v[::2], lambda s: len(s) >= 1),
    "last_axis_slice": (lambda v: v[..., 1::2], lambda v: v[..., 1::2], lambda s: len(s) >= 1 and s[-1] >= 2),
    "reverse_slice": (lambda v: v[::-1, 1:], lambda v: v[::-1, 1:], lambda s: len(s) >= 2 and s[1] >= 2),
}


def _concatenate(lib, v, axis):
    cat = np.concatenate if lib == 0 else jnp.concatenate
    return cat([v, 0.5 * v], axis=axis)


def _swap_last(lib, v):
    return np.swapaxes(v, -1, -2) if lib == 0 else jnp.swapaxes(v, -1, -2)


def _apply(step, v, args, lib):
    """One step of a program on value ``v``; ``lib`` is 0 for the pyasc form, 1 for JAX's."""
    kind, name, *params = step
    if kind == "unary":
        return UNARY[name][lib](v)
    if kind == "binary":
        operand, swap = params
        b = v if operand is None else args[operand]
        return BINARY[name][lib](b, v) if swap else BINARY[name][lib](v, b)
    if kind == "reduce":
        axis, keepdims = params
        return REDUCE[name][lib](v, axis=axis, keepdims=keepdims)
    if kind == "normalize":
        return NORMALIZE[name][lib](v, axis=params[0])
    if kind == "move":
        return MOVE[name][lib](v)
    if kind == "concatenate":
        return _concatenate(lib, v, params[0])
    if kind == "gram":
        return v @ _swap_last(lib, v)
    if kind == "matmul":
        operand, transpose = params
        b = args[operand]
        return v @ (b.T if transpose else b)
    raise AssertionError(step)


def _run(program, args, lib):
    start, steps, weight = program
    v = args[start]
    for step in steps:
        v = _apply(step, v, args, lib)
    return (pyasc.sum if lib == 0 else jnp.sum)(v * weight)


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _matmul_operands(shape, shapes):
    """(input, transposed) pairs for ``v @ b`` or ``v @ b.T`` with a 1-D or 2-D input ``b`` that fits."""
    if not shape:
        return []
    return [(i, t) for i, s in enumerate(shapes) for t in (False, True)
            if len(s) in (1, 2) and not (t and len(s) == 1) and shape[-1] == (s[-1] if t else s[0])]


def _ops_for(shape, shapes):
    """The (kind, name) ops that apply to a value of ``shape`` in a program on inputs of ``shapes``."""
    nd = len(shape)
    ops = [("unary", n) for n in UNARY] + [("binary", n) for n in BINARY]
    ops += [("move", n) for n, (_, _, fits) in MOVE.items() if fits(shape)]
    if nd >= 1:
        ops += [("reduce", n) for n in REDUCE] + [("normalize", n) for n in NORMALIZE] + [("concatenate", "")]
    if nd >= 2:
        ops.append(("gram", ""))
    if _matmul_operands(shape, shapes):
        ops.append(("matmul", ""))
    return ops


# Every op but the elementwise ones, which the second-order test below takes one by one (its
# check_grads covers their first derivatives too) and which lead and follow these in programs.
FOCUS_OPS = sorted({op for s in SHAPES for op in _ops_for(s, [s]) if op[0] != "unary"})


def _draw_step(draw, op, shape, shapes):
    """The step for ``op`` on a value of ``shape``, with its axis, operand or keepdims drawn."""
    kind, name = op
    nd = len(shape)
    if kind == "binary":
        operands = [None] + [i for i, s in enumerate(shapes) if _broadcasts(shape, s)]
        return (kind, name, draw(st.sampled_from(operands)), draw(st.booleans()))
    if kind == "reduce":
        return (kind, name, draw(st.integers(-nd, nd - 1)), draw(st.booleans()))
    if kind in ("normalize", "concatenate"):
        return (kind, name, draw(st.integers(-nd, nd - 1)))
    if kind == "matmul":
        return (kind, name, *draw(st.sampled_from(_matmul_operands(shape, shapes))))
    return (kind, name)


def _shape_after(step, shape, shapes):
    specs = [jax.ShapeDtypeStruct(s, jnp.float64) for s in shapes]
    out = jax.eval_shape(lambda v, *a: _apply(step, v, a, 1), jax.ShapeDtypeStruct(shape, jnp.float64), *specs)
    return out.shape


@st.composite
def programs(draw, focus):
    """(inputs, program) with program = (start input, steps, final weight); ``focus`` is among the steps.

    Hypothesis favours the first entries of a table, so each program is built around one given
    op: up to one elementwise step, then ``focus``, then random steps that fit, 2 to 6 in all.
    """
    n_steps = draw(st.integers(2, 6))
    shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2)
                  .filter(lambda ss: any(focus in _ops_for(s, ss) for s in ss)))
    start = draw(st.sampled_from([i for i, s in enumerate(shapes) if focus in _ops_for(s, shapes)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    args = [rng.standard_normal(s) for s in shapes]
    lead = draw(st.integers(0, 1))
    shape, steps = shapes[start], []
    for i in range(n_steps):
        if i < lead:
            op = ("unary", draw(st.sampled_from(sorted(UNARY))))
        elif i == lead:
            op = focus
        else:
            op = draw(st.sampled_from(sorted(_ops_for(shape, shapes))))
        steps.append(_draw_step(draw, op, shape, shapes))
        shape = _shape_after(steps[-1], shape, shapes)
    return args, (start, steps, rng.standard_normal(shape))


@pytest.mark.parametrize("focus", FOCUS_OPS, ids=lambda op: ":".join(filter(None, op)))
@settings(max_examples=2, deadline=None, derandomize=True)
@given(data=st.data())
def test_random_program_gradients_match_jax_and_finite_differences(focus, data):
    args, program = data.draw(programs(focus))
    argnums = tuple(range(len(args)))
    value, got = pyasc.value_and_grad(lambda *a: _run(program, a, 0), argnums=argnums)(*args)
    want_value, want = jax.value_and_grad(lambda *a: _run(program, a, 1), argnums=argnums)(*args)
    np.testing.assert_allclose(float(value), float(want_value), rtol=1e-12, atol=1e-12)
    assert len(got) == len(want)
    for g, w, a in zip(got, want, args):
        assert np.shape(g) == a.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-10)
    # A small step: chained matmuls give fast-varying values, whose differences at the default
    # eps=1e-4 carry truncation errors of 1e-5 and more; at 1e-6 rounding is still far below tolerance.
    pyasc.check_grads(lambda *a: _run(program, a, 0), args, order=1, eps=1e-6)


@st.composite
def chains(draw):
    """(x, weight, names): a float64 input (a 0-d scalar or a small array) and 1 to 6 elementwise ops."""
    shape = draw(st.sampled_from([(), (5,), (2, 3)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    names = draw(st.lists(st.sampled_from(sorted(UNARY)), min_size=1, max_size=6))
    return rng.uniform(-2.0, 2.0, size=shape), rng.standard_normal(shape), names


def _chain(names, x, lib):
    for name in names:
        x = UNARY[name][lib](x)
    return x


@settings(max_examples=40, deadline=None, derandomize=True)
@given(chains())
def test_random_elementwise_chains_second_order(case):
    x, weight, names = case

    def f(x):
        return pyasc.sum(_chain(names, x, 0))

    def jf(x):
        return jnp.sum(_chain(names, x, 1))

    if x.ndim == 0:
        got, want = pyasc.grad(pyasc.grad(f))(x), jax.grad(jax.grad(jf))(x)
    else:
        got = pyasc.grad(lambda x: pyasc.sum(pyasc.grad(f)(x) * weight))(x)
        want = jax.grad(lambda x: jnp.sum(jax.grad(jf)(x) * weight))(x)
    assert np.shape(got) == x.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-10)
    pyasc.check_grads(f, (x,), order=2)
