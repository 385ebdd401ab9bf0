"""Contractions against NumPy: ``einsum dot vdot inner outer tensordot kron``.

``einsum`` over random subscripts (1-3 operands, implicit and explicit outputs, ``...``,
repeated subscripts, extent-1 broadcasting, empty extents), integer and bool operands exact,
floats against NumPy in float64 within ``(k + 2)`` ulp of ``einsum(|a|, |b|, ...)`` where
``k`` counts the summed terms. GEMM-shaped contractions must be one matmul node.
"""

from __future__ import annotations

import math

import numpy as np
import pyasc
import pytest
from conftest import assert_matches, line_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = __file__
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LETTERS = "abcdE"


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("int8", "int32", "int64"):
        return rng.integers(-60 if dtype == "int8" else -5, 60 if dtype == "int8" else 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _run(fn, *ops):
    """Trace ``fn`` over ``ops`` as an operator of as many arguments."""
    if len(ops) == 1:
        return pyasc.operator(lambda a: fn(a))(*ops)
    if len(ops) == 2:
        return pyasc.operator(lambda a, b: fn(a, b))(*ops)
    return pyasc.operator(lambda a, b, c: fn(a, b, c))(*ops)


def _check(got, fn, ops, terms):
    """``got`` equals ``fn(*ops)`` in dtype and shape; exactly for integers, else within ulps."""
    want = np.asarray(fn(*ops))
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    ref = np.asarray(fn(*[o.astype(np.float64) for o in ops]))
    scale = np.asarray(fn(*[np.abs(o.astype(np.float64)) for o in ops]))
    eps = np.finfo(want.dtype).eps
    np.testing.assert_array_less(np.abs(got - ref), (terms + 2) * eps * scale + np.finfo(want.dtype).tiny)


@st.composite
def einsum_cases(draw):
    sizes = {c: draw(st.sampled_from([0, 1, 2, 3, 4, 5]) if draw(st.integers(0, 9)) == 0 else st.integers(1, 5))
             for c in LETTERS}
    n_ops = draw(st.integers(1, 3))
    ell = tuple(draw(st.lists(st.integers(1, 3), max_size=2))) if draw(st.booleans()) else None
    dtype = draw(st.sampled_from(["float32", "float64", "int32", "int8", "bool"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    terms, ops = [], []
    for _ in range(n_ops):
        labels = draw(st.lists(st.sampled_from(LETTERS), max_size=3))
        shape = [sizes[c] for c in labels]
        for i, c in enumerate(labels):
            if labels.count(c) == 1 and draw(st.integers(0, 5)) == 0:
                shape[i] = 1  # broadcast against the label's extent elsewhere
        term = "".join(labels)
        if ell is not None:
            k = draw(st.integers(0, len(ell)))
            eshape = [1 if draw(st.integers(0, 3)) == 0 else s for s in ell[len(ell) - k:]]
            pos = draw(st.integers(0, len(labels)))
            term = term[:pos] + "..." + term[pos:]
            shape = shape[:pos] + eshape + shape[pos:]
        terms.append(term)
        ops.append(_values(rng, tuple(shape), dtype))
    subs = ",".join(terms)
    used = sorted({c for t in terms for c in t if c != "."})
    if draw(st.booleans()):
        out = draw(st.permutations(used))[: draw(st.integers(0, len(used)))]
        out = "".join(out)
        if ell is not None:
            p = draw(st.integers(0, len(out)))
            out = out[:p] + "..." + out[p:]
        subs += "->" + out
        kept = set(out)
    else:
        kept = {c for c in used if sum(t.count(c) for t in terms) == 1}
    summed = math.prod(sizes[c] for c in used if c not in kept)
    return subs, ops, summed


@SETTINGS
@given(einsum_cases(), st.sampled_from(["np", "pyasc"]))
def test_einsum_matches_numpy(case, form):
    subs, ops, summed = case
    fn = np.einsum if form == "np" else pyasc.einsum
    got = _run(lambda *v: fn(subs, *v), *ops)
    _check(got, lambda *v: np.einsum(subs, *v), ops, summed)


@pytest.mark.parametrize("subs,shapes", [
    ("ij,jk->ik", [(5, 7), (7, 3)]),
    ("ij,jk", [(5, 7), (7, 3)]),
    ("bij,bjk->bik", [(4, 5, 7), (4, 7, 3)]),
    ("bij,bkj->bik", [(4, 5, 7), (4, 3, 7)]),
    ("ij,jk->ki", [(5, 7), (7, 3)]),
    ("ijk,jkl->il", [(2, 3, 4), (3, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("i,i", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    (",ij->ij", [(), (2, 3)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("ab,cd,bc->ad", [(3, 4), (5, 2), (4, 5)]),
    ("ij,ij->i", [(3, 1), (1, 4)]),
    ("ij,jk->ik", [(0, 3), (3, 2)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_einsum_cases(subs, shapes, dtype):
    rng = np.random.default_rng(len(subs))
    ops = [_values(rng, s, dtype) for s in shapes]
    got = _run(lambda *v: np.einsum(subs, *v), *ops)
    summed = 64
    _check(got, lambda *v: np.einsum(subs, *v), ops, summed)
    # The eager function on arrays gives the same.
    _check(pyasc.einsum(subs, *ops), lambda *v: np.einsum(subs, *v), ops, summed)


def test_einsum_sublists_dtype_and_views():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    b = rng.standard_normal((4, 6)).astype(np.float32)
    got = pyasc.operator(lambda x, y: np.einsum(x, [0, 1], y, [2, 0], [1, 2]))(a, b)
    _check(got, lambda x, y: np.einsum(x, [0, 1], y, [2, 0], [1, 2]), [a, b], 6)
    got = pyasc.operator(lambda x, y: np.einsum("ij,ki->jk", x, y, dtype=np.float64))(a, b)
    _check(got, lambda x, y: np.einsum("ij,ki->jk", x, y, dtype=np.float64), [a, b], 6)
    for x in (a.T, a[::-2], np.broadcast_to(a[0], (3, 5))):
        got = pyasc.operator(lambda v, w: np.einsum("ij,kj->ik", v, w))(x, x)
        _check(got, lambda v, w: np.einsum("ij,kj->ik", v, w), [x, x], x.shape[1])


@pytest.mark.parametrize("subs,shapes", [("bij,bjk->bik", [(4, 32, 16), (4, 16, 8)]),
                                         ("ij,jk->ik", [(32, 16), (16, 8)]),
                                         ("ij,jk->ki", [(32, 16), (16, 8)]),
                                         ("bij,bkj->bik", [(4, 32, 16), (4, 8, 16)])])
def test_gemm_shaped_einsum_is_one_matmul(subs, shapes):
    rng = np.random.default_rng(0)
    ops = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    op = pyasc.operator(lambda a, b: np.einsum(subs, a, b))
    compiled = op.get_compiled_op(*ops)
    ir = compiled.graph_ir()
    assert ir.count("matmul(") == 1, ir
    assert len(compiled.kernels()) == 1


@SETTINGS
@given(st.integers(0, 3), st.integers(0, 3), st.sampled_from(["float32", "float64", "int32", "bool"]),
       st.integers(0, 2**32 - 1))
def test_dot_inner_outer_vdot_kron(nda, ndb, dtype, seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 5))
    sa = tuple(int(s) for s in rng.integers(1, 4, nda))
    sb = tuple(int(s) for s in rng.integers(1, 4, ndb))
    if nda:
        sa = sa[:-1] + (k,)
    if ndb:
        sb = sb[:-2] + (k,) + sb[-1:] if ndb >= 2 else (k,)
    a, b = _values(rng, sa, dtype), _values(rng, sb, dtype)
    _check(_run(np.dot, a, b), np.dot, [a, b], k)
    if nda and ndb:
        _check(pyasc.operator(lambda x, y: x.dot(y))(a, b), np.dot, [a, b], k)
    bi = _values(rng, sb[:-1] + (k,) if ndb else (), dtype)
    _check(_run(np.inner, a, bi), np.inner, [a, bi], k)
    _check(_run(np.outer, a, b), np.outer, [a, b], 1)
    _check(_run(np.kron, a, b), np.kron, [a, b], 1)
    c = _values(rng, a.shape, dtype)
    if dtype != "bool":
        _check(_run(np.vdot, a, c), np.vdot, [a, c], a.size)
    _check(pyasc.dot(a, b), np.dot, [a, b], k)


@pytest.mark.parametrize("axes,b_shape", [(0, (2, 3)), (1, (5, 2)), (2, (4, 5, 2)), (([1], [0]), (4, 2)),
                                           (([0, 2], [2, 1]), (2, 5, 3)), (((2, 0), (1, 2)), (2, 5, 3)),
                                           (([-1], [-3]), (5, 2, 6)), (3, (3, 4, 5))])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_tensordot(axes, b_shape, dtype):
    rng = np.random.default_rng(1)
    a = _values(rng, (3, 4, 5), dtype)
    b = _values(rng, b_shape, dtype)
    _check(_run(lambda x, y: np.tensordot(x, y, axes), a, b), lambda x, y: np.tensordot(x, y, axes), [a, b], 60)
    _check(pyasc.tensordot(a, b, axes), lambda x, y: np.tensordot(x, y, axes), [a, b], 60)


def test_bad_contractions_raise_typed_errors_at_the_user_line():
    a = np.ones((3, 4), np.float32)
    b = np.ones((5, 2), np.float32)

    def bad_char(x, y):
        return np.einsum("i1,jk", x, y)  # invalid subscript

    def bad_count(x, y):
        return np.einsum("ij", x, y)  # one term for two operands

    def bad_out(x, y):
        return np.einsum("ij,kl->iz", x, y)  # output label not in inputs

    def bad_rank(x, y):
        return np.einsum("ijk,kl", x, y)  # three subscripts for two dims

    def bad_shape(x, y):
        return np.einsum("ij,jk", x, y)  # 4 != 5

    def bad_dot(x, y):
        return np.dot(x, y)  # not aligned

    def bad_axes(x, y):
        return np.tensordot(x, y, axes=([0], [3]))  # axis 3 of a 2-d operand

    def bad_ell(x, y):
        return np.einsum("...j,kl->j", x, y)  # '...' dims with no '...' in the output

    def bad_repeat(x, y):
        return np.einsum("ii,kl", x, y)  # diagonal of a 3x4 operand

    for fn, cls, text in [(bad_char, pyasc.InvalidArgumentError, "invalid subscript"),
                          (bad_count, pyasc.InvalidArgumentError, "one term"),
                          (bad_out, pyasc.InvalidArgumentError, "output label"),
                          (bad_rank, pyasc.ShapeError, "three subscripts"),
                          (bad_shape, pyasc.ShapeError, "4 != 5"),
                          (bad_dot, pyasc.ShapeError, "not aligned"),
                          (bad_axes, pyasc.ShapeError, "axis 3"),
                          (bad_ell, pyasc.ShapeError, "no '...'"),
                          (bad_repeat, pyasc.ShapeError, "diagonal of a 3x4")]:
        with pytest.raises(cls) as e:
            pyasc.operator(fn)(a, b)
        assert e.value.lineno == line_of(fn, text), fn.__name__
        assert e.value.filename == HERE
    with pytest.raises(pyasc.ShapeError):
        pyasc.einsum("ij,jk", a, b)


def test_complex_and_out_are_refused():
    a = np.ones((2, 2), np.complex64)
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda x: np.einsum("ij->i", x))(a)
    with pytest.raises(pyasc.UnsupportedError):
        pyasc.operator(lambda x: np.einsum("ij->i", x, out=x))(np.ones((2, 2)))
    assert_matches(pyasc.operator(lambda x: np.einsum("ij->ji", x))(np.eye(2)), np.eye(2))


def test_captured_operands_are_read_live():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 4))
    w = rng.standard_normal((4, 3))
    weights = np.arange(1.0, 5.0)
    op = pyasc.operator(lambda v: np.einsum("ij,jk->ik", v, w))
    avg = pyasc.operator(lambda v: np.average(v, axis=1, weights=weights))
    _check(op(x), lambda v, ww: v @ ww, [x, w.copy()], 4)
    _check(avg(x), lambda v: np.average(v, axis=1, weights=weights), [x], 4)
    w[:] = rng.standard_normal((4, 3))
    weights[:] = [4.0, 1.0, 0.5, 2.0]
    _check(op(x), lambda v, ww: v @ ww, [x, w.copy()], 4)
    _check(avg(x), lambda v: np.average(v, axis=1, weights=weights), [x], 4)
    assert "matmul(%0, %1)" in op.get_compiled_op(x).graph_ir()


def test_greedy_order_contracts_the_small_pair_first():
    rng = np.random.default_rng(3)
    a, b, c = rng.standard_normal((40, 3)), rng.standard_normal((40,)), rng.standard_normal((3, 40))
    op = pyasc.operator(lambda x, y, z: np.einsum("ij,k,jk->i", x, y, z))
    _check(op(a, b, c), lambda x, y, z: np.einsum("ij,k,jk->i", x, y, z), [a, b, c], 120)
    ir = op.get_compiled_op(a, b, c).graph_ir()
    # y and z meet first (a 3-vector), never the 40x3x40 outer product of x and y.
    assert "(40, 3, 40)" not in ir and "(40, 40)" not in ir, ir
