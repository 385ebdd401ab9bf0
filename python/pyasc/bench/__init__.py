"""``pyasc bench``: pyasc against the peers installed in the same environment, as ratios.

The peers are NumPy, numexpr, Numba and JAX (``pip install .[bench]``), measured in the same run.

Each line gives the best time over several rounds; ``ratio`` is the peer's time divided by
pyasc's (above 1: pyasc is faster). ``np.copyto`` of the same bytes stands for the machine's
memory-bandwidth limit of an elementwise kernel.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_time, best_times_alternating, fmt_time
from ..tools._timing import peer as _peer

Row = Tuple[str, str, float]


def _gelu_op():
    @pyasc.operator
    def custom_gelu(x):
        return x * 0.5 * (1.0 + pyasc.erf(x / 1.41421))

    return custom_gelu


def bench_gelu(n: int, repeat: int) -> List[Row]:
    """GELU with the exact erf on ``n`` float32 values, and ``np.copyto`` of the same bytes."""
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    rows: List[Row] = []
    op = _gelu_op()
    rows.append(("pyasc", "operator", best_time(lambda: op(x), repeat)))
    dst = np.empty_like(x)
    rows.append(("limit", "np.copyto same bytes", best_time(lambda: np.copyto(dst, x), repeat)))
    special = _peer("scipy.special")
    if special is not None:
        rows.append(("numpy", "numpy + scipy.special.erf", best_time(
            lambda: x * np.float32(0.5) * (np.float32(1.0) + special.erf(x / np.float32(1.41421))), repeat)))
    numba = _peer("numba")
    if numba is not None:
        @numba.vectorize(["float32(float32)"], target="parallel")
        def nb_gelu(v):
            return v * np.float32(0.5) * (np.float32(1.0) + math.erf(v / np.float32(1.41421)))

        rows.append(("numba", "vectorize(target='parallel')", best_time(lambda: nb_gelu(x), repeat)))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp
        from jax.scipy.special import erf as jerf

        f = jax.jit(lambda v: v * 0.5 * (1.0 + jerf(v / 1.41421)))
        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit", best_time(lambda: f(xj).block_until_ready(), repeat)))
    return rows


def bench_normalize(shape: Tuple[int, int], repeat: int) -> List[Row]:
    """``(X - b) * s`` with a broadcast row ``b`` and scalar ``s``."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    s = np.float32(1.5)

    @pyasc.operator
    def normalize(x, scale, bias):
        return (x - bias) * scale

    rows: List[Row] = [("pyasc", "operator", best_time(lambda: normalize(x, 1.5, b), repeat)),
                       ("numpy", "(x - b) * s", best_time(lambda: (x - b) * s, repeat))]
    ne = _peer("numexpr")
    if ne is not None:
        env = {"x": x, "b": b, "s": s}
        rows.append(("numexpr", "evaluate", best_time(lambda: ne.evaluate("(x - b) * s", local_dict=env), repeat)))
    numba = _peer("numba")
    if numba is not None:
        @numba.njit(parallel=True, fastmath=False)
        def nb_norm(x, s, b):
            out = np.empty_like(x)
            for i in numba.prange(x.shape[0]):
                for j in range(x.shape[1]):
                    out[i, j] = (x[i, j] - b[j]) * s
            return out

        rows.append(("numba", "njit(parallel=True)", best_time(lambda: nb_norm(x, s, b), repeat)))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda x, s, b: (x - b) * s)
        xj, bj = jnp.asarray(x), jnp.asarray(b)
        rows.append(("jax", "jax.jit", best_time(lambda: f(xj, 1.5, bj).block_until_ready(), repeat)))
    return rows


def _fresh(i: int) -> Callable[[Any], Any]:
    # A new function object each time, so no peer can reuse an earlier compilation.
    ns: Dict[str, Any] = {}
    exec(f"def f(x):\n    return (x * {i + 2}.0 + 1.0) * (x - {i}.5)\n", ns)  # noqa: S102
    return ns["f"]


