"""Scans inside operators against NumPy: ``np.cumsum``, ``np.cumprod``, ``x.cumsum()``,
``ufunc.accumulate`` and ``pyasc.cumsum/cumprod/cummax/cummin/logcumsumexp``.

Integer results are exact (wrapping as NumPy's); float results are checked against a float64
NumPy evaluation with a tolerance that grows with the position along the scanned axis;
maxima and minima are exact (NaN propagates). Result dtypes are NumPy's for every dtype.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyasc
import pytest
from conftest import line_of, supported_isas
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]
BLOCK = 1 << 16


def _ufunc_call(name):
    """The NumPy call of scan ``name`` taking (array, axis, dtype)."""
    return {
        "np.cumsum": lambda a, axis, dtype=None: np.cumsum(a, axis=axis, dtype=dtype),
        "np.cumprod": lambda a, axis, dtype=None: np.cumprod(a, axis=axis, dtype=dtype),
        "method.cumsum": lambda a, axis, dtype=None: a.cumsum(axis, dtype),
        "method.cumprod": lambda a, axis, dtype=None: a.cumprod(axis, dtype),
        "add.accumulate": lambda a, axis, dtype=None: np.add.accumulate(a, axis=axis, dtype=dtype),
        "multiply.accumulate": lambda a, axis, dtype=None: np.multiply.accumulate(a, axis=axis, dtype=dtype),
        "maximum.accumulate": lambda a, axis, dtype=None: np.maximum.accumulate(a, axis=axis, dtype=dtype),
        "minimum.accumulate": lambda a, axis, dtype=None: np.minimum.accumulate(a, axis=axis, dtype=dtype),
        "logaddexp.accumulate": lambda a, axis, dtype=None: np.logaddexp.accumulate(a, axis=axis, dtype=dtype),
    }[name]


CALLS = ["np.cumsum", "np.cumprod", "method.cumsum", "method.cumprod", "add.accumulate", "multiply.accumulate",
         "maximum.accumulate", "minimum.accumulate", "logaddexp.accumulate"]
KIND = {"np.cumsum": "sum", "method.cumsum": "sum", "add.accumulate": "sum", "np.cumprod": "prod",
        "method.cumprod": "prod", "multiply.accumulate": "prod", "maximum.accumulate": "max",
        "minimum.accumulate": "min", "logaddexp.accumulate": "lse"}


def _run(call, x, axis, dtype=None):
    f = _ufunc_call(call)
    return pyasc.operator(lambda a: f(a, axis, dtype))(x)


def _positions(shape, axis):
    """Index along the scanned axis of every element of a result (1-based), for tolerances."""
    if axis is None or len(shape) <= 1:
        return np.arange(1, int(np.prod(shape)) + 1).reshape(shape)
    n = shape[axis]
    k = np.arange(1, n + 1).reshape([n if d == axis % len(shape) else 1 for d in range(len(shape))])
    return np.broadcast_to(k, shape)


def _check(call, x, axis, dtype=None):
    """Run ``call`` on ``x`` in an operator and compare with NumPy."""
    f = _ufunc_call(call)
    with np.errstate(all="ignore"):
        want = f(x, axis, dtype)
    got = _run(call, x, axis, dtype)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (call, x.dtype, got.dtype, want.dtype)
    assert got.shape == want.shape, (call, got.shape, want.shape)
    kind = KIND[call]
    if want.dtype.kind in "biu" or kind in ("max", "min"):
        np.testing.assert_array_equal(got, want, err_msg=f"{call} {x.dtype} axis={axis}")
        return
    # Floats: against a float64 evaluation of the same scan of the input in the result dtype.
    x64 = np.asarray(x).astype(want.dtype).astype(np.float64)
    with np.errstate(all="ignore"):
        ref = f(x64, axis)
    shape = ref.shape
    pos = _positions(shape, axis)
    eps = np.finfo(want.dtype).eps
    with np.errstate(all="ignore"):
        if kind == "sum":
            mag = np.abs(f(np.abs(x64), axis))
            tol = eps * np.abs(ref) + 4 * pos * np.finfo(np.float64).eps * mag
        elif kind == "prod":
            tol = 2 * pos * eps * np.abs(ref)
        else:
            tol = 2 * eps * np.maximum(np.abs(ref), 1.0)
        err = np.abs(got.astype(np.float64) - ref)
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    bad = ~same & ~(err <= tol)
    assert not bad.any(), (f"{call} {x.dtype}->{want.dtype} axis={axis} at {np.argwhere(bad)[:3].tolist()}: "
                           f"got {got[bad][:3]}, want {ref[bad][:3]}")


# -- result dtypes -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("call", CALLS)
def test_result_dtypes_are_numpys(call, dtype):
    x = (np.arange(1, 13) % 3).astype(dtype).reshape(3, 4)
    want_dtype = _ufunc_call(call)(x, 1).dtype
    if want_dtype == np.float16:
        with pytest.raises(pyasc.DTypeError, match="float16"):
            _run(call, x, 1)
        return
    _check(call, x, 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("out_dtype", ["int8", "int64", "uint32", "float32", "float64"])
def test_dtype_argument_casts_as_numpy(dtype, out_dtype):
    # Values every target dtype holds when the input is float (NumPy's out-of-range float to
    # integer casts are undefined); signed integers wrap into narrower and unsigned ones.
    values = np.arange(-6, 6) * 37 if np.dtype(dtype).kind == "i" else np.arange(12) * 9
    x = values.astype(dtype).reshape(3, 4)
    for call in ("np.cumsum", "np.cumprod", "add.accumulate"):
        _check(call, x, 1, np.dtype(out_dtype))


# -- differential, hypothesis-generated ----------------------------------------------------


def _values(draw, dtype, shape, kind):
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = (int(info.min), int(info.max)) if kind in ("sum", "max", "min") else (max(int(info.min), -3), 3)
        return np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype=dt).reshape(shape)
    if kind == "prod":
        el = st.floats(0.25, 4.0) | st.floats(-4.0, -0.25) | st.sampled_from([0.0, -0.0, np.inf, np.nan])
    else:
        el = st.floats(-1e3, 1e3, width=32) | st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan])
    return np.array(draw(st.lists(el, min_size=n, max_size=n)), dtype=dt).reshape(shape)


@st.composite
def scan_cases(draw):
    call = draw(st.sampled_from(CALLS))
    kind = KIND[call]
    dtypes = [d for d in DTYPES if kind != "lse" or d in ("int16", "int32", "uint16", "float32", "float64")]
    dtype = draw(st.sampled_from(dtypes))
    rank = draw(st.integers(0 if not call.endswith("accumulate") else 1, 3))
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 1, 2, 3, 5, 7, 17]), min_size=rank, max_size=rank)))
    layout = draw(st.sampled_from(["c", "transposed", "strided", "reversed", "broadcast"]))
    if layout == "broadcast" and rank:
        base = _values(draw, dtype, (1,) + shape[1:], kind)
        x = np.broadcast_to(base, shape)
    else:
        x = _values(draw, dtype, shape, kind)
        if layout == "transposed":
            x = x.T
        elif layout == "strided" and rank:
            x = np.repeat(x, 2, axis=-1)[..., ::2]
        elif layout == "reversed" and rank:
            x = x[::-1]
    axes = list(range(-x.ndim, x.ndim)) or [0]
    if not call.endswith("accumulate") or x.ndim == 1:
        axes.append(None)
    axis = draw(st.sampled_from(axes))
    return call, x, axis


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scan_cases())
def test_scans_match_numpy(case):
    call, x, axis = case
    _check(call, x, axis)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]),
       st.sampled_from(["float32", "float64", "int32", "uint8"]), st.booleans(), st.integers(0, 1))
def test_pyasc_functions_outside_and_inside_operators(name, dtype, reverse, axis):
    if name == "logcumsumexp" and dtype == "uint8":
        dtype = "float32"
    x = (np.random.default_rng(len(name)).random((4, 9)) * 3).astype(dtype)
    ref_fn = {"cumsum": np.cumsum, "cumprod": np.cumprod, "cummax": np.maximum.accumulate,
              "cummin": np.minimum.accumulate, "logcumsumexp": np.logaddexp.accumulate}[name]
    xr = np.flip(x, axis) if reverse else x
    want = ref_fn(xr, axis=axis)
    want = np.flip(want, axis) if reverse else want
    f = getattr(pyasc, name)
    eager = f(x, axis, reverse=reverse)
    traced = pyasc.operator(lambda a: f(a, axis, reverse=reverse))(x)
    for got in (eager, traced):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5 * x.shape[axis])


# -- long lines, threads, ISAs -------------------------------------------------------------


@pytest.mark.parametrize("layout", ["rows", "columns", "transposed"])
def test_long_lines_beyond_a_block(layout):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((3, 2 * BLOCK + 77)).astype(np.float32)
    x, axis = {"rows": (base, 1), "columns": (np.ascontiguousarray(base.T), 0), "transposed": (base.T, 0)}[layout]
    for call in ("np.cumsum", "maximum.accumulate", "logaddexp.accumulate"):
        _check(call, x, axis)
    xi = (base * 1e9).astype(np.int64)
    xi = xi if layout == "rows" else xi.T
    _check("np.cumsum", xi, axis)


def test_float32_cumsum_is_at_least_as_accurate_as_numpys():
    rng = np.random.default_rng(5)
    x = (rng.random((64, 20000)) + 0.1).astype(np.float32)
    ref = np.cumsum(x.astype(np.float64), axis=1)
    ours = np.abs(pyasc.operator(lambda a: np.cumsum(a, axis=1))(x) - ref)
    theirs = np.abs(np.cumsum(x, axis=1) - ref)
    assert ours.max() <= theirs.max()
    assert ours.mean() <= theirs.mean()
    # Each output is the float64 prefix rounded once (within one float32 ulp).
    assert (ours <= np.spacing(ref.astype(np.float32))).all()


_SCRIPT = """
import json, sys, hashlib, numpy as np, pyasc
rng = np.random.default_rng(9)
x = rng.standard_normal((5, 3 * 65536 + 11)).astype(np.float32)
y = rng.standard_normal((700, 300))
ops = {
    "rows32": lambda: pyasc.operator(lambda a: np.cumsum(a, axis=1))(x),
    "cols32": lambda: pyasc.operator(lambda a: np.cumsum(a, axis=0))(x[:, :4096]),
    "rows64": lambda: pyasc.operator(lambda a: np.cumsum(a, axis=-1))(y),
    "cols64": lambda: pyasc.operator(lambda a: np.cumsum(a, axis=0))(y),
    "lse": lambda: pyasc.operator(lambda a: np.logaddexp.accumulate(a, axis=1))(x[:2]),
}
out = {k: f() for k, f in ops.items()}
np.savez(sys.argv[1], **out)
print(json.dumps({"isa": pyasc.device_info("cpu")["isa"],
                  "digests": {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in out.items()}}))
