"""pyasc.grad, value_and_grad, vjp, jvp, stop_gradient and check_grads against jax.grad in float64.

Every elementwise op's rule (the op table's gradient column), the structural rules (where,
casts, reductions, views) and the library rules (matmul, pad, concatenate) are compared with
JAX's derivative of the same function, in float64 and to within float32 rounding in float32.
"""

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pyasc
import pytest

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(7)

# op name -> (JAX function, domain low, domain high)
UNARY = {
    "abs": (jnp.abs, -2, 2), "square": (jnp.square, -2, 2), "exp": (jnp.exp, -2, 2), "exp2": (jnp.exp2, -2, 2),
    "log": (jnp.log, 0.2, 3), "log2": (jnp.log2, 0.2, 3), "log10": (jnp.log10, 0.2, 3),
    "log1p": (jnp.log1p, -0.5, 3), "expm1": (jnp.expm1, -2, 2), "sqrt": (jnp.sqrt, 0.2, 3),
    "cbrt": (jnp.cbrt, 0.2, 3), "rsqrt": (jax.lax.rsqrt, 0.2, 3), "reciprocal": (jnp.reciprocal, 0.5, 3),
    "sin": (jnp.sin, -3, 3), "cos": (jnp.cos, -3, 3), "tan": (jnp.tan, -1, 1), "arcsin": (jnp.arcsin, -0.9, 0.9),
    "arccos": (jnp.arccos, -0.9, 0.9), "arctan": (jnp.arctan, -3, 3), "sinh": (jnp.sinh, -2, 2),
    "cosh": (jnp.cosh, -2, 2), "tanh": (jnp.tanh, -2, 2), "arcsinh": (jnp.arcsinh, -3, 3),
    "arccosh": (jnp.arccosh, 1.2, 3), "arctanh": (jnp.arctanh, -0.9, 0.9), "deg2rad": (jnp.deg2rad, -3, 3),
    "rad2deg": (jnp.rad2deg, -3, 3), "sigmoid": (jax.nn.sigmoid, -4, 4), "erf": (jsp.erf, -2, 2),
    "erfc": (jsp.erfc, -2, 2), "relu": (jax.nn.relu, -2, 2),
    "gelu": (lambda x: jax.nn.gelu(x, approximate=False), -3, 3),
    "fast_gelu": (lambda x: x * jax.nn.sigmoid(1.702 * x), -3, 3), "silu": (jax.nn.silu, -3, 3),
    "softplus": (jax.nn.softplus, -3, 3), "sign": (jnp.sign, -2, 2), "floor": (jnp.floor, -2, 2),
    "ceil": (jnp.ceil, -2, 2), "trunc": (jnp.trunc, -2, 2),
}

BINARY = {
    "add": jnp.add, "subtract": jnp.subtract, "multiply": jnp.multiply, "divide": jnp.divide,
    "power": jnp.power, "maximum": jnp.maximum, "minimum": jnp.minimum, "fmax": jnp.fmax, "fmin": jnp.fmin,
    "hypot": jnp.hypot, "arctan2": jnp.arctan2, "logaddexp": jnp.logaddexp, "logaddexp2": jnp.logaddexp2,
    "remainder": jnp.remainder, "fmod": jnp.fmod, "copysign": jnp.copysign,
}


def _close(got, want, rtol=1e-12, atol=1e-12):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rule_matches_jax(name):
    jf, lo, hi = UNARY[name]
    x = RNG.uniform(lo, hi, size=(5, 7))
    pf = getattr(pyasc, name)
    got = pyasc.grad(lambda x: pyasc.sum(pf(x) * np.cos(x)))(x)
    want = jax.grad(lambda x: jnp.sum(jf(x) * jnp.cos(x)))(x)
    _close(got, want)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_rule_matches_jax_with_broadcasting(name):
    a = RNG.uniform(0.5, 2.0, size=(4, 6))
    b = RNG.uniform(0.5, 2.0, size=(6,)) * RNG.choice([-1, 1], size=6)
    if name in ("power", "remainder", "fmod"):
        b = np.abs(b)
    nf, jf = getattr(np, name), BINARY[name]
    got = pyasc.grad(lambda a, b: pyasc.sum(nf(a, b) * a), argnums=(0, 1))(a, b)
    want = jax.grad(lambda a, b: jnp.sum(jf(a, b) * a), argnums=(0, 1))(a, b)
    _close(got, want)


def test_max_and_min_split_ties_as_jax():
    a = np.array([1.0, 2.0, 3.0, 2.0])
    b = np.array([1.0, 1.0, 3.0, 5.0])
    for pf, jf in [(np.maximum, jnp.maximum), (np.minimum, jnp.minimum)]:
        _close(pyasc.grad(lambda a, b, pf=pf: pyasc.sum(pf(a, b)), argnums=(0, 1))(a, b),
               jax.grad(lambda a, b, jf=jf: jnp.sum(jf(a, b)), argnums=(0, 1))(a, b))
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    _close(pyasc.grad(lambda x: pyasc.sum(pyasc.max(x, axis=1) * np.array([1.0, 2.0])))(x),
           jax.grad(lambda x: jnp.sum(jnp.max(x, axis=1) * jnp.array([1.0, 2.0])))(x))
    _close(pyasc.grad(lambda x: pyasc.min(x))(x), jax.grad(lambda x: jnp.min(x))(x))


def test_where_clip_abs_at_kinks():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    _close(pyasc.grad(lambda x: pyasc.sum(pyasc.where(x > 0.5, x * x, -x)))(x),
           jax.grad(lambda x: jnp.sum(jnp.where(x > 0.5, x * x, -x)))(x))
    _close(pyasc.grad(lambda x: pyasc.sum(pyasc.abs(x) + pyasc.relu(x)))(x),
           jax.grad(lambda x: jnp.sum(jnp.abs(x) + jax.nn.relu(x)))(x))


