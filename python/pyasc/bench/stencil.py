"""``pyasc bench`` entries for stencil operators, against Numba, JAX and NumPy in the same run.

``stencil``: one 5-point Jacobi step on a 2-D float32 grid, and the first call of a fresh
operator (trace, compile and run). ``stencil_steps``: 100 steps in one call (temporal blocking).
``stencil_3d``: one 7-point heat step on a 3-D float32 grid. Every peer computes the same cells;
results are checked against pyasc's before timing.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_time, fmt_time
from ..tools._timing import peer as _peer

Row = Tuple[str, str, float]
C = np.float32(0.25)


def _jacobi_body(u: Any, p: Any) -> Any:
    return (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) * p


def _numpy_step(u: np.ndarray) -> np.ndarray:
    """Run the article's NumPy solve_pde step: border cells keep their values."""
    v = u.copy()
    v[1:-1, 1:-1] = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) * C
    return v


def _numba_stencil(numba: Any) -> Callable[[np.ndarray], np.ndarray]:
    """Make a fresh ``numba.stencil`` inside ``njit(parallel=True)`` (compiled at its first call)."""
    @numba.stencil
    def kernel(a, c):
        return (a[-1, 0] + a[1, 0] + a[0, -1] + a[0, 1]) * c

    @numba.njit(parallel=True)
    def step(a, c):
        return kernel(a, c)

    return lambda u: step(u, C)


def bench_stencil(n: int, repeat: int) -> Tuple[List[Row], Dict[str, float]]:
    """One Jacobi step on ``n x n`` float32 (border outputs 0) and the first-call costs."""
    u = np.random.default_rng(30).random((n, n)).astype(np.float32)
    op = pyasc.stencil_operator(_jacobi_body)
    want = op(u, C)
    rows: List[Row] = [("pyasc", "stencil_operator", best_time(lambda: op(u, C), repeat))]
    first: Dict[str, float] = {}
    t0 = time.perf_counter()
    fresh = pyasc.stencil_operator(lambda u, p: (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) * p)
    fresh(u, C)
    first["pyasc"] = time.perf_counter() - t0
    dst = np.empty_like(u)
    rows.append(("limit", "np.copyto same bytes", best_time(lambda: np.copyto(dst, u), repeat)))
    numba = _peer("numba")
    if numba is not None:
        step = _numba_stencil(numba)
        t0 = time.perf_counter()
        got = step(u)
        first["numba"] = time.perf_counter() - t0
        np.testing.assert_allclose(got, want, rtol=1e-6)
        rows.append(("numba", "stencil in njit(parallel=True)", best_time(lambda: step(u), repeat)))
    rows.append(("numpy", "slicing (solve_pde)", best_time(lambda: _numpy_step(u), repeat)))
    return rows, first


