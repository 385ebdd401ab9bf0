"""``pyasc bench --dask``: pyasc operators per chunk on a two-worker Dask LocalCluster.

``dask_gelu``: exact GELU over a float32 array (4 GiB, 64 MiB chunks) generated on the
workers; pyasc per chunk against NumPy + ``scipy.special.erf`` per chunk on the same cluster.
``dask_jacobi``: 100 Jacobi steps on a 16384 x 16384 float32 grid in 4096 x 4096 blocks;
a pyasc stencil running many steps per halo exchange against ``map_overlap`` of NumPy slicing
with the same halo depth. ``dask_var``: ``np.var(x, axis=0, ddof=1)`` of the GELU entry's bytes
as a 256-column float32 array in 64 MiB row chunks; pyasc's per-chunk moments merged in the
tree against ``dask.array``'s own ``var`` (NumPy per chunk) on the same cluster. ``dask_nanvar``:
``np.nanvar(x, axis=0, ddof=1)`` of the same kind of array (at most 1 GiB) with a tenth of the
values NaN; per-chunk counts and moments of the values that are not NaN merged in the tree
against ``dask.array``'s ``nanvar``. Each entry
also times the same pyasc operator on one in-memory array in this process and prints the
fraction of that speed the cluster reaches.

Sizes: ``PYASC_BENCH_DASK_GIB`` (GELU and variance arrays, default 4) and ``PYASC_BENCH_DASK_GRID`` (grid
side, default 16384); ``--quick`` uses 0.25 GiB and 2048.
"""

from __future__ import annotations

import gc
import os
import time
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

import pyasc

_SQRT1_2 = np.float32(0.7071067811865476)
_C = np.float32(0.25)


@pyasc.operator
def gelu_erf(x: Any) -> Any:
    """Exact GELU, ``0.5 x (1 + erf(x / sqrt(2)))``."""
    return 0.5 * x * (1 + pyasc.erf(x * _SQRT1_2))


def gelu_scipy(x: np.ndarray) -> np.ndarray:
    """Compute the same GELU with NumPy and ``scipy.special.erf`` (the peer, one chunk)."""
    from scipy.special import erf

    return np.float32(0.5) * x * (np.float32(1) + erf(x * _SQRT1_2))


@pyasc.stencil_operator(boundary="skip")
def jacobi(u: Any) -> Any:
    """One 5-point Jacobi step; border cells keep their values."""
    return (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) * _C


def numpy_steps(u: np.ndarray, steps: int) -> np.ndarray:
    """Run ``steps`` Jacobi steps with NumPy slicing (border cells keep their values)."""
    u = u.copy()
    v = u.copy()
    for _ in range(steps):
        v[1:-1, 1:-1] = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) * _C
        u, v = v, u
    return u


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _holds(keys: Any, dask_scheduler: Any = None) -> bool:
    return any(k in dask_scheduler.tasks for k in keys)


def _run_on_cluster(client: Any, make: Callable[[], Any], runs: int = 2, warm: bool = True) -> float:
    """Best seconds of ``runs`` computations of ``make()`` into worker memory, after a warm-up run if ``warm``.

    The warm-up compiles the kernels on each worker; after each run the results are released
    and the scheduler has forgotten them before the next run starts, so no run reuses blocks.
    """
    from dask.core import flatten
    from distributed import wait

    times = []
    for _ in range(runs + warm):
        y = make()
        keys = list(flatten(y.__dask_keys__()))
        t0 = time.perf_counter()
        y = client.persist(y)
        wait(y)
        times.append(time.perf_counter() - t0)
        del y
        deadline = time.perf_counter() + 10
        while client.run_on_scheduler(_holds, keys) and time.perf_counter() < deadline:
            time.sleep(0.01)
    return min(times[int(warm):])


def _line(who: str, how: str, seconds: float, nbytes: int, base: float) -> str:
    ratio = "" if who == "pyasc" else f"{seconds / base:7.2f}x"
    return f"  {who:<8} {how:<44} {seconds:8.2f} s {nbytes / seconds / 1e9:7.2f} GB/s {ratio}"