"""


def _subprocess(tmp_path, tag, **env):
    path = tmp_path / f"{tag}.npz"
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), dict(np.load(path))


def test_results_do_not_depend_on_the_thread_count(tmp_path):
    runs = [_subprocess(tmp_path, f"t{n}", PYASC_NUM_THREADS=str(n))[0]["digests"] for n in (1, 2, 5)]
    assert runs[0] == runs[1] == runs[2]


def test_every_isa_path_is_accurate(tmp_path):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 3 * 65536 + 11)).astype(np.float32).astype(np.float64)
    y = rng.standard_normal((700, 300))
    refs = {"rows32": np.cumsum(x, 1), "cols32": np.cumsum(x[:, :4096], 0), "rows64": np.cumsum(y, -1),
            "cols64": np.cumsum(y, 0), "lse": np.logaddexp.accumulate(x[:2], 1)}
    for isa in supported_isas():
        info, vals = _subprocess(tmp_path, isa, PYASC_ISA=isa)
        assert info["isa"].split("+")[0] == isa, info
        for key, ref in refs.items():
            got = vals[key].astype(np.float64)
            if vals[key].dtype == np.float32:
                # The float64 prefix rounded once to float32.
                assert (np.abs(got - ref) <= np.spacing(np.abs(ref).astype(np.float32))).all(), (isa, key)
            else:
                k = np.arange(1, ref.shape[-1 if key != "cols64" else 0] + 1)
                k = k if key != "cols64" else k[:, None]
                mag = np.cumsum(np.abs(y), -1 if key != "cols64" else 0)
                assert (np.abs(got - ref) <= 4 * k * 2.3e-16 * mag).all(), (isa, key)


# -- fusion --------------------------------------------------------------------------------


def test_elementwise_producers_and_consumers_run_in_the_scan_kernel():
    x = np.random.default_rng(0).random((64, 1000)).astype(np.float32)
    n = 1000

    @pyasc.operator
    def f(x):
        return np.cumsum(x * 2 + 1, axis=-1) / n

    got = f(x)
    ref = np.cumsum(x.astype(np.float64) * 2 + 1, axis=-1) / n
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    kernels = f.get_compiled_op(x).kernels()
    # One row kernel: producer, scan along each row and consumer in one pass over memory.
    assert len(kernels) == 1, kernels
    program = f.get_compiled_op(x).tile_program(0)
    assert "scan_cumsum" in program and "div" in program and "calls" not in program, program


# -- special values and shapes -------------------------------------------------------------


def test_nan_and_infinities_follow_numpy():
    x = np.array([[1.0, np.nan, 3.0, -np.inf, 2.0], [np.inf, -np.inf, 1.0, 0.0, -0.0]], dtype=np.float32)
    for call in ("np.cumsum", "np.cumprod", "maximum.accumulate", "minimum.accumulate", "logaddexp.accumulate"):
        _check(call, x, 1)
        _check(call, x, 0)
    got = pyasc.operator(lambda a: np.maximum.accumulate(a, axis=1))(x)
    assert np.isnan(got[0, 1:]).all() and got[0, 0] == 1.0


def test_signed_zeros_and_integer_wrapping():
    z = np.array([-0.0, -0.0, 0.0], dtype=np.float32)
    got = pyasc.operator(lambda a: np.cumsum(a))(z)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.cumsum(z)))
    for dtype in ("int8", "uint8", "int64", "uint64"):
        info = np.iinfo(dtype)
        x = np.array([info.max, info.max, 3, info.min, 7], dtype=dtype)
        for call in ("add.accumulate", "multiply.accumulate", "np.cumsum", "np.cumprod"):
            _check(call, x, 0, np.dtype(dtype))
            _check(call, x, 0)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 4), (1,), (1, 1, 5), (4, 1), (2, 1, 3)])
def test_degenerate_shapes(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1
    for axis in [None] + list(range(-max(len(shape), 1), max(len(shape), 1))):
        _check("np.cumsum", x, axis)
        _check("np.cumprod", x, axis)
        if len(shape) >= 1 and axis is not None:
            _check("maximum.accumulate", x, axis)


def test_python_scalars_and_lists():
    assert pyasc.cumsum([1, 2, 3]).tolist() == [1, 3, 6]
    got = pyasc.operator(lambda a, s: np.cumsum(s) + a)(np.ones(1), 2.5)
    np.testing.assert_array_equal(got, np.cumsum(2.5) + np.ones(1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "bool"])
def test_nan_cumulative_functions(dtype):
    x = np.array([[1.5, np.nan, 2.0, -1.0], [np.nan, np.nan, 3.0, 0.5]])
    x = x.astype(dtype) if dtype.startswith("float") else np.nan_to_num(x, nan=4.0).astype(dtype)
    for axis in (None, 0, 1):
        for f in (np.nancumsum, np.nancumprod):
            want = f(x, axis=axis)
            got = pyasc.operator(lambda a, f=f, axis=axis: f(a, axis=axis))(x)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_jax_name_and_pyasc_functions_agree():
    x = np.random.default_rng(2).standard_normal((3, 50)).astype(np.float32)
    np.testing.assert_array_equal(pyasc.cumlogsumexp(x, 1), pyasc.logcumsumexp(x, 1))
    np.testing.assert_allclose(pyasc.cumlogsumexp(x, 1), np.logaddexp.accumulate(x.astype(np.float64), 1),
                               rtol=1e-6)


def test_complex_cumsum_and_typed_complex_errors():
    z = (np.arange(6) + 1j * np.arange(6)[::-1]).astype(np.complex64).reshape(2, 3)
    got = pyasc.operator(lambda a: np.cumsum(a, axis=1))(z)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, np.cumsum(z, axis=1), rtol=1e-6)
    got = pyasc.operator(lambda a: a.cumsum(0) * 2)(z.astype(np.complex128))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, z.astype(np.complex128).cumsum(0) * 2, rtol=1e-12)
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda a: np.cumprod(a, axis=1))(z)
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda a: a.cumprod(1))(z)
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda a: np.add.accumulate(a, axis=1))(z)


# -- errors --------------------------------------------------------------------------------


def test_bad_axes_are_shape_errors_at_the_users_line():
    def bad(x):
        return np.cumsum(x, axis=2)  # the bad axis

    with pytest.raises(pyasc.ShapeError, match="axis 2 is out of bounds") as e:
        pyasc.operator(bad)(np.ones((2, 3)))
    assert e.value.lineno == line_of(bad, "the bad axis")

    def bad_acc(x):
        return np.maximum.accumulate(x, axis=-3)  # accumulate axis

    with pytest.raises(pyasc.ShapeError) as e:
        pyasc.operator(bad_acc)(np.ones((2, 3)))
    assert e.value.lineno == line_of(bad_acc, "accumulate axis")

    with pytest.raises(pyasc.ShapeError, match="0-d"):
        pyasc.operator(lambda x: np.add.accumulate(x))(np.float64(1.0))
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda x: np.add.accumulate(x, axis=None))(np.ones((2, 3)))
    with pytest.raises(pyasc.ShapeError):
        pyasc.cumsum(np.ones(3), axis=1)
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.operator(lambda x: np.cumsum(x, axis=1.0))(np.ones((2, 3)))
    with pytest.raises(pyasc.ShapeError):
        pyasc.operator(lambda x: np.cumulative_sum(x))(np.ones((2, 3)))


def test_unsupported_forms_are_typed():
    with pytest.raises(pyasc.UnsupportedError, match="out="):
        pyasc.operator(lambda x: np.cumsum(x, out=x))(np.ones(3))
    with pytest.raises(pyasc.UnsupportedError, match="fmax.accumulate"):
        pyasc.operator(lambda x: np.fmax.accumulate(x))(np.ones(3))
    with pytest.raises(pyasc.DTypeError, match="float16"):
        pyasc.operator(lambda x: np.logaddexp.accumulate(x))(np.ones(3, np.int8))
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda x: np.cumulative_sum(x, include_initial=True))(np.ones(3))