def bench_stencil_steps(n: int, steps: int, repeat: int) -> List[Row]:
    """Time ``steps`` Jacobi steps on ``n x n`` float32, border cells kept (the article's solve_pde)."""
    u = np.random.default_rng(31).random((n, n)).astype(np.float32)
    op = pyasc.stencil_operator(_jacobi_body, boundary="skip")
    want = op(u, C, iterations=steps)
    rows: List[Row] = [("pyasc", f"iterations={steps}", best_time(lambda: op(u, C, iterations=steps), repeat))]
    numba = _peer("numba")
    if numba is not None:
        @numba.njit(parallel=True)
        def loops(u, c, steps):
            a = u.copy()
            b = u.copy()
            for _ in range(steps):
                for i in numba.prange(1, a.shape[0] - 1):
                    for j in range(1, a.shape[1] - 1):
                        b[i, j] = (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) * c
                a, b = b, a
            return a

        np.testing.assert_allclose(loops(u, C, steps), want, rtol=1e-5, atol=1e-6)
        rows.append(("numba", "njit(parallel=True) prange loops", best_time(lambda: loops(u, C, steps), repeat)))
    jax = _peer("jax")
    if jax is not None:
        def jstep(_: Any, a: Any) -> Any:
            return a.at[1:-1, 1:-1].set((a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]) * C)

        f = jax.jit(lambda a: jax.lax.fori_loop(0, steps, jstep, a))
        uj = jax.numpy.asarray(u)
        np.testing.assert_allclose(np.asarray(f(uj)), want, rtol=1e-5, atol=1e-6)
        rows.append(("jax", "jax.jit + lax.fori_loop", best_time(lambda: f(uj).block_until_ready(), repeat)))

    def numpy_loop() -> np.ndarray:
        a = u
        for _ in range(steps):
            a = _numpy_step(a)
        return a

    rows.append(("numpy", f"{steps} slicing steps", best_time(numpy_loop, max(1, repeat // 3))))
    return rows


def bench_stencil_3d(n: int, repeat: int) -> List[Row]:
    """One 7-point heat step ``u + k * (sum of 6 neighbours - 6 u)`` on ``n``³ float32."""
    u = np.random.default_rng(32).random((n, n, n)).astype(np.float32)
    k = np.float32(0.1)

    @pyasc.stencil_operator
    def heat(u, k):
        return u[0, 0, 0] + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]
                                 - 6.0 * u[0, 0, 0])

    want = heat(u, k)
    rows: List[Row] = [("pyasc", "stencil_operator", best_time(lambda: heat(u, k), repeat))]
    numba = _peer("numba")
    if numba is not None:
        @numba.stencil
        def kernel(a, k):
            return a[0, 0, 0] + k * (a[-1, 0, 0] + a[1, 0, 0] + a[0, -1, 0] + a[0, 1, 0] + a[0, 0, -1] + a[0, 0, 1]
                                     - np.float32(6.0) * a[0, 0, 0])

        @numba.njit(parallel=True)
        def step(a, k):
            return kernel(a, k)

        np.testing.assert_allclose(step(u, k), want, rtol=1e-5, atol=1e-6)
        rows.append(("numba", "stencil in njit(parallel=True)", best_time(lambda: step(u, k), repeat)))
    return rows


def run_entries(want: set, quick: bool, repeat: int, summary: List[str]) -> None:
    """Run the stencil entries named in ``want``, adding summary lines."""
    from . import _report

    if "stencil" in want:
        n = 512 if quick else 2048
        rows, first = bench_stencil(n, repeat)
        t = _report(f"stencil: one 5-point Jacobi step on {n}x{n} float32", rows)
        line = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numba", "numpy") if p in t)
        firsts = ", ".join(f"{p} {fmt_time(v)}" for p, v in first.items())
        if quick:
            goals = (" (targets for 2048x2048: <= 2.5 ms)", " (<= 2 ms)")
        else:
            goals = (" (target <= 2.5 ms)", " (target <= 2 ms)")
        summary.append(f"stencil: {fmt_time(t['pyasc'])} a step{goals[0]}, {line}; first call {firsts}{goals[1]}")
    if "stencil_steps" in want:
        n, steps = (512, 20) if quick else (2048, 100)
        t = _report(f"stencil_steps: {steps} Jacobi steps on {n}x{n} float32 in one call",
                    bench_stencil_steps(n, steps, max(2, repeat // 2)))
        line = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numba", "jax", "numpy") if p in t)
        goal = " (the target of <= 30 ms is for 100 steps on 2048x2048)" if quick else " (target <= 30 ms)"
        summary.append(f"stencil_steps: {fmt_time(t['pyasc'])} for {steps} steps{goal}, {line}")
    if "stencil_3d" in want:
        n = 64 if quick else 256
        t = _report(f"stencil_3d: one 7-point heat step on {n}^3 float32", bench_stencil_3d(n, repeat))
        line = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numba",) if p in t)
        summary.append(f"stencil_3d: {fmt_time(t['pyasc'])} a step, {line}")
