"""Row scans with their arithmetic fused in (``np.cumsum(x * 2 + 1, -1) / n`` as one pass).

The fused scan must give the bits of the same program run step by step: NumPy computes the
elementwise steps in the array's dtype (one rounding each), and pyasc's plain row scan of the
materialised input is the scan routine itself. A float64 NumPy cumsum checks the values too.
"""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from isa_support import run_under_isa


def _program(op, *args) -> str:
    return op.get_compiled_op(*args).tile_program(0)


def _plain(kind):
    return pyasc.operator(lambda v: kind(v, axis=-1))


FORMS = [
    # (fused function, steps before the scan, steps after it), written for a dtype `t`.
    (lambda t: (lambda v: np.cumsum(v * t(2) + t(1), axis=-1) / t(1000)),
     lambda t, v: v * t(2) + t(1), lambda t, s: s / t(1000)),
    (lambda t: (lambda v: t(3) - np.cumsum(v, axis=-1)), lambda t, v: v, lambda t, s: t(3) - s),
    (lambda t: (lambda v: t(0.5) / np.cumsum(v - t(0.25), axis=-1)), lambda t, v: v - t(0.25), lambda t, s: t(0.5) / s),
    (lambda t: (lambda v: np.cumsum(t(1.5) / v, axis=-1) * t(4)), lambda t, v: t(1.5) / v, lambda t, s: s * t(4)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [1, 7, 16, 17, 100, 1000, 1024, 1500, 4097])
def test_fused_row_scans_match_the_unfused_steps_bit_for_bit(dtype, cols):
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((37, cols)) * 3).astype(dtype)
    saved = x.copy()
    for fused, pre, post in FORMS:
        op = pyasc.operator(fused(dtype))
        got = op(x)
        if cols > 1:  # a one-element row is its own sum: no scan to fuse into
            assert "scan_cumsum(" in _program(op, x), _program(op, x)
        want = post(dtype, _plain(np.cumsum)(pre(dtype, x)))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
        # The values: the running sums of the rounded inputs in float64, then the last step.
        ref = post(np.float64, np.cumsum(pre(dtype, x).astype(np.float64), axis=-1))
        np.testing.assert_allclose(got, ref, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-6)
    np.testing.assert_array_equal(x, saved)


def test_the_benchmark_form_is_one_instruction():
    x = np.random.default_rng(1).standard_normal((64, 1024)).astype(np.float32)
    op = pyasc.operator(lambda v: np.cumsum(v * 2 + 1, axis=-1) / 1024)
    lines = [ln.strip() for ln in _program(op, x).splitlines() if " = " in ln and ":" not in ln]
    assert len(lines) == 1 and lines[0].endswith("div(scan_cumsum(add(mul(r0, r1), r3)), r5)"), lines


def test_tile_operands_other_kinds_and_specials():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 333)).astype(np.float32)
    y = rng.standard_normal((50, 333)).astype(np.float32)
    x[3, 10] = np.nan
    x[4, 0] = np.inf
    x[5, 7] = -0.0
    # An element operand (not a scalar): the steps run chunk by chunk around the scan.
    op = pyasc.operator(lambda v, w: np.cumsum(v * w, axis=-1) - w)
    assert "scan_cumsum(mul(" in _program(op, x, y)
    np.testing.assert_array_equal(op(x, y), _plain(np.cumsum)(x * y) - y)
    # Running products and maxima take steps the same way.
    xs = (x * np.float32(0.01) + 1).astype(np.float32)
    for kind, name in [(np.cumprod, "cumprod"), (np.maximum.accumulate, "cummax")]:
        op = pyasc.operator(lambda v, kind=kind: kind(v * np.float32(3), axis=-1) + np.float32(1))
        assert f"scan_{name}(" in _program(op, xs), _program(op, xs)
        np.testing.assert_array_equal(op(xs), _plain(kind)(xs * np.float32(3)) + np.float32(1))


@pytest.mark.parametrize("shape", [(300, 1024), (64, 100), (5, 3000)])
def test_broadcast_operands_along_rows_and_columns(shape):
    # A weight per column and a value per row as step operands (each read at its own lanes).
    rng = np.random.default_rng(shape[1])
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[1]).astype(np.float32)
    c = rng.standard_normal((shape[0], 1)).astype(np.float32)
    plain = _plain(np.cumsum)
    cases = [
        (lambda v, w, c: np.cumsum(v * w, axis=-1) + w, plain(x * w) + w, "add(r1, scan_cumsum(mul(r0, r1)))"),
        (lambda v, w, c: np.cumsum(v - c, axis=-1) * c, plain(x - c) * c, "scan_cumsum(sub("),
        (lambda v, w, c: w / np.cumsum(v, axis=-1), w / plain(x), "div(r2, scan_cumsum(r0))"),
    ]
    for fn, want, form in cases:
        op = pyasc.operator(fn)
        np.testing.assert_array_equal(op(x, w, c), want)
        assert form in _program(op, x, w, c), _program(op, x, w, c)


def test_tiny_quotients_divide_exactly():
    # Quotients in the subnormal range are where a multiply by the reciprocal could round
    # differently; the fused division must still equal NumPy's.
    x = (np.arange(1, 2049, dtype=np.float32).reshape(2, 1024) * np.float32(1e-39)).astype(np.float32)
    op = pyasc.operator(lambda v: np.cumsum(v / np.float32(3), axis=-1) / np.float32(7))
    np.testing.assert_array_equal(op(x), _plain(np.cumsum)(x / np.float32(3)) / np.float32(7))


@pytest.mark.parametrize("isa", ["avx2", "sse2", "scalar"])
def test_fused_scans_on_lower_isas(isa):
    script = (
        "import sys, numpy as np, pyasc\n"
        "x = np.random.default_rng(5).standard_normal((300, 1500)).astype(np.float32)\n"
        "op = pyasc.operator(lambda v: np.cumsum(v * 2 + 1, axis=-1) / 1500)\n"
        "plain = pyasc.operator(lambda v: np.cumsum(v, axis=-1))\n"
        "ok = np.array_equal(op(x), plain(x * np.float32(2) + np.float32(1)) / np.float32(1500))\n"
        "sys.stdout.write(str(ok))\n"
    )
    assert run_under_isa(script, isa) == "True"