def test_reductions_and_composites():
    x = RNG.uniform(0.5, 1.5, size=(3, 4, 5))
    cases = [
        (lambda x: pyasc.sum(pyasc.mean(x, axis=(0, 2)) ** 2), lambda x: jnp.sum(jnp.mean(x, axis=(0, 2)) ** 2)),
        (lambda x: pyasc.sum(pyasc.prod(x, axis=1)), lambda x: jnp.sum(jnp.prod(x, axis=1))),
        (lambda x: pyasc.sum(pyasc.softmax(x, axis=-1) * x), lambda x: jnp.sum(jax.nn.softmax(x, axis=-1) * x)),
        (lambda x: pyasc.sum(pyasc.log_softmax(x, axis=1) * x), lambda x: jnp.sum(jax.nn.log_softmax(x, axis=1) * x)),
        (lambda x: pyasc.sum(pyasc.logsumexp(x, axis=2)), lambda x: jnp.sum(jax.nn.logsumexp(x, axis=2))),
        (lambda x: pyasc.sum(np.var(x, axis=0)), lambda x: jnp.sum(jnp.var(x, axis=0))),
        (lambda x: pyasc.sum(np.std(x, axis=-1)), lambda x: jnp.sum(jnp.std(x, axis=-1))),
    ]
    for pf, jf in cases:
        _close(pyasc.grad(pf)(x), jax.grad(jf)(x), rtol=1e-10, atol=1e-12)


def test_views_slices_pad_concatenate():
    x = RNG.standard_normal((6, 5))
    cases = [
        (lambda x: pyasc.sum(x.T @ x), lambda x: jnp.sum(x.T @ x)),
        (lambda x: pyasc.sum(x.reshape(3, 10)[1] * np.arange(10.0)),
         lambda x: jnp.sum(x.reshape(3, 10)[1] * jnp.arange(10.0))),
        (lambda x: pyasc.sum(x[1:5:2, ::-2] * np.array([1.0, 2.0, 3.0])),
         lambda x: jnp.sum(x[1:5:2, ::-2] * jnp.array([1.0, 2.0, 3.0]))),
        (lambda x: pyasc.sum(x[::-3, 1:4] ** 2), lambda x: jnp.sum(x[::-3, 1:4] ** 2)),
        (lambda x: pyasc.sum(np.pad(x, ((1, 2), (0, 3))) * np.arange(72.0).reshape(9, 8)),
         lambda x: jnp.sum(jnp.pad(x, ((1, 2), (0, 3))) * jnp.arange(72.0).reshape(9, 8))),
        (lambda x: pyasc.sum(np.concatenate([x, 2 * x[:2]], axis=0) ** 2),
         lambda x: jnp.sum(jnp.concatenate([x, 2 * x[:2]], axis=0) ** 2)),
        (lambda x: pyasc.sum(np.broadcast_to(x[:, :1], (6, 4)) * np.arange(4.0)),
         lambda x: jnp.sum(jnp.broadcast_to(x[:, :1], (6, 4)) * jnp.arange(4.0))),
    ]
    for pf, jf in cases:
        _close(pyasc.grad(pf)(x), jax.grad(jf)(x))
    # A round trip through float32 passes the cotangent on (rounded to float32 on the way).
    got = pyasc.grad(lambda x: pyasc.sum(x.astype(np.float32).astype(np.float64) * x))(x)
    _close(got, x + x.astype(np.float32), rtol=1e-7)


@pytest.mark.parametrize("sa,sb", [((4, 3), (3, 5)), ((3,), (3, 5)), ((4, 3), (3,)), ((2, 4, 3), (3, 5)),
                                   ((2, 1, 4, 3), (3, 3, 5))])
def test_matmul_rule(sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    _close(pyasc.grad(lambda a, b: pyasc.sum(pyasc.tanh(a @ b)), argnums=(0, 1))(a, b),
           jax.grad(lambda a, b: jnp.sum(jnp.tanh(a @ b)), argnums=(0, 1))(a, b), rtol=1e-10)


def test_value_and_grad_has_aux_argnums_and_pytrees():
    params = {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}
    x = RNG.standard_normal((5, 3))

    def loss(p, x):
        y = pyasc.tanh(x @ p["w"] + p["b"])
        return pyasc.sum(y * y), y

    def jloss(p, x):
        y = jnp.tanh(x @ p["w"] + p["b"])
        return jnp.sum(y * y), y

    (val, aux), g = pyasc.value_and_grad(loss, has_aux=True)(params, x)
    (jval, jaux), jg = jax.value_and_grad(jloss, has_aux=True)(params, x)
    _close(val, jval)
    _close(aux, jaux)
    assert set(g) == {"w", "b"}
    _close([g["b"], g["w"]], [jg["b"], jg["w"]])
    gp, gx = pyasc.grad(lambda p, x: loss(p, x)[0], argnums=(0, 1))(params, x)
    _close(gx, jax.grad(lambda p, x: jloss(p, x)[0], argnums=1)(params, x))


def test_float32_gradient_within_rounding():
    x = RNG.standard_normal(1000).astype(np.float32)
    got = pyasc.grad(lambda x: pyasc.sum(pyasc.gelu(x) * pyasc.exp(-x * x)))(x)
    assert got.dtype == np.float32
    want = jax.grad(lambda x: jnp.sum(jax.nn.gelu(x, approximate=False) * jnp.exp(-x * x)))(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_grad_of_operator_and_class_operator_keep_options():
    @pyasc.operator(precision_mode="fp32")
    def f(x):
        return pyasc.sum(pyasc.sin(x) * x)

    class Op(pyasc.AscendOperatorBase):
        def compute(self, inputs):
            (x,) = inputs
            return pyasc.sum(pyasc.exp(x))

    x = RNG.standard_normal(9)
    g = pyasc.grad(f)
    _close(g(x), np.cos(x) * x + np.sin(x))
    assert g.options["precision_mode"] == "fp32"
    _close(pyasc.grad(Op())(x), np.exp(x))


def test_grad_is_cached_by_signature():
    g = pyasc.grad(lambda x: pyasc.sum(pyasc.exp(x)))
    for n in (4, 4, 5):
        _close(g(np.linspace(0, 1, n)), np.exp(np.linspace(0, 1, n)))
    info = g.cache_info()
    assert info.hits == 1 and info.misses == 2


def test_higher_order_and_jvp():
    x = np.linspace(-2, 2, 9)
    d2 = pyasc.grad(lambda x: pyasc.sum(pyasc.grad(lambda y: pyasc.sum(pyasc.tanh(y) * y))(x)))(x)
    jd2 = jax.grad(lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(jnp.tanh(y) * y))(x)))(x)
    _close(d2, jd2)
    t = RNG.standard_normal(9)
    out, tan = pyasc.jvp(lambda x: pyasc.sin(x) * x, (x,), (t,))
    jout, jtan = jax.jvp(lambda x: jnp.sin(x) * x, (x,), (t,))
    _close((out, tan), (jout, jtan))