def bench_first_call(rounds: int) -> List[Row]:
    """Trace + compile + run of a new small operator (1000 float32)."""
    x = np.linspace(-1, 1, 1000, dtype=np.float32)

    def first(make: Callable[[Callable[[Any], Any]], Callable[[], Any]]) -> float:
        times = []
        for i in range(rounds):
            fn = make(_fresh(i))
            times.append(best_time(fn, repeat=1, warmup=0))
        return sorted(times)[len(times) // 2]

    rows: List[Row] = [("pyasc", "operator", first(lambda f: lambda: pyasc.operator(f)(x)))]
    numba = _peer("numba")
    if numba is not None:
        rows.append(("numba", "njit", first(lambda f: lambda: numba.njit(f)(x))))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit", first(lambda f: lambda: jax.jit(f)(xj).block_until_ready())))
    return rows


def bench_profiler(n: int, repeat: int) -> List[Row]:
    """GELU on ``n`` float32 values with no profile active and inside ``pyasc.profile()``.

    Rounds alternate between the two (each round one call, after a warm-up of both), so drift
    of the machine's speed hits both alike; each row is the best round.
    """
    import time

    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    op = _gelu_op()
    best_time(lambda: op(x), 1)
    off, on = float("inf"), float("inf")
    for _ in range(3 * repeat):
        t = time.perf_counter()
        op(x)
        off = min(off, time.perf_counter() - t)
        with pyasc.profile():
            t = time.perf_counter()
            op(x)
            on = min(on, time.perf_counter() - t)
    return [("pyasc", "no profile active", off), ("profiled", "inside pyasc.profile()", on)]


def bench_cached_call(repeat: int) -> List[Row]:
    """Time a compiled operator called again on 8-element float32 arrays."""
    x = np.arange(8, dtype=np.float32)
    op = pyasc.operator(lambda v: v * 2.0 + 1.0)
    n = 20000
    two, one = np.float32(2), np.float32(1)
    rows: List[Row] = [("pyasc", "operator", best_time(lambda: op(x), repeat, number=n)),
                       ("numpy", "x * 2 + 1", best_time(lambda: x * two + one, repeat, number=n))]
    ne = _peer("numexpr")
    if ne is not None:
        env = {"x": x}
        t = best_time(lambda: ne.evaluate("x * 2 + 1", local_dict=env), repeat, number=n)
        rows.append(("numexpr", "evaluate", t))
    numba = _peer("numba")
    if numba is not None:
        nb = numba.njit(lambda v: v * np.float32(2) + np.float32(1))
        rows.append(("numba", "njit", best_time(lambda: nb(x), repeat, number=n)))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda v: v * 2.0 + 1.0)
        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit", best_time(lambda: f(xj).block_until_ready(), repeat, number=n // 4)))
    return rows


def _np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def bench_softmax(shape: Tuple[int, int], repeat: int) -> List[Row]:
    """Row softmax of a float32 matrix."""
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    op = pyasc.operator(lambda v: pyasc.softmax(v, -1))
    rows: List[Row] = [("pyasc", "operator", best_time(lambda: op(x), repeat)),
                       ("numpy", "exp(x - max) / sum", best_time(lambda: _np_softmax(x), repeat))]
    numba = _peer("numba")
    if numba is not None:
        @numba.njit(parallel=True)
        def nb_softmax(v):
            out = np.empty_like(v)
            for i in numba.prange(v.shape[0]):
                m = v[i].max()
                e = np.exp(v[i] - m)
                out[i] = e / e.sum()
            return out

        rows.append(("numba", "njit(parallel=True)", best_time(lambda: nb_softmax(x), repeat)))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda v: jax.nn.softmax(v, axis=-1))
        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit(jax.nn.softmax)", best_time(lambda: f(xj).block_until_ready(), repeat)))
    return rows