def bench_gelu(client: Any, gib: float) -> Tuple[List[str], float, float]:
    """GELU over ``gib`` GiB of float32 in 64 MiB chunks: pyasc vs NumPy+SciPy per chunk, and one machine."""
    import dask.array as da
    from distributed import wait

    n = int(gib * (1 << 30)) // 4
    chunk = min(n, (64 << 20) // 4)
    x = client.persist(da.random.default_rng(5).standard_normal(n, dtype=np.float32, chunks=chunk))
    wait(x)
    sample = x[:chunk].compute()
    np.testing.assert_allclose(gelu_erf(sample), gelu_scipy(sample), rtol=2e-6, atol=2e-6)
    t_pyasc = _run_on_cluster(client, lambda: gelu_erf(x))
    t_scipy = _run_on_cluster(client, lambda: x.map_blocks(gelu_scipy, dtype=np.float32), warm=False)
    x = None  # releases the input on the workers
    big = np.random.default_rng(5).standard_normal(n, dtype=np.float32)
    gelu_erf(big[:chunk])
    t_local = min(_timed(lambda: gelu_erf(big)) for _ in range(3))
    big = None
    gc.collect()
    nbytes = n * 4 * 2  # read and written
    lines = [_line("pyasc", "gelu_erf per chunk (Dask)", t_pyasc, nbytes, t_pyasc),
             _line("scipy", "NumPy + scipy.special.erf per chunk (Dask)", t_scipy, nbytes, t_pyasc),
             _line("local", "gelu_erf on one in-memory array", t_local, nbytes, t_pyasc)]
    return lines, t_scipy / t_pyasc, t_local / t_pyasc


@pyasc.operator
def col_var(x: Any) -> Any:
    """Sample variance of each column."""
    return np.var(x, axis=0, ddof=1)


@pyasc.operator
def col_nanvar(x: Any) -> Any:
    """Sample variance of each column, NaN skipped."""
    return np.nanvar(x, axis=0, ddof=1)


def _column_moment(client: Any, make_x: Callable[[], Any], chunk: int, op: Any, reference: Callable[..., Any],
                   peer: Callable[[Any], Any], make_local: Optional[Callable[[], np.ndarray]],
                   labels: Tuple[str, str]) -> Tuple[List[str], float, float]:
    """Time a column reduction on the cluster against a Dask peer, and on one in-memory array.

    ``make_x()`` persists the float32 input (row chunks of ``chunk``); this function holds the
    only reference, so releasing it frees the workers' copy. ``op`` (whose graph must combine
    in the reduction tree, no rechunk, and which must match ``reference`` in float64 on a
    rechunked sample) is timed against ``peer(x)``, then on ``make_local()`` (built after the
    input is released) or on the input itself fetched when that is None. ``labels`` name
    pyasc's and the peer's lines.
    """
    from distributed import wait

    x = make_x()
    wait(x)
    assert not any("rechunk" in name for name in op(x).dask.layers)
    sample = x[: 4 * chunk].rechunk((chunk // 3, x.shape[1]))
    want = reference(sample.compute().astype(np.float64), axis=0, ddof=1)
    np.testing.assert_allclose(op(sample).compute(), want, rtol=1e-5)
    sample = None
    t_pyasc = _run_on_cluster(client, lambda: op(x))
    t_dask = _run_on_cluster(client, lambda: peer(x), warm=False)
    nbytes = int(np.prod(x.shape)) * 4  # float32, read once
    big = x.compute() if make_local is None else None
    x = None
    big = make_local() if big is None else big
    op(big[:chunk])
    t_local = min(_timed(lambda: op(big)) for _ in range(3))
    big = None
    gc.collect()
    lines = [_line("pyasc", labels[0], t_pyasc, nbytes, t_pyasc),
             _line("dask", labels[1], t_dask, nbytes, t_pyasc),
             _line("local", f"{op.__name__} on one in-memory array", t_local, nbytes, t_pyasc)]
    return lines, t_dask / t_pyasc, t_local / t_pyasc


def bench_var(client: Any, gib: float) -> Tuple[List[str], float, float]:
    """Column variances of ``gib`` GiB of float32 (256 columns, 64 MiB row chunks): pyasc's tree vs Dask's var."""
    import dask.array as da

    cols = 256
    rows = int(gib * (1 << 30)) // 4 // cols
    chunk = min(rows, (64 << 20) // 4 // cols)

    def make_x() -> Any:
        x = da.random.default_rng(7).standard_normal((rows, cols), dtype=np.float32, chunks=(chunk, cols))
        return client.persist(x + np.float32(1e3))

    return _column_moment(client, make_x, chunk, col_var, np.var, lambda x: x.var(axis=0, ddof=1),
                          lambda: np.random.default_rng(7).standard_normal((rows, cols), dtype=np.float32),
                          ("chunk moments merged in the tree (Dask)", "dask.array var (NumPy per chunk)"))


def bench_nanvar(client: Any, gib: float) -> Tuple[List[str], float, float]:
    """Column ``nanvar`` of ``gib`` GiB of float32 with 10% NaN (256 columns, 64 MiB row chunks) vs Dask's nanvar."""
    import dask.array as da

    cols = 256
    rows = int(gib * (1 << 30)) // 4 // cols
    chunk = min(rows, (64 << 20) // 4 // cols)

    def make_x() -> Any:
        rng = da.random.default_rng(9)
        values = rng.standard_normal((rows, cols), dtype=np.float32, chunks=(chunk, cols)) + np.float32(1e3)
        nan = rng.random((rows, cols), chunks=(chunk, cols)) < 0.1
        return client.persist(da.where(nan, np.float32(np.nan), values))

    return _column_moment(client, make_x, chunk, col_nanvar, np.nanvar, lambda x: da.nanvar(x, axis=0, ddof=1),
                          None, ("chunk counts and moments in the tree (Dask)", "dask.array nanvar (NumPy per chunk)"))


def bench_jacobi(client: Any, side: int, steps: int) -> Tuple[List[str], float, float]:
    """Time ``steps`` Jacobi steps on ``side``^2 float32 in 4x4 blocks: pyasc stencil vs NumPy map_overlap."""
    import dask.array as da
    from distributed import wait

    block = side // 4
    u = client.persist(da.random.default_rng(6).random((side, side), dtype=np.float32, chunks=block))
    wait(u)
    per = min(steps, max(1, block // 8))  # steps per halo exchange (depth = steps, the halo is 1)

    def numpy_peer(v: Any = u) -> Any:
        for done in range(0, steps, per):
            k = min(per, steps - done)
            v = v.map_overlap(numpy_steps, depth=k, boundary="none", steps=k, dtype=np.float32)
        return v

    from ..dask._stencil import call

    def pyasc_run(v: Any = u, k: int = steps) -> Any:
        return call(jacobi, (v,), {}, k, None, steps_per_exchange=per)

    probe = u[: block // 2, : block // 2].rechunk(block // 8)
    want = numpy_steps(probe.compute(), steps)
    for peer in (pyasc_run, numpy_peer):
        np.testing.assert_allclose(peer(probe).compute(), want, rtol=1e-4, atol=1e-5)
    t_pyasc = _run_on_cluster(client, pyasc_run, 1)
    t_numpy = _run_on_cluster(client, numpy_peer, 1, warm=False)
    u = None
    grid = np.random.default_rng(6).random((side, side), dtype=np.float32)
    t_local = min(_timed(lambda: jacobi(grid, iterations=steps)) for _ in range(2))
    grid = None
    gc.collect()
    nbytes = side * side * 4 * 2 * steps  # a step reads and writes the grid
    lines = [_line("pyasc", f"stencil, {per} steps per halo exchange", t_pyasc, nbytes, t_pyasc),
             _line("numpy", f"map_overlap of NumPy slicing, depth {per}", t_numpy, nbytes, t_pyasc),
             _line("local", f"stencil iterations={steps} on one array", t_local, nbytes, t_pyasc)]
    return lines, t_numpy / t_pyasc, t_local / t_pyasc


def run(quick: bool = False) -> int:
    """Start a two-worker LocalCluster on 127.0.0.1 and run the Dask entries; returns 0."""
    from distributed import Client, LocalCluster

    gib = 0.25 if quick else float(os.environ.get("PYASC_BENCH_DASK_GIB", "4"))
    side = 2048 if quick else int(os.environ.get("PYASC_BENCH_DASK_GRID", "16384"))
    steps = 100
    # One pyasc thread per worker process: two workers use the two cores as one process does.
    cores = os.cpu_count() or 2
    env = {"PYASC_NUM_THREADS": str(max(1, cores // 2)), "OMP_NUM_THREADS": "1"}
    summary = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1", env=env) as cluster, Client(cluster) as client:
        print(f"\npyasc bench --dask: LocalCluster, 2 worker processes x 1 thread, {cores} cores")
        lines, vs_scipy, frac = bench_gelu(client, gib)
        print(f"\ndask_gelu: exact GELU over {gib:g} GiB float32 in 64 MiB chunks (GB/s counts bytes read + written)")
        print("\n".join(lines))
        summary.append(f"dask_gelu: {vs_scipy:.2f}x NumPy+SciPy per chunk (target >= 5x); cluster at "
                       f"{frac:.0%} of one-process pyasc speed")
        lines, vs_dask, frac = bench_var(client, gib)
        print(f"\ndask_var: column variances (ddof=1) of {gib:g} GiB float32, 256 columns in 64 MiB row chunks")
        print("\n".join(lines))
        summary.append(f"dask_var: {vs_dask:.2f}x dask.array's var; cluster at {frac:.0%} of one-process pyasc speed")
        nan_gib = min(gib, 1.0)
        lines, vs_dask, frac = bench_nanvar(client, nan_gib)
        print(f"\ndask_nanvar: column nanvar (ddof=1) of {nan_gib:g} GiB float32 with 10% NaN, 256 columns in 64 MiB "
              "row chunks")
        print("\n".join(lines))
        summary.append(f"dask_nanvar: {vs_dask:.2f}x dask.array's nanvar; cluster at {frac:.0%} of one-process pyasc "
                       "speed")
        lines, vs_numpy, frac = bench_jacobi(client, side, steps)
        print(f"\ndask_jacobi: {steps} Jacobi steps on {side}x{side} float32 in 4x4 blocks")
        print("\n".join(lines))
        summary.append(f"dask_jacobi: {vs_numpy:.2f}x NumPy map_overlap; cluster at {frac:.0%} of one-process "
                       "pyasc speed")
    print("\nsummary")
    for s in summary:
        print(f"  {s}")
    return 0