def test_vjp_with_pytree_output():
    x = RNG.standard_normal(4)
    out, f_vjp = pyasc.vjp(lambda x: {"a": pyasc.exp(x), "b": x * x}, x)
    ct = {"a": np.ones(4), "b": np.arange(4.0)}
    (g,) = f_vjp(ct)
    _close(g, np.exp(x) + 2 * x * np.arange(4.0))
    _close(out["a"], np.exp(x))


def test_stop_gradient():
    x = np.linspace(0.5, 2, 6)
    got = pyasc.grad(lambda x: pyasc.sum(x * pyasc.stop_gradient(x * x)))(x)
    _close(got, x * x)
    assert pyasc.stop_gradient(x) is x


def test_check_grads_passes_and_catches_a_wrong_rule():
    x = np.linspace(-1, 1, 5)
    pyasc.check_grads(lambda x: pyasc.sum(pyasc.sin(x) * pyasc.exp(x)), (x,), order=2)
    with pytest.raises(AssertionError, match="finite differences"):
        # floor's gradient is zero by convention; finite differences across a step are not.
        pyasc.check_grads(lambda x: pyasc.sum(pyasc.floor(x * 10) * 0 + pyasc.round(x * 1e4) / 1e4 * 3),
                          (np.array([0.12345]),), modes=("fwd",), eps=1e-4)


@pyasc.vectorized_operator
def _halve_until_small(x):
    while x > 1.0:
        x = x * 0.5
    return x


@pyasc.vectorized_operator
def _poly(x, y):
    return x * x * y + 3.0 * y


@pyasc.kernel
def double_into(x, y):
    i = pyasc.program_id(0)
    y[i] = x[i] * 2.0


def _launch_inside(x):
    y = x * 0.0
    double_into[4](x, y)
    return y


def test_a_vectorized_operator_without_loops_joins_the_trace_and_differentiates():
    x, y = RNG.standard_normal(7), RNG.standard_normal(7)
    assert _poly.mode(x, y) == "fused"
    gx, gy = pyasc.grad(lambda x, y: pyasc.sum(pyasc.sin(_poly(x, y))), argnums=(0, 1))(x, y)
    c = np.cos(x * x * y + 3.0 * y)
    np.testing.assert_allclose(gx, c * 2 * x * y, rtol=1e-12)
    np.testing.assert_allclose(gy, c * (x * x + 3.0), rtol=1e-12)


def test_errors_are_typed_and_name_the_line():
    with pytest.raises(pyasc.ShapeError, match="scalar output"):
        pyasc.grad(lambda x: pyasc.exp(x))(np.ones(3))
    with pytest.raises(pyasc.DTypeError, match="float"):
        pyasc.grad(lambda x: pyasc.sum(x * 2.0))(np.arange(3))
    loops = "vectorized operator whose body loops.*no gradient rule.*custom_vjp"
    with pytest.raises(pyasc.UnsupportedError, match=loops) as e:
        pyasc.grad(lambda x: pyasc.sum(_halve_until_small(x)))(np.ones(3))
    assert e.value.filename == __file__
    with pytest.raises(pyasc.UnsupportedError, match="kernel 'double_into'.*no gradient rule.*custom_vjp") as e:
        pyasc.grad(lambda x: pyasc.sum(_launch_inside(x)))(np.ones(4, np.float32))
    assert e.value.filename == __file__
    with pytest.raises(pyasc.InvalidArgumentError, match="argnums"):
        pyasc.grad(lambda x: pyasc.sum(x), argnums=2)(np.ones(3))


def test_integer_values_carry_no_gradient():
    x = np.linspace(0, 3, 4)
    got = pyasc.grad(lambda x: pyasc.sum(x * (x > 1) + x.astype(np.int32).astype(np.float64)))(x)
    _close(got, (x > 1).astype(np.float64))


@pytest.mark.parametrize("case", ["cumsum1", "cumsum0", "cumprod", "logcumsumexp", "take0", "take1", "fancy",
                                  "at_set", "at_add"])