def bench_layer_norm(shape: Tuple[int, int], repeat: int) -> List[Row]:
    """Layer norm over the last axis with weight and bias."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[1]).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    op = pyasc.operator(lambda v, w, b: pyasc.layer_norm(v, w, b))

    def np_ln() -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        d = x - mu
        return d / np.sqrt((d * d).mean(-1, keepdims=True) + np.float32(1e-5)) * w + b

    jax = _peer("jax")
    if jax is None:
        mine = best_time(lambda: op(x, w, b), repeat)
        return [("pyasc", "operator", mine), ("numpy", "mean/var/normalise", best_time(np_ln, repeat))]
    import jax.numpy as jnp

    def jln(v, w, b):
        mu = v.mean(-1, keepdims=True)
        d = v - mu
        return d / jnp.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + b

    f = jax.jit(jln)
    args = [jnp.asarray(a) for a in (x, w, b)]
    # The two run within 1.5x of each other and the machine drifts by more between entries:
    # their calls alternate.
    mine, theirs = best_times_alternating([lambda: op(x, w, b), lambda: f(*args).block_until_ready()], repeat)
    return [("pyasc", "operator", mine), ("numpy", "mean/var/normalise", best_time(np_ln, repeat)),
            ("jax", "jax.jit, alternating", theirs)]


def bench_column_sum(shape: Tuple[int, int], repeat: int, var: bool = False, extreme: bool = False) -> List[Row]:
    """``x.sum(axis=0)`` (``np.var(x, axis=0)``, or ``x.max(axis=0)``) over a C-contiguous float32 matrix."""
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    if extreme:
        op = pyasc.operator(lambda v: v.max(axis=0))
        return [("pyasc", "operator", best_time(lambda: op(x), repeat)),
                ("numpy", "x.max(axis=0)", best_time(lambda: x.max(axis=0), repeat))]
    if var:
        op = pyasc.operator(lambda v: np.var(v, axis=0))
        return [("pyasc", "operator", best_time(lambda: op(x), repeat)),
                ("numpy", "np.var(x, axis=0)", best_time(lambda: np.var(x, axis=0), repeat))]
    op = pyasc.operator(lambda v: v.sum(axis=0))
    return [("pyasc", "operator", best_time(lambda: op(x), repeat)),
            ("numpy", "x.sum(axis=0)", best_time(lambda: x.sum(axis=0), repeat))]


def bench_long_row(n: int, repeat: int) -> List[Row]:
    """``exp(x).sum()`` over one row of ``n`` float32 (a row far longer than a tile)."""
    x = np.random.default_rng(6).standard_normal((1, n)).astype(np.float32)
    op = pyasc.operator(lambda v: np.exp(v).sum(axis=-1))
    rows: List[Row] = [("pyasc", "operator", best_time(lambda: op(x), repeat)),
                       ("numpy", "np.exp(x).sum(axis=-1)", best_time(lambda: np.exp(x).sum(axis=-1), repeat))]
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda v: jnp.exp(v).sum(axis=-1))
        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit", best_time(lambda: f(xj).block_until_ready(), repeat)))
    return rows


def bench_cumsum(shape: Tuple[int, int], axis: int, repeat: int) -> List[Row]:
    """``np.cumsum`` of a float32 matrix along rows (``axis=-1``) or down columns (``axis=0``)."""
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    op = pyasc.operator(lambda v: np.cumsum(v, axis=axis))
    rows: List[Row] = [("pyasc", "operator", best_time(lambda: op(x), repeat)),
                       ("numpy", f"np.cumsum(x, axis={axis})", best_time(lambda: np.cumsum(x, axis=axis), repeat))]
    numba = _peer("numba")
    if numba is not None:
        if axis == 0:
            @numba.njit(parallel=True)
            def nb_cumsum(v):
                out = np.empty_like(v)
                for j in numba.prange(v.shape[1]):
                    acc = np.float32(0)
                    for i in range(v.shape[0]):
                        acc += v[i, j]
                        out[i, j] = acc
                return out
        else:
            @numba.njit(parallel=True)
            def nb_cumsum(v):
                out = np.empty_like(v)
                for i in numba.prange(v.shape[0]):
                    acc = np.float32(0)
                    for j in range(v.shape[1]):
                        acc += v[i, j]
                        out[i, j] = acc
                return out

        rows.append(("numba", "njit(parallel=True)", best_time(lambda: nb_cumsum(x), repeat)))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda v: jnp.cumsum(v, axis=axis))
        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit(jnp.cumsum)", best_time(lambda: f(xj).block_until_ready(), repeat)))
    return rows


def bench_cumsum_fused(shape: Tuple[int, int], repeat: int) -> List[Row]:
    """``np.cumsum(x * 2 + 1, -1) / n`` of a float32 matrix: a row scan with its producer and consumer."""
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    n = shape[1]

    def np_fused() -> np.ndarray:
        return np.cumsum(x * 2 + 1, axis=-1) / n

    op = pyasc.operator(lambda v: np.cumsum(v * 2 + 1, axis=-1) / n)
    rows: List[Row] = [("pyasc", "operator", best_time(lambda: op(x), repeat)),
                       ("numpy", "np.cumsum(x * 2 + 1, -1) / n", best_time(np_fused, repeat))]
    numba = _peer("numba")
    if numba is not None:
        @numba.njit(parallel=True)
        def nb_fused(v):
            out = np.empty_like(v)
            for i in numba.prange(v.shape[0]):
                acc = np.float32(0)
                for j in range(v.shape[1]):
                    acc += v[i, j] * np.float32(2) + np.float32(1)
                    out[i, j] = acc / np.float32(n)
            return out

        rows.append(("numba", "njit(parallel=True)", best_time(lambda: nb_fused(x), repeat)))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda v: jnp.cumsum(v * 2 + 1, axis=-1) / n)
        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit", best_time(lambda: f(xj).block_until_ready(), repeat)))
    return rows


def bench_matmul(n: int, repeat: int) -> List[Row]:
    """Square float32 matrix product."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    op = pyasc.operator(lambda x, y: x @ y)
    return [("pyasc", "operator (a @ b)", best_time(lambda: op(a, b), repeat)),
            ("numpy", "a @ b (OpenBLAS)", best_time(lambda: a @ b, repeat))]


