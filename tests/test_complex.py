"""complex64 and complex128 inside operators: arithmetic, equality, the complex functions,
sums, means, products and matmul, with NumPy 2's dtypes and values (NumPy in complex128 as the
reference)."""

import numpy as np
import pyasc
import pytest

RNG = np.random.default_rng(7)
C = {"complex64": np.complex64, "complex128": np.complex128}


def _z(dtype, shape=(6,), scale=2.0):
    v = RNG.uniform(-scale, scale, shape) + 1j * RNG.uniform(-scale, scale, shape)
    return v.astype(dtype)


def _close(got, want, ulps=8):
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    finite = np.isfinite(want)
    for part in (np.real, np.imag):
        np.testing.assert_array_equal(part(got)[~finite], part(want)[~finite])  # inf and NaN exactly
    got, want = got[finite], want[finite]
    eps = np.finfo(np.float32 if want.dtype in (np.complex64, np.float32) else np.float64).eps
    scale = np.maximum(np.abs(want.astype(np.complex128)), 1.0)
    err = np.abs(got.astype(np.complex128) - want.astype(np.complex128)) / scale
    assert np.all(err <= ulps * eps), np.max(err / eps)


OTHERS = {
    "complex64": lambda: _z(np.complex64),
    "complex128": lambda: _z(np.complex128),
    "float32": lambda: RNG.uniform(-3, 3, 6).astype(np.float32),
    "float64": lambda: RNG.uniform(-3, 3, 6),
    "int32": lambda: RNG.integers(-5, 5, 6).astype(np.int32),
    "int64": lambda: RNG.integers(-5, 5, 6),
    "bool": lambda: RNG.integers(0, 2, 6).astype(bool),
    "py_int": lambda: 3,
    "py_float": lambda: -1.5,
    "py_complex": lambda: 0.5 - 2j,
    "np_complex64": lambda: np.complex64(1 + 1j),
}
ARITH = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
         "div": lambda a, b: a / b, "radd": lambda a, b: b + a, "rsub": lambda a, b: b - a,
         "rmul": lambda a, b: b * a, "rdiv": lambda a, b: b / (a + 7)}


@pytest.mark.parametrize("cdt", sorted(C))
@pytest.mark.parametrize("other", sorted(OTHERS))
@pytest.mark.parametrize("op", sorted(ARITH))
def test_arithmetic_dtypes_and_values_follow_numpy(cdt, other, op):
    z, o = _z(C[cdt]), OTHERS[other]()
    if op == "div" and isinstance(o, np.ndarray):
        o = np.where(o == 0, 1, o).astype(o.dtype)  # no division by zero
    fn = ARITH[op]
    got = pyasc.operator(fn)(z, o)
    _close(got, fn(z, o))


@pytest.mark.parametrize("cdt", sorted(C))
def test_equality(cdt):
    z = _z(C[cdt])
    w = z.copy()
    w[::2] += 1j
    eq, ne = pyasc.operator(lambda a, b: (a == b, a != b))(z, w)
    np.testing.assert_array_equal(eq, z == w)
    np.testing.assert_array_equal(ne, z != w)
    np.testing.assert_array_equal(pyasc.operator(lambda a: a == 1.5)(np.array([1.5 + 0j, 1.5 + 1j])), [True, False])


FUNCS = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "abs": np.abs, "conj": np.conj, "real": np.real, "imag": np.imag, "angle": np.angle,
    "square": np.square, "neg": np.negative, "reciprocal": np.reciprocal,
    "conj_method": lambda z: z.conj(), "real_attr": lambda z: z.real, "imag_attr": lambda z: z.imag,
}


@pytest.mark.parametrize("cdt", sorted(C))
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_functions_match_numpy(cdt, name):
    fn = FUNCS[name]
    z = _z(C[cdt], (40,), scale=4.0)
    z[:4] = [0, -2.0, 3j, -1e-3 - 0j]  # zero, the negative real axis, the imaginary axis
    if name == "reciprocal":
        z[0] = 1e-30  # NumPy's reciprocal of 0 is nan+nanj, its 1/0 is inf+nanj: pyasc gives the latter
    got = pyasc.operator(fn)(z)
    with np.errstate(all="ignore"):
        want = fn(z)
    ulps = 64 if name in ("tanh", "sin", "cos", "exp") else 16
    _close(got, want, ulps)


def test_tanh_of_large_real_parts_does_not_overflow():
    z = np.array([30 + 1j, -40 - 2j, 800 + 0.5j])
    _close(pyasc.operator(np.tanh)(z), np.tanh(z))