def test_scan_take_and_scatter_rules(case):
    v = RNG.uniform(0.5, 1.5, (5, 4))
    cases = {
        "cumsum1": (lambda a: pyasc.sum(pyasc.cumsum(a, axis=1) * a), lambda a: jnp.sum(jnp.cumsum(a, axis=1) * a)),
        "cumsum0": (lambda a: pyasc.sum(pyasc.cumsum(a, axis=0) ** 2), lambda a: jnp.sum(jnp.cumsum(a, axis=0) ** 2)),
        "cumprod": (lambda a: pyasc.sum(pyasc.cumprod(a, axis=1)), lambda a: jnp.sum(jnp.cumprod(a, axis=1))),
        "logcumsumexp": (lambda a: pyasc.sum(pyasc.logcumsumexp(a, axis=1) * a),
                         lambda a: jnp.sum(jax.lax.cumlogsumexp(a, axis=1) * a)),
        "take0": (lambda a: pyasc.sum(pyasc.take(a, np.array([0, 2, 2, -1]), axis=0) * np.arange(4.0)),
                  lambda a: jnp.sum(jnp.take(a, jnp.array([0, 2, 2, -1]), axis=0) * jnp.arange(4.0))),
        "take1": (lambda a: pyasc.sum(pyasc.take(a, np.array([[3, 1], [1, 1]]), axis=1) ** 2),
                  lambda a: jnp.sum(jnp.take(a, jnp.array([[3, 1], [1, 1]]), axis=1) ** 2)),
        "fancy": (lambda a: pyasc.sum(a[np.array([0, 2, 2])] ** 2), lambda a: jnp.sum(a[jnp.array([0, 2, 2])] ** 2)),
        "at_set": (lambda a: pyasc.sum(a.at[1].set(a[0] * 3) * a), lambda a: jnp.sum(a.at[1].set(a[0] * 3) * a)),
        "at_add": (lambda a: pyasc.sum(a.at[np.array([1, 1, 3])].add(a[0] * 3) ** 2),
                   lambda a: jnp.sum(a.at[jnp.array([1, 1, 3])].add(a[0] * 3) ** 2)),
    }
    pf, jf = cases[case]
    _close(pyasc.grad(pf)(v), jax.grad(jf)(v), rtol=1e-12, atol=1e-12)


