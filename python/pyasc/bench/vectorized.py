"""``pyasc bench`` entries for vectorized operators (scalar functions with control flow).

``mandelbrot``: the escape-time function (a ``while`` loop on the values) over a float64
grid over [-2, 1] x [-1.5, 1.5], compiled by pyasc and by ``numba.vectorize(target="parallel")``
from the same source. ``piecewise``: a three-branch function on float32, against a memcpy of
the same bytes (``np.copyto``), Numba's parallel vectorize and NumPy's ``np.select``.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_time

Row = Tuple[str, str, float]


def mandelbrot(cx, cy, maxiter):
    """Count the escape iterations of ``z -> z * z + c`` from 0, at most ``maxiter``."""
    x = 0.0
    y = 0.0
    n = 0
    while x * x + y * y <= 4.0 and n < maxiter:
        x, y = x * x - y * y + cx, 2.0 * x * y + cy
        n += 1
    return n


def piecewise(v):
    """Compute a three-branch function: linear tail, cubic middle, square-root head."""
    if v < -1.0:
        return -1.0 - 0.5 * (v + 1.0)
    elif v < 1.0:
        return v * v * v
    else:
        return math.sqrt(v)


def _numba(fn: Any, sig: str) -> Any:
    try:
        import numba
    except ImportError:
        return None
    return numba.vectorize([sig], target="parallel")(fn)


def bench_mandelbrot(n: int, maxiter: int, repeat: int) -> Tuple[List[Row], Dict[str, Any]]:
    """Time the escape-time function on an ``n`` x ``n`` grid; checks pyasc against Numba."""
    cx, cy = np.meshgrid(np.linspace(-2.0, 1.0, n), np.linspace(-1.5, 1.5, n))
    op = pyasc.vectorized_operator(mandelbrot)
    got = op(cx, cy, maxiter)
    rows = [("pyasc", "vectorized_operator", best_time(lambda: op(cx, cy, maxiter), repeat))]
    info: Dict[str, Any] = {"mean_iterations": float(got.mean())}
    nb = _numba(mandelbrot, "int64(float64, float64, int64)")
    if nb is not None:
        info["same"] = bool(np.array_equal(got, nb(cx, cy, maxiter)))
        rows.append(("numba", "vectorize(target='parallel')", best_time(lambda: nb(cx, cy, maxiter), repeat)))
    return rows, info


def bench_piecewise(n: int, repeat: int) -> Tuple[List[Row], Dict[str, Any]]:
    """Time the three-branch function on ``n`` float32 against memcpy, Numba and NumPy."""
    x = np.random.default_rng(31).uniform(-4.0, 4.0, n).astype(np.float32)
    out = np.empty_like(x)
    op = pyasc.vectorized_operator(piecewise)
    got = op(x)
    with np.errstate(invalid="ignore"):
        ref = np.select([x < -1, x < 1], [-1 - 0.5 * (x + 1), x * x * x], np.sqrt(x)).astype(np.float32)
    info: Dict[str, Any] = {"max_rel_err": float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)))}
    rows = [("pyasc", "vectorized_operator", best_time(lambda: op(x), repeat)),
            ("memcpy", "np.copyto(out, x)", best_time(lambda: np.copyto(out, x), repeat))]
    nb = _numba(piecewise, "float32(float32)")
    if nb is not None:
        rows.append(("numba", "vectorize(target='parallel')", best_time(lambda: nb(x), repeat)))

    def numpy() -> Any:
        with np.errstate(invalid="ignore"):
            return np.select([x < -1, x < 1], [-1 - 0.5 * (x + 1), x * x * x], np.sqrt(x))

    rows.append(("numpy", "np.select", best_time(numpy, repeat)))
    return rows, info


def run_entries(want: set, quick: bool, repeat: int, summary: List[str]) -> None:
    """Run the vectorized-operator entries named in ``want``, adding summary lines."""
    from . import _report

    if "mandelbrot" in want:
        n, maxiter = (512, 100) if quick else (2048, 100)
        rows, info = bench_mandelbrot(n, maxiter, 3 if quick else 5)
        t = _report(f"mandelbrot: escape time on a {n}x{n} float64 grid, maxiter {maxiter}", rows)
        line = f"mandelbrot: mean {info['mean_iterations']:.1f} iterations a point"
        if "numba" in t:
            line += (f"; {t['numba'] / t['pyasc']:.2f}x Numba's parallel vectorize speed (target >= 2x); "
                     f"same counts: {info['same']}")
        summary.append(line)
    if "piecewise" in want:
        n = 1 << 20 if quick else 1 << 24
        rows, info = bench_piecewise(n, repeat)
        t = _report(f"piecewise: three branches on {n:,} float32", rows)
        # The target holds for arrays that stream from memory; the quick run's 4 MB stay in
        # cache, where memcpy runs at cache speed and the three branches are the cost.
        goal = "(the target of <= 1.5x is for 16M values)" if quick else "(target <= 1.5x)"
        line = f"piecewise: {t['pyasc'] / t['memcpy']:.2f}x the time of memcpy {goal}"
        if "numba" in t:
            line += f", {t['numba'] / t['pyasc']:.2f}x Numba's speed"
        summary.append(line + f"; max relative error {info['max_rel_err']:.1e}")