@pytest.mark.parametrize("cdt", sorted(C))
def test_sums_means_and_products(cdt):
    z = _z(C[cdt], (5, 7), scale=1.2)

    def f(a):
        return a.sum(), a.sum(axis=0), np.sum(a, axis=1, keepdims=True), a.mean(axis=-1), np.prod(a, axis=1), a.prod()

    for got, want in zip(pyasc.operator(f)(z), f(z)):
        _close(got, want, 64)


def test_matmul_mixed_with_real():
    a = _z(np.complex64, (4, 3))
    b = _z(np.complex64, (3, 5))
    r = RNG.standard_normal((3, 5))
    got = pyasc.operator(lambda a, b, r: (a @ b, a @ r, np.matmul(r.T, a.T)))(a, b, r)
    for g, w in zip(got, (a @ b, a @ r, r.T @ a.T)):
        _close(g, w, 64)


def test_power_by_a_known_integer_and_by_a_complex():
    z = _z(np.complex128, (5,), scale=1.5)
    sq, cube, inv = pyasc.operator(lambda a: (a ** 2, a ** 3, a ** -1))(z)
    _close(sq, z ** 2)
    _close(cube, z ** 3)
    _close(inv, z ** -1)
    _close(pyasc.operator(lambda a: a ** (0.5 + 0.25j))(z), z ** (0.5 + 0.25j), 64)


def test_promotion_table_with_complex():
    kinds = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32",
             "float64", "complex64", "complex128"]
    for x in kinds:
        for y in kinds:
            if "complex" not in x + y:
                continue
            a, b = np.ones(3, x), np.ones(3, y)
            got = pyasc.operator(lambda p, q: p * q)(a, b)
            assert got.dtype == np.result_type(a, b), (x, y, got.dtype)


def test_captured_complex_arrays_and_eager_calls():
    w = _z(np.complex64, (4,))

    @pyasc.operator
    def f(x):
        return x * w

    x = np.arange(4, dtype=np.float32)
    _close(f(x), x * w)
    w *= 2
    _close(f(x), x * w)
    z = _z(np.complex64)
    _close(pyasc.exp(z), np.exp(z), 64)


def test_complex_inputs_are_not_modified():
    z = _z(np.complex128, (3, 4))
    before = z.copy()
    pyasc.operator(lambda a: (a * 2j, a.sum(axis=0)))(z)
    np.testing.assert_array_equal(z, before)


def test_unsupported_complex_ops_are_typed_errors_at_the_users_line():
    z = _z(np.complex64)
    with pytest.raises(pyasc.UnsupportedError, match="test_complex.py"):
        pyasc.operator(lambda a: np.arctan(a))(z)


def test_exp_keeps_a_zero_imaginary_part():
    z = np.array([np.inf + 0j, -np.inf + 0j, 1 + 0j, np.inf - 0j])
    got = pyasc.operator(np.exp)(z)
    want = np.exp(z)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


@pytest.mark.parametrize("t", [np.complex64, np.complex128])
def test_division_by_a_python_complex_keeps_the_dtype(t):
    a = np.array([-0.5 + 2j, 3 - 1j, 0.25 + 0.5j], dtype=t)
    for x in (a, t(a[0])):
        for f in (lambda z: z / (1.5 - 0.5j), lambda z: np.divide(z, (0.5 - 1.5j)), lambda z: z / 1j):
            got, want = pyasc.operator(f)(x), np.asarray(f(x))
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(t).eps)


def test_complex_products_check_axes_and_take_empty_axes():
    a = np.array([1 + 1j, 2 - 1j, 0.5j], dtype=np.complex64)
    for axis in ((0, -1), 1):
        with pytest.raises(pyasc.ShapeError):
            pyasc.operator(lambda z, axis=axis: np.prod(z, axis=axis))(a)
    f = pyasc.operator(lambda z: (np.prod(z[3:], axis=None, keepdims=True), np.prod(z[:0], axis=0)))
    for got, want in zip(f(a), (np.prod(a[3:], axis=None, keepdims=True), np.prod(a[:0], axis=0))):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_conjugate_of_bools_is_int8_as_in_numpy():
    b = np.array([True, False, True])
    got = pyasc.operator(lambda v: np.conj(v))(b)
    assert got.dtype == np.conj(b).dtype
    np.testing.assert_array_equal(got, np.conj(b))


def test_a_real_operand_broadcast_against_a_complex_one_gives_parts_of_one_shape():
    r = np.arange(12.0).reshape(4, 3)
    z = np.array([1 + 1j, 2 - 1j, 0.5j], dtype=np.complex128)
    f = lambda a, b: (np.sum(a + b, axis=(0, -1)), np.mean(a - b, axis=0), np.imag(a * b), np.real(b - a))  # noqa: E731
    for got, want in zip(pyasc.operator(f)(r, z), f(r, z)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-14)