def test_pixel_shuffle_rule_is_the_adjoint():
    x = RNG.standard_normal((2, 12, 3, 4))
    w = RNG.standard_normal((2, 3, 6, 8))

    def ref_shuffle(x, r):
        n, c, h, wd = x.shape
        t = x.reshape(n, c // (r * r), r, r, h, wd).transpose(0, 1, 4, 2, 5, 3)
        return t.reshape(n, c // (r * r), h * r, wd * r)

    got = pyasc.grad(lambda x: pyasc.sum(pyasc.pixel_shuffle(x, 2) * w))(x)
    # The gradient of <shuffle(x), w> is the adjoint applied to w: <shuffle(e_i), w> for each basis x.
    want = np.zeros_like(x)
    flat = want.reshape(-1)
    for i in range(flat.size):
        e = np.zeros(x.size)
        e[i] = 1.0
        flat[i] = np.sum(ref_shuffle(e.reshape(x.shape), 2) * w)
    _close(got, want)


def _custom_softplus():
    @pyasc.custom_vjp
    def softplus(x):
        return pyasc.log1p(pyasc.exp(x))

    def fwd(x):
        return softplus(x), x

    def bwd(x, g):
        return (g * pyasc.sigmoid(x) * 2,)  # twice the true derivative: shows the rule is used

    softplus.defvjp(fwd, bwd)
    return softplus


def test_custom_vjp_rule_is_used_nested_and_in_jvp():
    softplus = _custom_softplus()
    x = np.linspace(-2, 2, 5)
    s = 1 / (1 + np.exp(-x))
    _close(softplus(x), np.log1p(np.exp(x)))
    _close(pyasc.grad(lambda x: pyasc.sum(softplus(x) * x))(x), 2 * s * x + np.log1p(np.exp(x)))
    sp = np.log1p(np.exp(x))
    _close(pyasc.grad(lambda x: pyasc.sum(softplus(softplus(x))))(x), 2 * s * 2 / (1 + np.exp(-sp)))
    _close(pyasc.jvp(softplus, (x,), (np.ones(5),))[1], 2 * s)
    _close(pyasc.grad(lambda x: pyasc.sum(pyasc.grad(lambda y: pyasc.sum(softplus(y)))(x)))(x), 2 * s * (1 - s))


def test_custom_vjp_gives_a_rule_to_an_op_without_one():
    @pyasc.custom_vjp
    def sorted_values(x):
        return pyasc.sort(x)

    def fwd(x):
        order = pyasc.argsort(x)
        return pyasc.take(x, order), order  # (sort has a rule of its own; this one is the user's)

    def bwd(order, g):
        return (pyasc.zeros(g.shape, g.dtype).at[order].add(g),)

    sorted_values.defvjp(fwd, bwd)
    x = np.array([3.0, 1.0, 2.0])
    got = pyasc.grad(lambda x: pyasc.sum(sorted_values(x) * np.array([1.0, 10.0, 100.0])))(x)
    _close(got, np.array([100.0, 1.0, 10.0]))
    with pytest.raises(pyasc.InvalidArgumentError, match="defvjp"):
        pyasc.grad(lambda x: pyasc.sum(pyasc.custom_vjp(lambda x: x * 2)(x)))(x)


@pytest.mark.parametrize("kind", ["plain", "causal", "bool", "additive"])
def test_attention_rule_matches_the_written_out_formula(kind):
    q, k, v = RNG.standard_normal((2, 5, 4)), RNG.standard_normal((2, 6, 4)), RNG.standard_normal((2, 6, 3))
    w = RNG.standard_normal((2, 5, 3))
    mask = {"bool": RNG.random((5, 6)) > 0.3, "additive": RNG.standard_normal((5, 6))}.get(kind)
    if kind == "bool":
        mask[:, 0] = True
    if kind == "causal":
        q = RNG.standard_normal((2, 6, 4))
        w = RNG.standard_normal((2, 6, 3))

    def ref(q, k, v, m):
        s = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if kind == "causal":
            s = jnp.where(jnp.tril(jnp.ones(s.shape[-2:], bool)), s, -jnp.inf)
        if kind == "bool":
            s = jnp.where(m, s, -jnp.inf)
        if kind == "additive":
            s = s + m
        return jax.nn.softmax(s, -1) @ v

    def pf(q, k, v, m):
        out = pyasc.scaled_dot_product_attention(q, k, v, mask=m, is_causal=kind == "causal")
        return pyasc.sum(out * w)

    nums = (0, 1, 2, 3) if kind == "additive" else (0, 1, 2)
    args = (q, k, v) if mask is None else (q, k, v, mask)
    got = pyasc.grad(lambda *a: pf(*a, *([None] * (4 - len(a)))), argnums=nums)(*args)
    want = jax.grad(lambda *a: jnp.sum(ref(*a, *([None] * (4 - len(a)))) * w), argnums=nums)(*args)
    _close(got, want)


@pytest.mark.parametrize("case", ["sort1", "sort0", "topk", "take_along", "partition"])
def test_sort_rules_send_cotangents_back_to_their_positions(case):
    v, w = RNG.standard_normal((4, 7)), RNG.standard_normal((4, 7))
    idx = np.argsort(RNG.random((4, 7)), axis=1)[:, :3]
    cases = {
        "sort1": (lambda a: pyasc.sum(pyasc.sort(a, axis=1) * w), lambda a: jnp.sum(jnp.sort(a, axis=1) * w)),
        "sort0": (lambda a: pyasc.sum(pyasc.sort(a, axis=0) * w), lambda a: jnp.sum(jnp.sort(a, axis=0) * w)),
        "topk": (lambda a: pyasc.sum(pyasc.topk(a, 3)[0] * w[:, :3]),
                 lambda a: jnp.sum(jax.lax.top_k(a, 3)[0] * w[:, :3])),
        "take_along": (lambda a: pyasc.sum(pyasc.take_along_axis(a, idx, axis=1) * w[:, :3]),
                       lambda a: jnp.sum(jnp.take_along_axis(a, idx, axis=1) * w[:, :3])),
        "partition": (lambda a: pyasc.sum(pyasc.partition(a, 3, axis=1)[:, 3]),
                      lambda a: jnp.sum(jnp.sort(a, axis=1)[:, 3])),
    }
    pf, jf = cases[case]
    _close(pyasc.grad(pf)(v), jax.grad(jf)(v))


def test_gradients_follow_the_precision_mode_and_check_accuracy_reports_them():
    x = RNG.standard_normal(1000).astype(np.float32)
    f32 = pyasc.grad(lambda x: pyasc.sum(pyasc.gelu(x) * x))
    op16 = pyasc.operator(lambda x: pyasc.sum(pyasc.gelu(x) * x), precision_mode="force_fp16")
    g16 = pyasc.grad(op16)
    assert g16.options["precision_mode"] == "force_fp16"
    want = jax.grad(lambda x: jnp.sum(jax.nn.gelu(x, approximate=False) * x))(x.astype(np.float64))
    err32, err16 = np.abs(f32(x) - want).max(), np.abs(g16(x) - want).max()
    assert err32 < 1e-5 and 1e-5 < err16 < 2e-2  # float16 compute, float32 result
    report = pyasc.check_accuracy(f32, x)
    assert report.passed and report.outputs[0].max_abs < 1e-5
    h = pyasc.grad(lambda x: pyasc.sum(pyasc.gelu(x) * x))(x.astype(np.float16))
    assert h.dtype == np.float16
    np.testing.assert_allclose(h.astype(np.float64), want, atol=2e-2, rtol=2e-2)


def test_the_api_contract_example():
    @pyasc.operator
    def loss(w, x, y):
        h = np.maximum(x @ w, 0)
        return -np.sum(y * pyasc.log_softmax(h, -1))

    w, x = RNG.standard_normal((5, 3)).astype(np.float32), RNG.standard_normal((8, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 8)]
    g = pyasc.grad(loss)(w, x, y)
    assert g.shape == w.shape and g.dtype == w.dtype
    want = jax.grad(lambda w: -jnp.sum(y * jax.nn.log_softmax(jnp.maximum(x @ w, 0), -1)))(w.astype(np.float64))
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sd,stride,pad,dil,groups,bias", [
    (1, 1, 0, 1, 1, False), (2, 1, 1, 1, 1, True), (2, 2, 1, 1, 1, False), (2, 2, 0, 2, 1, False),
    (2, 1, 2, 1, 2, False), (2, 3, 1, 1, 1, False), (3, 1, 1, 1, 1, False), (1, 2, 3, 2, 2, True),
    (2, 2, 4, 1, 1, False)])
