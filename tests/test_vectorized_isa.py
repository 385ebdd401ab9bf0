"""@pyasc.vectorized_operator under every SIMD level this CPU runs (``PYASC_ISA``).

On AVX-512 the mask loops are assembled to machine code; below it they run as strip loops. Each
level runs in a fresh interpreter; every level must agree with calling the same Python function
per element, and all levels must give the same bits. The functions are the bench's escape-time
and three-branch functions and the two-argument ``clip_relu`` of ``test_vectorized``.
"""

from __future__ import annotations

import math
import os
import textwrap

import numpy as np
from conftest import supported_isas
from isa_support import run_under_isa
from pyasc.bench.vectorized import mandelbrot, piecewise
from test_vectorized import clip_relu, per_element

TESTS = os.path.dirname(os.path.abspath(__file__))

SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, TESTS)
    import numpy as np
    import pyasc
    from pyasc.bench.vectorized import mandelbrot, piecewise
    from test_vectorized import clip_relu
    from test_vectorized_isa import inputs

    cr, ci, x, v, hi = inputs()
    np.savez(
        PATH,
        isa=np.array(pyasc.device_info("cpu")["isa"]),
        escape=pyasc.vectorized_operator(mandelbrot)(cr, ci, 60),
        piecewise=pyasc.vectorized_operator(piecewise)(x),
        clip_relu=pyasc.vectorized_operator(clip_relu)(v, hi),
    )
    """
)


def inputs():
    """The arguments every level gets: a complex-plane grid, float32 specials, a broadcast pair."""
    rng = np.random.default_rng(3)
    cr, ci = np.meshgrid(np.linspace(-2.0, 0.6, 61), np.linspace(-1.2, 1.2, 47))
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1.0, 1e30, -1e-30], np.float32)
    x = np.concatenate([special, rng.uniform(-4, 9, 3000).astype(np.float32)])
    v = rng.standard_normal((37, 53))
    hi = np.abs(rng.standard_normal(53)) + 0.1
    return cr, ci, x, v, hi


def test_every_simd_level_agrees_with_the_python_function_and_each_other(tmp_path):
    cr, ci, x, v, hi = inputs()
    want_escape = per_element(mandelbrot, cr, ci, 60).astype(np.int64)
    want_piece = per_element(piecewise, x)
    want_clip = per_element(clip_relu, v, hi).astype(np.float64)
    assert want_escape.max() == 60 and len(np.unique(want_escape)) > 20  # loops of many lengths
    assert math.isnan(float(want_piece[0]))
    seen = {}
    for isa in supported_isas():
        path = tmp_path / f"{isa}.npz"
        run_under_isa(SCRIPT.replace("TESTS", repr(TESTS)).replace("PATH", repr(str(path))), isa)
        got = np.load(path)
        assert str(got["isa"]).split("+")[0] == isa, (isa, str(got["isa"]))
        np.testing.assert_array_equal(got["escape"], want_escape, err_msg=isa)
        piece = got["piecewise"]
        assert piece.dtype == np.float32, isa
        with np.errstate(all="ignore"):
            ref = want_piece.astype(np.float32)
        np.testing.assert_allclose(piece, ref, rtol=1e-6, atol=0, equal_nan=True, err_msg=isa)
        np.testing.assert_array_equal(got["clip_relu"], want_clip, err_msg=isa)
        for key in ("escape", "piecewise", "clip_relu"):
            if key in seen:
                assert got[key].tobytes() == seen[key].tobytes(), (isa, key)
            else:
                seen[key] = got[key]
