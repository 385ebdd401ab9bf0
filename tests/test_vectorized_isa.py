"""@pyasc.vectorized_operator under every SIMD level this CPU runs (``PYASC_ISA``).

On AVX-512 the mask loops are assembled to machine code; below it they run as strip loops. Each
level runs in a fresh interpreter; every level must agree with calling the same Python function
per element, and all levels must give the same bits.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
from conftest import supported_isas
from isa_support import run_under_isa

FUNCS = textwrap.dedent(
    """
    import math

    def escape(cr, ci, maxiter):
        zr = 0.0
        zi = 0.0
        n = 0
        while zr * zr + zi * zi <= 4.0 and n < maxiter:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            n += 1
        return n

    def piecewise(x):
        if x < -1.0:
            return -x * 0.5
        elif x < 2.0:
            return x * x
        else:
            return math.sqrt(x) + 3.0

    def clip_relu(v, hi):
        if v < 0.0:
            return 0.0
        return v if v < hi else hi
    """
)

INPUTS = textwrap.dedent(
    """
    import numpy as np

    def inputs():
        rng = np.random.default_rng(3)
        cr, ci = np.meshgrid(np.linspace(-2.0, 0.6, 61), np.linspace(-1.2, 1.2, 47))
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 2.0, 1e30, -1e-30], np.float32)
        x = np.concatenate([special, rng.uniform(-4, 9, 3000).astype(np.float32)])
        v = rng.standard_normal((37, 53))
        hi = np.abs(rng.standard_normal(53)) + 0.1
        return cr, ci, x, v, hi
    """
)

RUN = textwrap.dedent(
    """
    import pyasc

    cr, ci, x, v, hi = inputs()
    out = {
        "isa": np.array(pyasc.device_info("cpu")["isa"]),
        "escape": pyasc.vectorized_operator(escape)(cr, ci, 60),
        "piecewise": pyasc.vectorized_operator(piecewise)(x),
        "clip_relu": pyasc.vectorized_operator(clip_relu)(v, hi),
    }
    np.savez(PATH, **out)
    """
)

# The same functions and inputs here, for the per-element reference.
namespace: dict = {}
exec(FUNCS + INPUTS, namespace)


def _per_element(fn, *args):
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    flat = [np.broadcast_to(a, shape).ravel() if np.ndim(a) else [a] * int(np.prod(shape)) for a in args]
    with np.errstate(all="ignore"):
        return np.array([fn(*vals) for vals in zip(*flat)], dtype=object).reshape(shape)


def test_every_simd_level_agrees_with_the_python_function_and_each_other(tmp_path):
    cr, ci, x, v, hi = namespace["inputs"]()
    want_escape = _per_element(namespace["escape"], cr, ci, 60).astype(np.int64)
    want_piece = _per_element(namespace["piecewise"], x)
    want_clip = _per_element(namespace["clip_relu"], v, hi).astype(np.float64)
    assert want_escape.max() == 60 and len(np.unique(want_escape)) > 20  # loops of many lengths
    seen = {}
    for isa in supported_isas():
        path = tmp_path / f"{isa}.npz"
        # A file, not `python -c`: the operators compile from the functions' source.
        script = tmp_path / f"run_{isa}.py"
        script.write_text(FUNCS + INPUTS + RUN.replace("PATH", repr(str(path))))
        run_under_isa(f"import runpy; runpy.run_path({str(script)!r})", isa)
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
    assert math.isnan(float(want_piece[0]))
