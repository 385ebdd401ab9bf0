"""Stencil operators under every SIMD level this CPU runs (``PYASC_ISA``), against NumPy slicing.

The stencil kernels pick their loops at run time (an AVX-512 sum loop, AVX2 and portable
interpreters), so each level runs in a fresh interpreter. The references are NumPy slicing in the
grid's own dtype with the body's operations in the body's order, so every level must match them
bit for bit: single steps, time stepping through the wavefront (rows of 700 cells) and through
overlapped tiles (rows of 40 cells), a body that is not a plain sum, and a 3-D step.
"""

from __future__ import annotations

import textwrap

import numpy as np
from conftest import supported_isas
from isa_support import run_under_isa

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pyasc

    def jacobi(u, p):
        return (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) * p

    def mixed(u):
        return abs(u[-1, 0] - u[1, 0]) * (u[0, -1] + u[0, 1]) / 3.0 - u[0, 0]

    def heat(u):
        return u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] - 6.0 * u[0, 0, 0]

    rng = np.random.default_rng(7)
    out = {"isa": np.array(pyasc.device_info("cpu")["isa"])}
    for dt in ("float32", "float64"):
        wide = rng.standard_normal((300, 700)).astype(dt)
        narrow = rng.standard_normal((500, 40)).astype(dt)
        c = np.dtype(dt).type(0.25)
        op = pyasc.stencil_operator(jacobi, boundary="skip")
        out[f"step_{dt}"] = op(wide, c)
        out[f"wave_{dt}"] = op(wide, c, iterations=37)
        out[f"tiles_{dt}"] = op(narrow, c, iterations=37)
        out[f"mixed_{dt}"] = pyasc.stencil_operator(mixed, boundary="skip")(wide, iterations=5)
        out[f"heat_{dt}"] = pyasc.stencil_operator(heat, boundary="skip")(rng.standard_normal((20, 30, 40)).astype(dt))
    np.savez(sys.argv[1] if len(sys.argv) > 1 else "out.npz", **out)
    """
)


def _step(u, body):
    """One application with ``boundary="skip"``: the body on the interior, the border kept."""
    v = u.copy()
    v[(slice(1, -1),) * u.ndim] = body(u)
    return v


def _jacobi(u, c):
    return (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) * c


def _mixed(u):
    return np.abs(u[:-2, 1:-1] - u[2:, 1:-1]) * (u[1:-1, :-2] + u[1:-1, 2:]) / u.dtype.type(3.0) - u[1:-1, 1:-1]


def _heat(u):
    i = slice(1, -1)
    s = (u[:-2, i, i] + u[2:, i, i] + u[i, :-2, i] + u[i, 2:, i] + u[i, i, :-2] + u[i, i, 2:])
    return s - u.dtype.type(6.0) * u[i, i, i]


def _references():
    rng = np.random.default_rng(7)
    refs = {}
    for dt in ("float32", "float64"):
        wide = rng.standard_normal((300, 700)).astype(dt)
        narrow = rng.standard_normal((500, 40)).astype(dt)
        c = np.dtype(dt).type(0.25)
        refs[f"step_{dt}"] = _step(wide, lambda u, c=c: _jacobi(u, c))
        for key, grid in (("wave", wide), ("tiles", narrow)):
            u = grid
            for _ in range(37):
                u = _step(u, lambda v, c=c: _jacobi(v, c))
            refs[f"{key}_{dt}"] = u
        u = wide
        for _ in range(5):
            u = _step(u, _mixed)
        refs[f"mixed_{dt}"] = u
        refs[f"heat_{dt}"] = _step(rng.standard_normal((20, 30, 40)).astype(dt), _heat)
    return refs


def test_every_simd_level_matches_numpy_slicing_bit_for_bit(tmp_path):
    refs = _references()
    for isa in supported_isas():
        path = tmp_path / f"{isa}.npz"
        run_under_isa(SCRIPT.replace('sys.argv[1] if len(sys.argv) > 1 else "out.npz"', repr(str(path))), isa)
        got = np.load(path)
        assert str(got["isa"]).split("+")[0] == isa, (isa, str(got["isa"]))
        for key, want in refs.items():
            assert got[key].dtype == want.dtype, (isa, key)
            np.testing.assert_array_equal(got[key], want, err_msg=f"{isa} {key}")
