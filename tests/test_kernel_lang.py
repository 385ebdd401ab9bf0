"""The kernel language (``@pyasc.kernel`` with ``pyasc.lang``) against NumPy references.

Examples from ``examples/kernels`` over random sizes with tails, single- and double-buffered
variants, several block counts, 1 and 2 worker threads, and the ``@pyasc.operator`` versions
of the same functions.
"""

from __future__ import annotations

import importlib.util
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyasc import lang as asc

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "examples" / "kernels"


def load(name):
    spec = importlib.util.spec_from_file_location(f"kernel_example_{name}", KERNELS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ADD, GELU, SOFTMAX, NORMALIZE = load("add"), load("gelu"), load("softmax"), load("normalize")
ADD_SINGLE = ADD.make_add(buffer_num=1, tile=256)
ADD_DOUBLE = ADD.make_add(buffer_num=2, tile=256)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 5000), blocks=st.integers(1, 9), seed=st.integers(0, 2**31))
def test_add_matches_numpy_bit_for_bit_with_tails(n, blocks, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    z = np.full(n, np.nan, dtype=np.float32)
    ADD_DOUBLE[blocks](x, y, z, n)
    # One float32 addition per element: exactly NumPy's.
    np.testing.assert_array_equal(z, x + y)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 3000), blocks=st.integers(1, 6), seed=st.integers(0, 2**31))
def test_single_and_double_buffered_add_agree_exactly(n, blocks, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    z1, z2 = np.empty_like(x), np.empty_like(x)
    ADD_SINGLE[blocks](x, y, z1, n)
    ADD_DOUBLE[blocks](x, y, z2, n)
    np.testing.assert_array_equal(z1, z2)
    np.testing.assert_array_equal(z1, x + y)


def test_integer_arguments_are_symbolic_one_trace_serves_every_value():
    k = ADD.make_add(tile=128)
    x = np.arange(1000, dtype=np.float32)
    for n in (0, 1, 999, 1000):
        z = np.zeros_like(x)
        k[3](x, x, z, n)
        np.testing.assert_array_equal(z[:n], 2 * x[:n])
        assert not z[n:].any(), "elements past n stay untouched"
    assert k.traces == 1


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 9000), blocks=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_gelu_matches_float64_reference(n, blocks, seed):
    x = np.random.default_rng(seed).standard_normal(n, dtype=np.float32) * 4
    y = np.empty_like(x)
    GELU.gelu[blocks](x, y, n)
    ref = x.astype(np.float64) * 0.5 * (1 + np.vectorize(math.erf)(x.astype(np.float64) / 1.41421))
    # float32 ops (scale, erf, add, scale, multiply): a few ulps of values below 16.
    np.testing.assert_allclose(y, ref, rtol=2e-6, atol=2e-7)


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 70), cols=st.sampled_from([1, 7, 64, 100, 513]), blocks=st.integers(1, 5),
       seed=st.integers(0, 2**31))
def test_row_softmax_and_normalize_match_float64_with_row_tails(rows, cols, blocks, seed):
    x = np.random.default_rng(seed).standard_normal((rows, cols), dtype=np.float32) * 3
    x64 = x.astype(np.float64)
    y = np.empty_like(x)
    SOFTMAX.make_softmax(cols)[blocks](x, y, rows)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    # exp and division in float32, sums of at most 513 float32 terms: relative error ~1e-6.
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-8)
    NORMALIZE.make_normalize(cols)[blocks](x, y, rows)
    d = x64 - x64.mean(-1, keepdims=True)
    ref = d / np.sqrt((d * d).mean(-1, keepdims=True) + NORMALIZE.EPS)
    # float32 mean and variance of <= 513 values, rsqrt: absolute error ~1e-5 on values ~1.
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=5e-5)