def test_matmul_of_real_values_lifted_to_complex():
    b = np.linspace(-1, 1, 5).astype(np.float32)
    m = np.arange(6.0).reshape(2, 3)
    f = lambda x, y: (np.matmul(np.add(x, 0j), np.add(x, 0j)), np.add(y, 1j) @ np.add(y, 0j).T)  # noqa: E731
    for got, want in zip(pyasc.operator(f)(b, m), f(b, m)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_where_of_complex_values_has_numpys_dtype():
    z = np.array([1 + 1j, 2 - 0.5j, -1 + 0j], np.complex64)
    b = np.array([0.5, -1, 2], np.float32)
    cases = [(lambda z, b: np.where(np.real(z) > 0, np.angle(z), 1j)),
             (lambda z, b: np.where(np.real(z) > 0, np.power(0.5 - 1.5j, 3), z)),
             (lambda z, b: np.where(np.real(z) > 0, b, np.complex64(1 - 0.5j))),
             (lambda z, b: np.where(np.real(z) > 0, z.astype(np.complex128), b))]
    for f in cases:
        got, want = pyasc.operator(f)(z, b), f(z, b)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # A Python complex argument is weak beside a complex64 branch.
    for f in (lambda z, c: np.where(np.real(z) > 0, c, np.conjugate(z)), lambda z, c: np.imag(np.where(z != 0, z, c))):
        got, want = pyasc.operator(f)(z, 1.5 + 0.25j), f(z, 1.5 + 0.25j)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_where_with_bools_and_real_parts_of_lifted_values():
    z = np.array([1 + 1j, 2 - 0.5j], np.complex128)
    b = np.array([True, False])
    for f in (lambda z, b: np.where(np.real(z) > np.imag(z), 1j, np.equal(z, z)),
              lambda z, b: np.where(np.not_equal(z, np.conj(z)), b, 1j),
              lambda z, b: np.imag(np.add(np.absolute(z), 0j)),
              lambda z, b: np.real(np.add(b, 0j))):
        got, want = pyasc.operator(f)(z, b), f(z, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_where_of_a_complex128_constant_and_bools_keeps_float64_parts():
    a = np.array([0.3 - 1.2j, 1 + 0j])
    b = np.array([True, False])
    f = lambda a, b: np.where(np.not_equal(a, np.conj(a)), np.exp(0.5 - 1.5j), b)  # noqa: E731
    got, want = pyasc.operator(f)(a, b), f(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_a_ufunc_of_a_python_complex_is_strongly_typed():
    z = np.ones(2, np.complex64)
    got = pyasc.operator(lambda z, c: (np.positive(c) + z, c + z))(z, 1.5 + 0.25j)
    for g, w in zip(got, (np.positive(1.5 + 0.25j) + z, (1.5 + 0.25j) + z)):
        _close(g, w)


def test_numpy_functions_of_a_python_complex_are_strongly_typed():
    z = np.ones(2, np.complex64)
    f = pyasc.operator(lambda z, c: (np.angle(c, deg=True) + z, np.real(c) + z, np.conj(c) + z))
    for g, w in zip(f(z, 1.5 + 0.25j), (np.angle(1.5 + 0.25j, deg=True) + z, np.real(1.5 + 0.25j) + z,
                                         np.conj(1.5 + 0.25j) + z)):
        _close(g, w)


def test_power_of_a_python_complex_by_a_numpy_float32_scalar():
    got = pyasc.operator(lambda a, b: np.power(a, np.float32(1.5)) + b * 0)(1.5 + 0.25j, np.zeros(2, np.complex64))
    want = np.power(1.5 + 0.25j, np.float32(1.5)) + np.zeros(2, np.complex64) * 0
    _close(got, want, 64)


def test_cache_info_counts_the_plans_of_complex_calls():
    op = pyasc.operator(lambda z, x: z * 2 + x)
    z = np.array([1 + 2j, -1j], np.complex64)
    x = np.array([0.5, 1.5], np.float32)
    op(x, x)
    assert op.cache_info() == (0, 1, 1, 1)
    for _ in range(3):
        np.testing.assert_allclose(op(z, x), z * 2 + x)
    assert op.cache_info() == (2, 2, 2, 2)
    op(z.astype(np.complex128), x)
    assert op.cache_info() == (2, 3, 3, 3)
    op.cache_clear()
    assert op.cache_info().currsize == 0
    np.testing.assert_allclose(op(z, x), z * 2 + x)
    assert op.cache_info().currsize == 1