def bench_matmul_bf16(n: int, repeat: int) -> List[Row]:
    """Square bfloat16 matrix product with float32 sums, against float32 and bfloat16 peers."""
    import ml_dtypes

    rng = np.random.default_rng(5)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    op = pyasc.operator(lambda x, y: x @ y)
    op32 = pyasc.operator(lambda x, y: (x @ y).astype(np.float32))
    rows: List[Row] = [("pyasc", "operator (a @ b) -> bfloat16", best_time(lambda: op(a, b), repeat)),
                       ("pyasc32", "(a @ b).astype(float32)", best_time(lambda: op32(a, b), repeat)),
                       ("numpy", "float32 a @ b (OpenBLAS)", best_time(lambda: a32 @ b32, repeat))]
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda x, y: jnp.matmul(x, y, preferred_element_type=jnp.float32))
        aj, bj = jnp.asarray(a), jnp.asarray(b)
        rows.append(("jax", "jit matmul, bfloat16 -> float32", best_time(lambda: f(aj, bj).block_until_ready(),
                                                                         repeat)))
    return rows


def bench_einsum(subscripts: str, a_shape: Tuple[int, ...], b_shape: Tuple[int, ...], repeat: int) -> List[Row]:
    """Time a GEMM-shaped ``einsum`` in float32 against pyasc's matmul and the peers' einsum."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    op = pyasc.operator(lambda x, y: np.einsum(subscripts, x, y))
    mm = pyasc.operator(lambda x, y: x @ y)
    rows: List[Row] = [("pyasc", f"np.einsum({subscripts!r})", best_time(lambda: op(a, b), repeat)),
                       ("matmul", "pyasc operator (a @ b)", best_time(lambda: mm(a, b), repeat)),
                       ("numpy", "np.einsum(optimize=True)",
                        best_time(lambda: np.einsum(subscripts, a, b, optimize=True), repeat))]
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda x, y: jnp.einsum(subscripts, x, y))
        aj, bj = jnp.asarray(a), jnp.asarray(b)
        rows.append(("jax", "jax.jit(jnp.einsum)", best_time(lambda: f(aj, bj).block_until_ready(), repeat)))
    return rows


def bench_dynamic(count: int, with_jax: bool) -> List[Row]:
    """Call a dynamic-shape operator on ``count`` new shapes, compile included."""
    rng = np.random.default_rng(6)
    args = [(rng.standard_normal((n, 64)).astype(np.float32), rng.standard_normal(64).astype(np.float32))
            for n in range(2, count + 2)]

    def fresh() -> Any:
        return pyasc.operator(lambda x, b: pyasc.softmax(x * 2.0 + b), dynamic_shape=True)

    def run_pyasc() -> None:
        op = fresh()
        for x, b in args:
            op(x, b)

    rows: List[Row] = [("pyasc", f"{count} shapes, dynamic_shape=True", best_time(run_pyasc, 3, warmup=0))]
    jax = _peer("jax") if with_jax else None
    if jax is not None:
        import jax.numpy as jnp

        def run_jax() -> None:
            f = jax.jit(lambda x, b: jax.nn.softmax(x * 2.0 + b, axis=-1))
            for x, b in args:
                f(jnp.asarray(x), jnp.asarray(b)).block_until_ready()

        rows.append(("jax", f"{count} shapes, jax.jit (retraces)", best_time(run_jax, 1, warmup=0)))
    return rows


def bench_launch(repeat: int) -> List[Row]:
    """Time to launch an operator on DeviceArray inputs (queued on a stream, not waited for)."""
    x = pyasc.to_device(np.arange(8, dtype=np.float32))
    op = pyasc.operator(lambda v: v * 2.0 + 1.0)
    op(x).numpy()
    n = 5000

    def burst() -> None:
        for _ in range(n):
            op(x)
        # Keep the queue short so every round measures launches, not a backlog.
        pyasc.synchronize()

    rows: List[Row] = [("pyasc", "operator(DeviceArray), async", best_time(burst, repeat) / n)]
    xn = np.arange(8, dtype=np.float32)
    rows.append(("sync", "operator(ndarray), same op", best_time(lambda: op(xn), repeat, number=n)))
    return rows


def bench_copy_from(n_bytes: int, repeat: int) -> List[Row]:
    """``DeviceArray.copy_from`` of a host array against ``np.copyto`` of the same bytes."""
    src = np.random.default_rng(2).standard_normal(n_bytes // 8)
    dev = pyasc.DeviceArray(src.shape, dtype=np.float64)
    dst = np.empty_like(src)
    return [("pyasc", "DeviceArray.copy_from", best_time(lambda: dev.copy_from(src), repeat)),
            ("limit", "np.copyto same bytes", best_time(lambda: np.copyto(dst, src), repeat))]


def _report(title: str, rows: List[Row]) -> Dict[str, float]:
    base = rows[0][2]
    print(f"\n{title}")
    for who, how, t in rows:
        ratio = "" if who == "pyasc" else f"{t / base:8.2f}x"
        print(f"  {who:<8} {how:<30} {fmt_time(t):>10} {ratio}")
    return {who: t for who, t in ((r[0], r[2]) for r in rows)}


def _run_attention(want: set, quick: bool, summary: List[str]) -> None:
    """Run the attention entries: fused against the unfused formula, long, causal, memory."""
    from .attention import bench_attention, bench_causal, bytes_moved, peak_pool_bytes

    repeat = 3 if quick else 7
    flops = lambda h, n, d: 4.0 * h * n * n * d  # noqa: E731 - two products of 2*n*n*d each
    if "attention" in want:
        h, n, d = (2, 256, 64) if quick else (8, 1024, 64)
        t = _report(f"attention softmax(q@k.T/sqrt(d))@v: {h} heads x {n} x {d} float32",
                    bench_attention(h, n, d, repeat))
        peers = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("pattern", "numpy", "jax") if p in t)
        gf = flops(h, n, d) / t["pyasc"] / 1e9
        summary.append(f"attention: {fmt_time(t['pyasc'])} ({gf:.0f} GFLOP/s), {peers} "
                       "(target <= 9 ms, jax.jit ~19 ms)")
    if "attention_long" in want:
        h, n, d = (1, 1024, 64) if quick else (1, 4096, 64)
        t = _report(f"attention: {h} head x {n} x {d} float32", bench_attention(h, n, d, repeat))
        peers = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numpy", "jax") if p in t)
        gf = flops(h, n, d) / t["pyasc"] / 1e9
        summary.append(f"attention_long: {fmt_time(t['pyasc'])} ({gf:.0f} GFLOP/s), {peers} (target <= 20 ms)")
        n = 4096 if quick else 16384
        base, peak = peak_pool_bytes(n, 64)
        fused, unfused = bytes_moved(1, n, 64)
        print(f"\nattention memory, 1 head x {n} x 64 float32 (fresh process, inputs on the device)")
        print(f"  pool peak bytes in use: {peak / 2**20:.1f} MiB ({base / 2**20:.1f} MiB of it the inputs)")
        print(f"  bytes moved (model): fused {fused / 2**20:.0f} MiB, unfused {unfused / 2**20:.0f} MiB")
        summary.append(f"attention_long: pool peak {peak / 2**20:.1f} MiB at 1x{n}x64 (target < 64 MiB); "
                       f"bytes moved {fused / 2**20:.0f} MiB fused vs {unfused / 2**20:.0f} MiB unfused")
    if "attention_causal" in want:
        h, n, d = (2, 256, 64) if quick else (8, 1024, 64)
        t = _report(f"causal attention: {h} heads x {n} x {d} float32", bench_causal(h, n, d, repeat))
        summary.append(f"attention_causal: {t['pyasc'] / t['full']:.2f}x the time of full attention (target <= 0.6x)")


def run(quick: bool = False, only: Optional[List[str]] = None) -> int:
    """Run the benchmarks; prints a table per benchmark and the targets. Returns 0."""
    info = pyasc.device_info("cpu")
    print(f"pyasc {pyasc.__version__} bench on {info['name']}; ratio = peer time / pyasc time")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"  note: {var}={os.environ[var]} is set (it only matters for matmul peers)")
    from ..cli import BENCHMARKS

    want = set(only or BENCHMARKS)
    repeat = 3 if quick else 7
    summary: List[str] = []
    if "gelu" in want:
        n = 1 << 20 if quick else 1 << 24
        t = _report(f"gelu: {n:,} float32", bench_gelu(n, repeat))
        gb = 2 * 4 * n / t["pyasc"] / 1e9
        summary.append(f"gelu: {gb:.1f} GB/s; {t['pyasc'] / t['limit']:.2f}x the time of np.copyto (target <= 1.5x)")
        if "jax" in t:
            summary.append(f"gelu: {t['jax'] / t['pyasc']:.1f}x faster than jax.jit (target >= 3x)")
    if "profiler" in want:
        n = 1 << 20 if quick else 1 << 24
        t = _report(f"profiler overhead: gelu on {n:,} float32", bench_profiler(n, repeat))
        summary.append(f"profiler: {t['profiled'] / t['pyasc']:.3f}x the time with a profile active (target <= 1.03x)")
    if "normalize" in want:
        shape = (512, 1024) if quick else (4096, 1024)
        t = _report(f"normalize (X - b) * s: {shape[0]}x{shape[1]} float32", bench_normalize(shape, repeat))
        if "jax" in t:
            summary.append(f"normalize: {t['jax'] / t['pyasc']:.2f}x jax.jit's speed (target >= 1x)")
    if "first_call" in want:
        t = _report("first call of a new operator (trace + compile + run, 1000 float32)",
                    bench_first_call(3 if quick else 5))
        summary.append(f"first call: {fmt_time(t['pyasc'])} (target <= 2 ms)")
    if "cached_call" in want:
        t = _report("cached call on 8 float32", bench_cached_call(repeat))
        summary.append(f"cached call: {fmt_time(t['pyasc'])} (target <= 3 us)")
    if "launch" in want:
        t = _report("launch of an operator on DeviceArray inputs (8 float32)", bench_launch(repeat))
        summary.append(f"launch on DeviceArrays: {fmt_time(t['pyasc'])} (target <= 5 us)")
    if "copy_from" in want:
        n = 8 << 20 if quick else 64 << 20
        t = _report(f"copy_from of {n >> 20} MiB", bench_copy_from(n, repeat))
        summary.append(f"copy_from: {t['pyasc'] / t['limit']:.2f}x the time of np.copyto (target <= 1.3x)")
    if "softmax" in want:
        shape = (512, 1024) if quick else (4096, 1024)
        t = _report(f"softmax over rows: {shape[0]}x{shape[1]} float32", bench_softmax(shape, repeat))
        peers = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numpy", "numba", "jax") if p in t)
        summary.append(f"softmax: {peers} (targets: >= 3x numpy, > 1x numba and jax)")
    if "layer_norm" in want:
        shape = (512, 1024) if quick else (4096, 1024)
        t = _report(f"layer_norm: {shape[0]}x{shape[1]} float32", bench_layer_norm(shape, repeat))
        summary.append("layer_norm: " + ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numpy", "jax") if p in t))
    if "column_sum" in want:
        shape = (1024, 1024) if quick else (4096, 4096)
        t = _report(f"column_sum: x.sum(axis=0) over {shape[0]}x{shape[1]} float32", bench_column_sum(shape, repeat))
        gbs = shape[0] * shape[1] * 4 / t["pyasc"] / 1e9
        summary.append(f"column_sum: {t['numpy'] / t['pyasc']:.2f}x numpy, {gbs:.1f} GB/s")
    if "column_var" in want:
        shape = (1024, 1024) if quick else (4096, 4096)
        t = _report(f"column_var: np.var(x, axis=0) over {shape[0]}x{shape[1]} float32",
                    bench_column_sum(shape, repeat, var=True))
        summary.append(f"column_var: {t['numpy'] / t['pyasc']:.2f}x numpy")
    if "column_max" in want:
        shape = (1024, 1024) if quick else (4096, 4096)
        t = _report(f"column_max: x.max(axis=0) over {shape[0]}x{shape[1]} float32",
                    bench_column_sum(shape, repeat, extreme=True))
        summary.append(f"column_max: {t['numpy'] / t['pyasc']:.2f}x numpy")
    if "matmul" in want:
        n = 512 if quick else 2048
        t = _report(f"matmul {n}x{n} float32", bench_matmul(n, 3 if quick else 5))
        gf = 2 * n ** 3 / t["pyasc"] / 1e9
        summary.append(f"matmul: {t['numpy'] / t['pyasc']:.2f}x numpy's speed, {gf:.0f} GFLOP/s (target >= 0.9x)")
    if "matmul_large" in want:
        # Large enough to run in cancellable pieces (a Ctrl-C check between them).
        n = 1024 if quick else 4096
        t = _report(f"matmul {n}x{n} float32 (in pieces)", bench_matmul(n, 2 if quick else 3))
        gf = 2 * n ** 3 / t["pyasc"] / 1e9
        summary.append(f"matmul_large: {t['numpy'] / t['pyasc']:.2f}x numpy's speed, {gf:.0f} GFLOP/s")
    if "matmul_bf16" in want:
        n = 512 if quick else 2048
        t = _report(f"matmul {n}x{n} bfloat16, float32 sums", bench_matmul_bf16(n, 3 if quick else 7))
        gf = {w: 2 * n ** 3 / t[w] / 1e9 for w in t}
        summary.append(f"matmul_bf16: {gf['pyasc']:.0f} GFLOP/s ({gf['pyasc32']:.0f} with a float32 result), "
                       + ", ".join(f"{gf['pyasc'] / gf[p]:.2f}x {p}" for p in ("numpy", "jax") if p in t)
                       + " (target >= 1.6x numpy float32)")
    if "einsum" in want:
        n = 256 if quick else 1024
        t = _report(f"einsum 'ij,jk->ik' {n}x{n} float32", bench_einsum("ij,jk->ik", (n, n), (n, n), repeat))
        summary.append("einsum ij,jk->ik: " + ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in
                                                         ("matmul", "numpy", "jax") if p in t)
                       + " (target: matmul >= 0.9x)")
    if "einsum_batched" in want:
        b, n = (4, 128) if quick else (16, 384)
        t = _report(f"einsum 'bij,bjk->bik' {b}x{n}x{n} float32",
                    bench_einsum("bij,bjk->bik", (b, n, n), (b, n, n), repeat))
        summary.append("einsum bij,bjk->bik: " + ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in
                                                           ("matmul", "numpy", "jax") if p in t)
                       + " (target: matmul >= 0.9x)")
    if "conv2d" in want:
        from .conv import bench_conv2d

        shape = (1, 64, 64, 64) if quick else (1, 64, 256, 256)
        t = _report(f"conv2d 3x3, 64->64 channels, padding 1: {'x'.join(map(str, shape))} float32",
                    bench_conv2d(shape, 64, 3 if quick else 5))
        gf = 2 * 64 * 64 * 9 * shape[2] * shape[3] / t["pyasc"] / 1e9
        peers = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("jax", "torch") if p in t)
        summary.append(f"conv2d: {peers}, {gf:.0f} GFLOP/s (target >= 1x jax.jit)")
    if want & {"attention", "attention_long", "attention_causal"}:
        _run_attention(want, quick, summary)
    if "dynamic" in want:
        t = _report("dynamic shapes: 50 new shapes of one operator", bench_dynamic(50, not quick))
        summary.append(f"dynamic shapes: {fmt_time(t['pyasc'])} for 50 shapes (target <= 5 ms)")
    if "long_row" in want:
        n = 1 << 22 if quick else 1 << 24
        t = _report(f"long row: exp(x).sum() over one row of {n:,} float32", bench_long_row(n, repeat))
        summary.append("long row: " + ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numpy", "jax") if p in t))
    for key, axis, along in (("cumsum_rows", -1, "along rows"), ("cumsum_cols", 0, "down columns")):
        if key in want:
            shape = (512, 1024) if quick else (4096, 1024)
            t = _report(f"cumsum {along}: {shape[0]}x{shape[1]} float32", bench_cumsum(shape, axis, repeat))
            peers = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numpy", "numba", "jax") if p in t)
            summary.append(f"{key}: {peers} (target >= 2x numpy)")
    if "cumsum_fused" in want:
        shape = (512, 1024) if quick else (4096, 1024)
        t = _report(f"cumsum with producer and consumer, np.cumsum(x * 2 + 1, -1) / n: {shape[0]}x{shape[1]} float32",
                    bench_cumsum_fused(shape, repeat))
        peers = ", ".join(f"{t[p] / t['pyasc']:.2f}x {p}" for p in ("numpy", "numba", "jax") if p in t)
        summary.append(f"cumsum_fused: {peers} (target >= 2x numpy)")
    if "sort" in want or "topk" in want:
        from .sorting import bench_sort, bench_topk

        shape = (512, 1024) if quick else (4096, 1024)
        if "sort" in want:
            t = _report(f"sort rows: {shape[0]}x{shape[1]} float32", bench_sort(shape, repeat))
            summary.append(f"sort: {t['numpy'] / t['pyasc']:.2f}x np.sort's speed (target >= 1.5x)")
        if "topk" in want:
            t = _report(f"top-5 of each row: {shape[0]}x{shape[1]} float32", bench_topk(shape, 5, repeat))
            summary.append(f"topk: {t['numpy'] / t['pyasc']:.2f}x argpartition + sort (target >= 5x)")
    if want & {"half_elementwise", "bert_gelu", "matmul_policy", "sr_inference"}:
        from .precision import bench_bert_gelu, bench_half_elementwise, bench_matmul_policy, bench_sr_inference

        if "sr_inference" in want:
            size, layers = (64, 2) if quick else (256, 4)
            rows, psnr = bench_sr_inference(size, layers, 2 if quick else 5)
            t = _report(f"super-resolution {size}x{size} x2, {layers} 64-channel conv layers", rows)
            summary.append(f"sr_inference: mixed_bf16 {t['fp32'] / t['pyasc']:.2f}x the fp32 speed (target >= 1.4x), "
                           f"PSNR {psnr:.1f} dB against fp32 (target >= 40 dB)")

        if "matmul_policy" in want:
            n = 512 if quick else 2048
            rows, err = bench_matmul_policy(n, 3 if quick else 5)
            t = _report(f"matmul {n}x{n} float32 under precision policies", rows)
            summary.append(f"matmul_policy: force_bf16 {t['fp32'] / t['pyasc']:.2f}x the fp32 speed (target >= 1.4x), "
                           f"relative Frobenius error {err:.2e} (target < 5e-3)")

        if "half_elementwise" in want:
            n = 1 << 22 if quick else 1 << 25
            t = _report(f"16-bit elementwise (X - b) * s: {n:,} values", bench_half_elementwise(n, repeat))
            summary.append(f"half_elementwise: float16 {t['float32'] / t['pyasc']:.2f}x, bfloat16 "
                           f"{t['float32'] / t['bfloat16']:.2f}x the float32 speed (target >= 1.7x); "
                           f"{t['numpy'] / t['pyasc']:.1f}x NumPy float16")
        if "bert_gelu" in want:
            shape = (2, 128, 3072) if quick else (8, 128, 3072)
            t = _report(f"bert fast_gelu layer {shape}: precision='fp16' vs fp32", bench_bert_gelu(shape, repeat))
            summary.append(f"bert_gelu: fp16 layer {t['float32'] / t['pyasc']:.2f}x the fp32 layer's speed "
                           "(target >= 1.6x)")
    if want & {"graph_mode", "pipeline"}:
        from .graph import run_entries

        run_entries(want, quick, repeat, summary)
    if want & {"nms", "yolo_postprocess"}:
        from .detection import run_entries as run_detection

        run_detection(want, quick, repeat, summary)
    if want & {"stencil", "stencil_steps", "stencil_3d"}:
        from .stencil import run_entries as run_stencil

        run_stencil(want, quick, repeat, summary)
    if want & {"mandelbrot", "piecewise"}:
        from .vectorized import run_entries as run_vectorized

        run_vectorized(want, quick, repeat, summary)
    if "kernels" in want:
        from .kernels import run_entries as run_kernels

        run_kernels(want, quick, repeat, summary)
    if want & {"grad_transformer", "grad_attention", "grad_layer_norm", "grad_compile"}:
        from .grad import run_entries as run_grad

        run_grad(want, quick, repeat, summary)
    if want & {"onnx", "conv_layers"}:
        from .onnx_models import run_entries as run_onnx

        run_onnx(want, quick, repeat, summary)
    print("\nsummary")
    for line in summary:
        print(f"  {line}")
    return 0
