"""float32 <-> float16 and float32 <-> bfloat16 conversions in kernels, exhaustively, per ISA.

Every one of the 65,536 16-bit patterns is widened, and a float32 set holding every rounding
edge (each pattern widened, the ties between neighbours and one float32 ulp either side,
subnormals, overflow to infinity, NaNs with payloads) is rounded, under each ISA path the
kernels dispatch on (``PYASC_ISA`` in a fresh process). References: NumPy's float16 and
ml_dtypes' bfloat16 conversions, bit for bit; a NaN must stay a NaN of the same sign with
the quiet bit set and the payload's upper bits kept (what the F16C instructions do).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pyasc
import pytest

ISAS = ["avx512", "avx2", "sse2", "scalar"]

PROBE = textwrap.dedent(
    """
    import sys
    import numpy as np, ml_dtypes, pyasc
    kind, src, dst, src_dtype = sys.argv[1:5]
    types = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}
    x = np.load(src).view(types[src_dtype])
    to = types[kind]
    op = pyasc.operator(lambda v: v.astype(to))
    np.save(dst, op(x).view(np.uint16 if kind != "f32" else np.uint32))
    """
)


def patterns():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def float32_edges():
    """Every rounding edge of float32 -> float16 and float32 -> bfloat16."""
    hi = patterns().astype(np.uint32) << 16
    bf = (hi[:, None] | np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32)).ravel()
    h = patterns().view(np.float16).astype(np.float32).view(np.uint32)
    f16 = (h[:, None] + np.array([0, 0x0FFF, 0x1000, 0x1001], np.uint32)).ravel()
    extra = np.array([0x7F7FFFFF, 0xFF7FFFFF, 0x477FF000, 0x477FEFFF, 0x33000000, 0x33000001,
                      0x7F800001, 0xFFC12345, 0x7FA00000], np.uint32)
    return np.concatenate([bf, f16, extra]).view(np.float32)


def run(kind, x, isa, tmp_path):
    """``x.astype(kind)`` in an operator under ``PYASC_ISA=isa``, as raw bits."""
    src, dst = tmp_path / f"in-{kind}.npy", tmp_path / f"out-{kind}-{isa}.npy"
    names = {np.dtype(np.float16): "f16", np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.float32): "f32"}
    src_dtype = names[x.dtype]
    np.save(src, x.view(np.uint16 if x.itemsize == 2 else np.uint32))
    env = {**os.environ, "PYASC_ISA": isa}
    r = subprocess.run([sys.executable, "-c", PROBE, kind, str(src), str(dst), src_dtype], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return np.load(dst)


@pytest.mark.parametrize("isa", ISAS)
def test_16_bit_patterns_widen_exactly(isa, tmp_path):
    p = patterns()
    for name, dt in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        got = run("f32", p.view(dt), isa, tmp_path).astype(np.uint32)
        with np.errstate(invalid="ignore"):
            want = p.view(dt).astype(np.float32).view(np.uint32)
        nan = np.isnan(want.view(np.float32))
        np.testing.assert_array_equal(got[~nan], want[~nan], err_msg=f"{name} under {isa}")
        # A NaN keeps its sign and payload and is quieted.
        quiet = want[nan] | np.uint32(0x00400000)
        np.testing.assert_array_equal(got[nan], quiet, err_msg=f"{name} NaNs under {isa}")
        assert nan.sum() == (2046 if name == "f16" else 254)


@pytest.mark.parametrize("isa", ISAS)
def test_float32_rounds_to_nearest_even(isa, tmp_path):
    x = float32_edges()
    nan = np.isnan(x)
    for name, dt, mant_shift in (("f16", np.float16, 13), ("bf16", ml_dtypes.bfloat16, 16)):
        got = run(name, x, isa, tmp_path)
        with np.errstate(over="ignore", invalid="ignore"):
            want = x.astype(dt).view(np.uint16)
        np.testing.assert_array_equal(got[~nan], want[~nan], err_msg=f"{name} under {isa}")
        g = got[nan].astype(np.uint32)
        xb = x[nan].view(np.uint32)
        exp_mask, quiet = (0x7C00, 0x0200) if name == "f16" else (0x7F80, 0x0040)
        assert np.all(g & exp_mask == exp_mask) and np.all(g & quiet), f"{name} NaNs stay quiet NaNs"
        np.testing.assert_array_equal(g >> 15, xb >> 31)  # the sign
        payload_bits = 9 if name == "f16" else 6
        keep = (1 << payload_bits) - 1
        np.testing.assert_array_equal(g & keep, (xb >> mant_shift) & keep)


def test_the_edge_set_covers_the_cases():
    x = float32_edges()
    with np.errstate(over="ignore", invalid="ignore"):
        h = x.astype(np.float16)
        assert np.isinf(h[np.isfinite(x)]).any(), "overflow to infinity"
        sub = np.abs(h.astype(np.float32)) < np.float32(6.1035156e-05)
        assert (sub & (h != 0)).sum() > 2000, "float16 subnormals"
    assert np.isnan(x).sum() > 1000


def test_in_process_conversions_match_too():
    x = float32_edges()
    op = pyasc.operator(lambda v: v.astype(np.float16))
    nan = np.isnan(x)
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(op(x)[~nan].view(np.uint16), x[~nan].astype(np.float16).view(np.uint16))