def test_conv_rule_matches_jax(sd, stride, pad, dil, groups, bias):
    def jconv(x, w):
        return jax.lax.conv_general_dilated(x, w, (stride,) * sd, [(pad, pad)] * sd, rhs_dilation=(dil,) * sd,
                                            feature_group_count=groups)

    x = RNG.standard_normal((2, 4) + (9,) * sd)
    w = RNG.standard_normal((6, 4 // groups) + (3,) * sd)
    b = RNG.standard_normal(6)
    wt = RNG.standard_normal(np.shape(jconv(x, w)))
    conv = {1: pyasc.conv1d, 2: pyasc.conv2d, 3: pyasc.conv3d}[sd]

    def pf(x, w, b):
        y = conv(x, w, b if bias else None, stride=stride, padding=pad, dilation=dil, groups=groups)
        return pyasc.sum(y * wt)

    def jf(x, w, b):
        y = jconv(x, w)
        return jnp.sum((y + b.reshape((1, -1) + (1,) * sd) if bias else y) * wt)

    nums = (0, 1, 2) if bias else (0, 1)
    _close(pyasc.grad(pf, argnums=nums)(x, w, b), jax.grad(jf, argnums=nums)(x, w, b), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("kind,k,s,p,shape", [
    ("max", 2, 2, 0, (2, 3, 8, 8)), ("max", 3, 2, 1, (2, 3, 9, 7)), ("max", 3, 1, 1, (3, 6, 5)),
    ("avg", 2, 2, 0, (2, 3, 8, 8)), ("avg", 3, 2, 1, (2, 3, 9, 7)), ("avg", (3, 2), (1, 2), (1, 0), (3, 6, 5))])
def test_pool_rules_match_jax(kind, k, s, p, shape):
    k2, s2, p2 = ((v, v) if isinstance(v, int) else v for v in (k, s, p))
    x = RNG.standard_normal(shape)
    lead = (1,) * (len(shape) - 2)
    pads = [(0, 0)] * (len(shape) - 2) + [(p2[0], p2[0]), (p2[1], p2[1])]

    def jpool(x):
        if kind == "max":
            return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, lead + k2, lead + s2, pads)
        return jax.lax.reduce_window(x, 0.0, jax.lax.add, lead + k2, lead + s2, pads) / (k2[0] * k2[1])

    wt = RNG.standard_normal(np.shape(jpool(x)))
    pool = pyasc.max_pool2d if kind == "max" else pyasc.avg_pool2d
    got = pyasc.grad(lambda x: pyasc.sum(pool(x, k, s, p) * wt))(x)
    _close(got, jax.grad(lambda x: jnp.sum(jpool(x) * wt))(x))


def test_max_pool_gives_a_tied_window_s_cotangent_to_its_first_maximum():
    x = np.array([[[1.0, 1.0, 0.0, 2.0], [1.0, 0.0, 2.0, 2.0]]])
    got = pyasc.grad(lambda x: pyasc.sum(pyasc.max_pool2d(x, 2)))(x)
    np.testing.assert_array_equal(got, [[[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("axis", [0, 1])
def test_running_extremes_send_cotangents_to_the_running_extreme(name, axis):
    x = RNG.standard_normal((6, 7))
    wt = RNG.standard_normal((6, 7))
    jf = jax.lax.cummax if name == "cummax" else jax.lax.cummin
    got = pyasc.grad(lambda x: pyasc.sum(getattr(pyasc, name)(x, axis=axis) * wt))(x)
    _close(got, jax.grad(lambda x: jnp.sum(jf(x, axis=axis) * wt))(x))
    # A tie sends the cotangent to the later position (PyTorch's cummax indices).
    t = np.array([1.0, 3.0, 2.0, 3.0, 0.0])
    np.testing.assert_array_equal(pyasc.grad(lambda t: pyasc.sum(pyasc.cummax(t)))(t), [1.0, 2.0, 0.0, 2.0, 0.0])


@pytest.mark.parametrize("case", ["median_odd", "median_even", "median_all", "quantile", "quantiles"])
def test_median_and_quantile_rules_match_jax(case):
    x = RNG.standard_normal((5, 6))
    if case == "median_odd":
        pf, jf = (lambda x: pyasc.median(x, axis=0)), (lambda x: jnp.median(x, axis=0))
    elif case == "median_even":
        pf, jf = (lambda x: pyasc.median(x, axis=1)), (lambda x: jnp.median(x, axis=1))
    elif case == "median_all":
        pf, jf = pyasc.median, jnp.median
    elif case == "quantile":
        pf, jf = (lambda x: pyasc.quantile(x, 0.3, axis=1)), (lambda x: jnp.quantile(x, 0.3, axis=1))
    else:
        q = np.array([0.0, 0.25, 0.9, 1.0])
        pf, jf = (lambda x: pyasc.quantile(x, q, axis=0)), (lambda x: jnp.quantile(x, q, axis=0))
    wt = RNG.standard_normal(np.shape(jf(x)))
    _close(pyasc.grad(lambda x: pyasc.sum(pf(x) * wt))(x), jax.grad(lambda x: jnp.sum(jf(x) * wt))(x))


@pytest.mark.parametrize("case", ["nanmedian_odd", "nanmedian_even", "nanquantiles", "nanpercentile"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_order_statistics_rules_match_jax(case, dtype):
    x = RNG.standard_normal((6, 7)).astype(dtype)
    x[RNG.random(x.shape) < 0.3] = np.nan
    x[2] = np.nan  # a row of NaNs: NaN value, no gradient
    x[4, :] = RNG.standard_normal(7)  # a row without NaNs
    if case == "nanmedian_odd":
        x[0, :3] = np.nan  # 4 left: the middle pair
        x[1, :2] = np.nan  # 5 left: the middle one
        pf, jf = (lambda x: pyasc.nanmedian(x, axis=1)), (lambda x: jnp.nanmedian(x, axis=1))
    elif case == "nanmedian_even":
        pf, jf = (lambda x: pyasc.nanmedian(x.T, axis=0)), (lambda x: jnp.nanmedian(x.T, axis=0))
    elif case == "nanquantiles":
        q = np.array([0.0, 0.3, 0.5, 1.0])
        pf, jf = (lambda x: pyasc.nanquantile(x, q, axis=1)), (lambda x: jnp.nanquantile(x, q, axis=1))
    else:
        pf, jf = (lambda x: pyasc.nanpercentile(x, 70, axis=1)), (lambda x: jnp.nanpercentile(x, 70, axis=1))
    x64 = x.astype(np.float64)
    wt = RNG.standard_normal(np.shape(jf(x64)))
    want = jax.grad(lambda x: jnp.nansum(jf(x) * wt))(x64)
    got = pyasc.grad(lambda x: pyasc.nansum(pf(x) * wt))(x)
    assert got.dtype == dtype and np.all(got[2] == 0)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_pad_modes_add_the_cotangent_back_where_they_read(mode):
    x = RNG.standard_normal((4, 5))
    widths = ((2, 3), (1, 4))
    wt = RNG.standard_normal(np.pad(x, widths, mode=mode).shape)
    got = pyasc.grad(lambda x: pyasc.sum(np.pad(x, widths, mode=mode) * wt))(x)
    _close(got, jax.grad(lambda x: jnp.sum(jnp.pad(x, widths, mode=mode) * wt))(x))


def _jax_stencil(body, u, mode, cval, steps):
    """The 1-halo 2-D stencil ``body(c, n, s, w, e)`` in JAX with a pyasc boundary mode."""
    pads = {"constant": "constant", "nearest": "edge", "wrap": "wrap", "reflect": "symmetric"}
    for _ in range(steps):
        src = jnp.pad(u, 1, mode=pads[mode], **({"constant_values": cval} if mode == "constant" else {})) \
            if mode in pads else u
        core = body(src[1:-1, 1:-1], src[:-2, 1:-1], src[2:, 1:-1], src[1:-1, :-2], src[1:-1, 2:])
        if mode == "fill":
            u = jnp.pad(core, 1, constant_values=cval)
        elif mode == "skip":
            u = u.at[1:-1, 1:-1].set(core)
        else:
            u = core
    return u


@pytest.mark.parametrize("mode", ["fill", "skip", "constant", "nearest", "wrap", "reflect"])
@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("linear", [True, False])
def test_stencil_operator_gradient_is_the_adjoint_stencil(mode, steps, linear):
    if linear:
        def body(c, n, s, w, e):
            return 0.5 * c + 0.125 * (n + s + w + e)
    else:
        def body(c, n, s, w, e):
            return c * n - 0.25 * np.sqrt(np.abs(s) + 1.0) + w * e * 0.5

    op = pyasc.stencil_operator(lambda u: body(u[0, 0], u[-1, 0], u[1, 0], u[0, -1], u[0, 1]),
                                boundary=mode, cval=0.5, iterations=steps)
    u = RNG.standard_normal((7, 9)) * 0.5
    wt = RNG.standard_normal((7, 9))
    jbody = body if linear else (lambda c, n, s, w, e: c * n - 0.25 * jnp.sqrt(jnp.abs(s) + 1.0) + w * e * 0.5)
    val, got = pyasc.value_and_grad(lambda u: pyasc.sum(op(u) * wt))(u)
    want_val, want = jax.value_and_grad(lambda u: jnp.sum(_jax_stencil(jbody, u, mode, 0.5, steps) * wt))(u)
    _close(val, np.sum(op(u) * wt), rtol=1e-12)
    _close((val, got), (want_val, want), rtol=1e-10, atol=1e-12)


def test_stencil_operator_runs_inside_an_operator_and_takes_fields_and_parameters():
    lap = pyasc.stencil_operator(lambda u, k, c: c[0] * (u[-1] + u[1] - 2 * u[0]) * k[0],
                                 standard_indexing=("k",), boundary="skip", iterations=2)

    @pyasc.operator
    def heat(u, k, c):
        return lap(u, k, c) + u

    u, c, k = RNG.standard_normal(12), RNG.uniform(0.5, 1.0, 12), np.array([0.1])
    np.testing.assert_allclose(heat(u, k, c), lap(u, k, c) + u, rtol=1e-12)
    g = pyasc.grad(lambda u, c: pyasc.sum(heat(u, k, c) ** 2), argnums=(0, 1))(u, c)
    pyasc.check_grads(lambda u, c: pyasc.sum(heat(u, k, c) ** 2), (u, c), order=1)
    assert g[0].shape == u.shape and g[1].shape == c.shape


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_attention_backward_over_many_key_blocks_and_broadcast_batches(causal, dtype):
    q = RNG.standard_normal((2, 3, 300, 16)).astype(dtype)
    k = RNG.standard_normal((3, 280, 16)).astype(dtype)
    v = RNG.standard_normal((1, 3, 280, 8)).astype(dtype)
    w = RNG.standard_normal((2, 3, 300, 8)).astype(dtype)

    def ref(q, k, v):
        s = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(16)
        if causal:
            s = jnp.where(jnp.tril(jnp.ones(s.shape[-2:], bool)), s, -jnp.inf)
        return jax.nn.softmax(s, -1) @ v

    g = pyasc.grad(lambda q, k, v: pyasc.sum(pyasc.scaled_dot_product_attention(q, k, v, is_causal=causal) * w),
                   argnums=(0, 1, 2))
    got = g(q, k, v)
    ir = g.get_compiled_op(q, k, v).graph_ir()
    assert "attention_backward" in ir and "attention_stats" in ir
    f64 = [a.astype(np.float64) for a in (q, k, v)]
    want = jax.grad(lambda q, k, v: jnp.sum(ref(q, k, v) * w.astype(np.float64)), argnums=(0, 1, 2))(*f64)
    tol = dict(rtol=1e-10, atol=1e-11) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-4)
    for a, b in zip(got, want):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, **tol)
    # The cotangent of a plain sum is a broadcast of ones (read with stride 0).
    got = pyasc.grad(lambda q: pyasc.sum(pyasc.scaled_dot_product_attention(q, k, v, is_causal=causal)))(q)
    want = jax.grad(lambda q: jnp.sum(ref(q, *f64[1:])))(f64[0])
    np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("kind", ["bool", "additive", "additive_wanted"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_masked_attention_backward_matches_jax(kind, dtype):
    q = RNG.standard_normal((2, 3, 200, 16)).astype(dtype)
    k = RNG.standard_normal((3, 170, 16)).astype(dtype)
    v = RNG.standard_normal((3, 170, 8)).astype(dtype)
    w = RNG.standard_normal((2, 3, 200, 8)).astype(dtype)
    if kind == "bool":
        # Broadcast over the batch; every query keeps at least one key.
        mask = RNG.random((200, 170)) < 0.7
        mask[:, 0] = True
    else:
        mask = RNG.standard_normal((3, 1, 170)).astype(dtype)

    def ref(q, k, v, m):
        s = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(16)
        s = jnp.where(m, s, -jnp.inf) if kind == "bool" else s + m
        return jax.nn.softmax(s, -1) @ v

    f64 = [a.astype(np.float64) for a in (q, k, v, w)]
    m64 = mask if kind == "bool" else mask.astype(np.float64)
    tol = dict(rtol=1e-10, atol=1e-11) if dtype == np.float64 else dict(rtol=3e-4, atol=3e-4)
    if kind == "additive_wanted":
        g = pyasc.grad(lambda q, m: pyasc.sum(pyasc.scaled_dot_product_attention(q, k, v, m) * w), argnums=(0, 1))
        got = g(q, mask)
        want = jax.grad(lambda q, m: jnp.sum(ref(q, f64[1], f64[2], m) * f64[3]), argnums=(0, 1))(f64[0], m64)
    else:
        g = pyasc.grad(lambda q, k, v: pyasc.sum(pyasc.scaled_dot_product_attention(q, k, v, mask) * w),
                       argnums=(0, 1, 2))
        got = g(q, k, v)
        ir = g.get_compiled_op(q, k, v).graph_ir()
        # The routine reads the mask block by block and the forward's statistics.
        assert "attention_backward" in ir and "attention_stats" in ir
        want = jax.grad(lambda q, k, v: jnp.sum(ref(q, k, v, m64) * f64[3]), argnums=(0, 1, 2))(*f64[:3])
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("causal", [False, True])
def test_the_forward_hands_its_statistics_to_the_backward_and_its_result_to_every_other_user(causal):
    q, k, v = RNG.standard_normal((2, 150, 8)), RNG.standard_normal((2, 140, 8)), RNG.standard_normal((2, 140, 5))

    def ref(q, k, v):
        s = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(8)
        if causal:
            s = jnp.where(jnp.tril(jnp.ones(s.shape[-2:], bool)), s, -jnp.inf)
        return jax.nn.softmax(s, -1) @ v

    def pf(q, k, v):
        y = pyasc.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return pyasc.sum(pyasc.tanh(y) * y), (y.transpose(0, 2, 1), y + 1.0)

    def jf(q, k, v):
        y = ref(q, k, v)
        return jnp.sum(jnp.tanh(y) * y), (jnp.swapaxes(y, 1, 2), y + 1.0)

    vg = pyasc.value_and_grad(pf, argnums=(0, 1, 2), has_aux=True)
    got = vg(q, k, v)
    want = jax.value_and_grad(jf, argnums=(0, 1, 2), has_aux=True)(q, k, v)
    _close(got, want, rtol=1e-10, atol=1e-12)
    assert "attention_stats" in vg.get_compiled_op(q, k, v).graph_ir()


def test_fused_attention_backward_has_a_gradient_jvp_and_second_order():
    q, k, v = RNG.standard_normal((2, 7, 4)), RNG.standard_normal((2, 9, 4)), RNG.standard_normal((2, 9, 3))
    tq, tk, tv = RNG.standard_normal(q.shape), RNG.standard_normal(k.shape), RNG.standard_normal(v.shape)
    w = RNG.standard_normal((2, 7, 3))

    def ref(q, k, v):
        return jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / 2.0, -1) @ v

    out, tan = pyasc.jvp(pyasc.scaled_dot_product_attention, (q, k, v), (tq, tk, tv))
    want_out, want_tan = jax.jvp(ref, (q, k, v), (tq, tk, tv))
    _close((out, tan), (want_out, want_tan), rtol=1e-10, atol=1e-12)

    def pf(q, k, v):
        return pyasc.sum(pyasc.scaled_dot_product_attention(q, k, v) * w)

    def jf(q, k, v):
        return jnp.sum(ref(q, k, v) * w)

    got = pyasc.grad(lambda q, k, v: pyasc.sum(pyasc.grad(pf, argnums=(0, 1, 2))(q, k, v)[0] ** 2))(q, k, v)
    want = jax.grad(lambda q, k, v: jnp.sum(jax.grad(jf, argnums=(0, 1, 2))(q, k, v)[0] ** 2))(q, k, v)
    _close(got, want, rtol=1e-9, atol=1e-11)