def test_examples_equal_their_operator_versions():
    rng = np.random.default_rng(5)
    n = 50_001
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    z = np.empty_like(x)
    ADD.add_custom[4](x, y, z, n)
    np.testing.assert_array_equal(z, pyasc.operator(lambda a, b: a + b)(x, y))
    GELU.gelu[4](x, z, n)
    op = pyasc.operator(lambda v: v * 0.5 * (1.0 + pyasc.erf(v / 1.41421)))
    # The kernel multiplies by 1/1.41421 where the operator divides: one rounding apart.
    np.testing.assert_allclose(z, op(x), rtol=1e-6, atol=1e-7)
    m = rng.standard_normal((333, 256), dtype=np.float32)
    out = np.empty_like(m)
    SOFTMAX.make_softmax(256)[4](m, out, 333)
    np.testing.assert_allclose(out, pyasc.operator(lambda v: pyasc.softmax(v, -1))(m), rtol=2e-6, atol=1e-9)
    NORMALIZE.make_normalize(256)[4](m, out, 333)
    # Both are float32 mean/variance/rsqrt; summation orders differ by a few ulps of the sums.
    np.testing.assert_allclose(out, pyasc.operator(lambda v: pyasc.layer_norm(v))(m), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_multi_block_kernels_on_one_and_two_worker_threads(threads):
    code = (
        f"import sys, numpy as np; sys.path.insert(0, {str(KERNELS)!r})\n"
        "import add, softmax\n"
        "x = np.arange(10007, dtype=np.float32); z = np.empty_like(x)\n"
        "add.make_add(tile=512)[13](x, x, z, x.size)\n"
        "assert np.array_equal(z, 2 * x), 'add'\n"
        "m = np.random.default_rng(0).standard_normal((97, 33)).astype(np.float32); o = np.empty_like(m)\n"
        "softmax.make_softmax(33)[7](m, o, 97)\n"
        "assert np.allclose(o.sum(-1), 1, atol=1e-5), 'softmax'\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYASC_NUM_THREADS=threads)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_vector_instructions_against_numpy():
    ops2 = [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide),
            ("max", np.maximum), ("min", np.minimum)]
    ops1 = [("exp", np.exp), ("ln", np.log), ("sqrt", np.sqrt), ("rsqrt", lambda v: 1 / np.sqrt(v)),
            ("reciprocal", lambda v: 1 / v), ("relu", lambda v: np.maximum(v, 0)), ("abs", np.abs)]
    n = 200

    @pyasc.kernel
    def k(a, b, out, cmp_out, sel_out, red, dup, ints):
        pipe = asc.TPipe()
        buf = asc.TBuf()
        pipe.init_buffer(buf, 8 * 256 * 4 + 256)
        t = buf.get(np.float32)
        x, y, r = t[:256], t[256:512], t[512:768]
        asc.data_copy_pad(x, a, n)
        asc.data_copy_pad(y, b, n)
        for i, (name, _) in enumerate(ops2):
            getattr(asc, name)(r, x, y, n)
            asc.data_copy_pad(out[i * n:], r, n)
        for i, (name, _) in enumerate(ops1):
            getattr(asc, name)(r, y, n)
            asc.data_copy_pad(out[(len(ops2) + i) * n:], r, n)
        asc.adds(r, x, 2.5, n)
        asc.data_copy_pad(out[13 * n:], r, n)
        asc.muls(r, x, -3.0, n)
        asc.data_copy_pad(out[14 * n:], r, n)
        mask = buf.get(np.bool_)[7 * 1024:7 * 1024 + 256]
        asc.compare(mask, x, y, asc.CMPMODE.LT, n)
        asc.data_copy_pad(cmp_out, mask, n)
        asc.select(r, mask, x, y, n)
        asc.data_copy_pad(sel_out, r, n)
        s = t[768:788]
        asc.reduce_sum(s, x, 20, 10)
        asc.data_copy_pad(red, s, 20)
        asc.reduce_max(s, x, 20, 10)
        asc.data_copy_pad(red[20:], s, 20)
        asc.reduce_min(s, x, 10, 20)
        asc.data_copy_pad(red[40:], s, 10)
        asc.duplicate(r, 7.0, n)
        asc.data_copy_pad(dup, r, n)
        iv = t[1024:1280].reinterpret_cast(np.int32)
        asc.cast(iv, x, n)
        asc.data_copy_pad(ints, iv, n)

    rng = np.random.default_rng(1)
    a = rng.standard_normal(n).astype(np.float32) * 3
    b = rng.uniform(0.5, 4, n).astype(np.float32)
    out = np.zeros(15 * n, np.float32)
    cmp_out, sel_out = np.zeros(n, np.bool_), np.zeros(n, np.float32)
    red, dup, ints = np.zeros(50, np.float32), np.zeros(n, np.float32), np.zeros(n, np.int32)
    k[1](a, b, out, cmp_out, sel_out, red, dup, ints)
    for i, (_, f) in enumerate(ops2):
        np.testing.assert_allclose(out[i * n:(i + 1) * n], f(a, b), rtol=1e-6)
    for i, (_, f) in enumerate(ops1):
        j = len(ops2) + i
        np.testing.assert_allclose(out[j * n:(j + 1) * n], f(b.astype(np.float64)), rtol=2e-6)
    np.testing.assert_array_equal(out[13 * n:14 * n], a + np.float32(2.5))
    np.testing.assert_array_equal(out[14 * n:15 * n], a * np.float32(-3.0))
    np.testing.assert_array_equal(cmp_out, a < b)
    np.testing.assert_array_equal(sel_out, np.where(a < b, a, b))
    np.testing.assert_allclose(red[:20], a.reshape(20, 10).astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(red[20:40], a.reshape(20, 10).max(1))
    np.testing.assert_array_equal(red[40:], a.reshape(10, 20).min(1))
    np.testing.assert_array_equal(dup, np.full(n, 7.0, np.float32))
    np.testing.assert_array_equal(ints, a.astype(np.int32))


def test_per_row_arithmetic_and_broadcast_against_numpy():
    rows, cols = 12, 37

    @pyasc.kernel
    def k(x, v, out):
        pipe = asc.TPipe()
        buf = asc.TBuf()
        pipe.init_buffer(buf, 3 * 512 * 4)
        t = buf.get(np.float32)
        a, b, r = t[:512], t[512:1024], t[1024:1536]
        asc.data_copy_pad(a, x, rows * cols)
        asc.data_copy_pad(b, v, rows)
        for i, f in enumerate([asc.add_rows, asc.sub_rows, asc.mul_rows, asc.div_rows]):
            f(r, a, b, rows, cols)
            asc.data_copy_pad(out[i * rows * cols:], r, rows * cols)
        asc.mul_rows(a, a, b, rows, cols)  # in place
        asc.data_copy_pad(out[4 * rows * cols:], a, rows * cols)
        asc.broadcast(r, b, rows, cols)
        asc.data_copy_pad(out[5 * rows * cols:], r, rows * cols)

    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    v = rng.uniform(0.5, 2, rows).astype(np.float32)
    out = np.zeros((6, rows, cols), np.float32)
    k[1](x, v, out)
    col = v[:, None]
    for i, want in enumerate([x + col, x - col, x * col, x / col, x * col, np.broadcast_to(col, x.shape)]):
        np.testing.assert_array_equal(out[i], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_arithmetic_in_place_and_overlapping(dtype):
    # 40 rows of 300: an in-place row op runs through scratch a few rows at a time; per-row
    # values and a source shifted by one row overlap the destination and are read as before.
    rows, cols = 40, 300
    n = rows * cols

    @pyasc.kernel
    def k(x, v, out):
        pipe = asc.TPipe()
        buf = asc.TBuf()
        pipe.init_buffer(buf, (n + cols) * np.dtype(dtype).itemsize)
        t = buf.get(dtype)
        asc.data_copy_pad(t, x, n)
        asc.data_copy_pad(t[n:], v, rows)
        asc.div_rows(t, t, t[n:], rows, cols)  # in place
        asc.data_copy_pad(out, t, n)
        asc.data_copy_pad(t, x, n)
        asc.sub_rows(t, t, t[n - rows:], rows, cols)  # per-row values inside the destination
        asc.data_copy_pad(out[n:], t, n)
        asc.data_copy_pad(t, x, n)
        asc.data_copy_pad(t[n:], x, cols)
        asc.mul_rows(t, t[cols:], t[n - rows:], rows, cols)  # a source shifted by one row
        asc.data_copy_pad(out[2 * n:], t, n)

    rng = np.random.default_rng(5)
    x = rng.standard_normal((rows, cols)).astype(dtype)
    v = rng.uniform(0.5, 2, rows).astype(dtype)
    out = np.zeros(3 * n, dtype)
    k[1](x, v, out)
    flat = x.reshape(-1)
    np.testing.assert_array_equal(out[:n].reshape(rows, cols), x / v[:, None])
    np.testing.assert_array_equal(out[n:2 * n].reshape(rows, cols), x - flat[n - rows:][:, None])
    shifted = np.concatenate([flat[cols:], flat[:cols]]).reshape(rows, cols)
    np.testing.assert_array_equal(out[2 * n:].reshape(rows, cols), shifted * flat[n - rows:][:, None])


def test_set_global_buffer_and_stream_launch():
    @pyasc.kernel
    def scale(x, y, n):
        per = n // asc.block_num()
        x_gm, y_gm = asc.GlobalTensor(), asc.GlobalTensor()
        x_gm.set_global_buffer(x, asc.block_idx() * per, per)
        y_gm.set_global_buffer(y, asc.block_idx() * per, per)
        pipe = asc.TPipe()
        q = asc.TQue(asc.QuePosition.VECIN, 1)
        pipe.init_buffer(q, 1, 64 * 4)
        for i in range(per // 64):
            t = q.alloc_tensor(np.float32)
            asc.data_copy(t, x_gm[i * 64:(i + 1) * 64], 64)
            asc.muls(t, t, 3.0, 64)
            asc.data_copy(y_gm[i * 64:], t, 64)
            q.free_tensor(t)

    x = np.arange(4 * 256, dtype=np.float32)
    y = np.zeros_like(x)
    s = pyasc.Stream()
    scale[4, s](x, y, x.size)
    s.synchronize()
    np.testing.assert_array_equal(y, 3 * x)


@pytest.mark.parametrize("mod", [ADD, GELU, SOFTMAX, NORMALIZE], ids=lambda m: m.__name__)
def test_example_scripts_report_agreement_with_numpy(mod, capsys):
    mod.main()
    out = capsys.readouterr().out
    assert ("(ok)" in out or "matches NumPy" in out) and "FAIL" not in out and "DIFFERS" not in out, out


@pytest.mark.parametrize("off,tile", [(0, 1000), (3, 1000), (5, 777)])
def test_copies_into_a_large_output_at_offsets_with_tails(off, tile):
    # Outputs of 32 MiB or more are written past the caches: every element must land exactly,
    # at offsets that leave the destination unaligned, with a tail in each block.
    @pyasc.kernel
    def shifted_copy(x, y, n, off):
        per = (n + asc.block_num() - 1) // asc.block_num()
        s = asc.min(asc.block_idx() * per, n)
        length = asc.min(per, n - s)
        pipe = asc.TPipe()
        q = asc.TQue(asc.QuePosition.VECIN, 2)
        pipe.init_buffer(q, 2, tile * 4)
        for i in range((length + tile - 1) // tile):
            c = asc.min(tile, length - i * tile)
            t = q.alloc_tensor(np.float32)
            asc.data_copy_pad(t, x[s + i * tile:], c)
            asc.adds(t, t, 1.0, c)
            asc.data_copy_pad(y[off + s + i * tile:], t, c)
            q.free_tensor(t)

    n = (32 << 20) // 4 + 1001
    x = np.arange(n, dtype=np.float32) % 65536
    y = np.full(n + off + 7, -1.0, dtype=np.float32)
    shifted_copy[7](x, y, n, off)
    np.testing.assert_array_equal(y[off:off + n], x + 1)
    np.testing.assert_array_equal(y[:off], -1.0)
    np.testing.assert_array_equal(y[off + n:], -1.0)


@pyasc.kernel
def _shift_then_square(x, y, n):
    """t[1:] = t[:n] + 1 in place (a shifted overlap), then y = t * t over the same n."""
    pipe = asc.TPipe()
    buf = asc.TBuf()
    out = asc.TBuf()
    pipe.init_buffer(buf, 1024 * 4)
    pipe.init_buffer(out, 1024 * 4)
    t = buf.get(np.float32)
    u = out.get(np.float32)
    asc.data_copy_pad(t, x[0:], n)
    asc.adds(t[1:], t, 1.0, n)
    asc.mul(u, t, t, n)
    asc.data_copy_pad(y[0:], u, n)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 1023), seed=st.integers(0, 2**31))
def test_shifted_overlap_in_place_matches_numpy(n, seed):
    x = np.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    y = np.full(n, np.nan, dtype=np.float32)
    _shift_then_square[1](x, y, n)
    t = x.copy()
    t[1:] = x[:-1] + np.float32(1)
    np.testing.assert_array_equal(y, t * t)


def test_kernels_in_place_on_one_array_match_separate_outputs():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(20011, dtype=np.float32) * 3
    y = np.empty_like(x)
    GELU.gelu[5](x, y, x.size)
    v = x.copy()
    GELU.gelu[5](v, v, v.size)
    np.testing.assert_array_equal(v, y)
    m = rng.standard_normal((301, 96), dtype=np.float32)
    o = np.empty_like(m)
    sm = SOFTMAX.make_softmax(96)
    sm[3](m, o, 301)
    sm[3](m, m, 301)
    np.testing.assert_array_equal(m, o)


@pytest.mark.parametrize("isa", ["avx2", "sse2", "scalar"])
def test_kernels_under_lower_isas_match_references(isa):
    code = (
        f"import sys, numpy as np; sys.path.insert(0, {str(KERNELS)!r})\n"
        "import gelu, normalize\n"
        "rng = np.random.default_rng(1)\n"
        "x = rng.standard_normal(30011, dtype=np.float32) * 3; y = np.empty_like(x)\n"
        "gelu.make_gelu(tile=1000)[6](x, y, x.size)\n"
        "assert np.max(np.abs(y - gelu.reference(x))) < 1e-5, 'gelu'\n"
        "m = rng.standard_normal((203, 160), dtype=np.float32); o = np.empty_like(m)\n"
        "normalize.make_normalize(160)[5](m, o, 203)\n"
        "assert np.max(np.abs(o - normalize.reference(m))) < 1e-4, 'normalize'\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYASC_ISA=isa, PYASC_NUM_THREADS="2")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
